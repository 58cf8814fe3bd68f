// ElementsDataset and list_files.
#include "tern/data/list_files_dataset.h"

#include <glob.h>

#include <algorithm>

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class ElementsDataset : public Dataset {
 public:
  explicit ElementsDataset(std::vector<Element> elements) : elements_(std::move(elements)) {}
  std::string name() const override { return "Elements"; }
  int64_t cardinality() const override { return static_cast<int64_t>(elements_.size()); }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const std::vector<Element> elements_;
};

class ElementsIterator : public IteratorBase {
 public:
  ElementsIterator(const IteratorContext& parent, const ElementsDataset& ds)
      : IteratorBase(parent, ds.name()), ds_(ds) {}

 protected:
  std::optional<Element> get_next() override {
    if (index_ >= static_cast<int64_t>(ds_.elements_.size())) return std::nullopt;
    const int64_t i = index_++;
    Element e = ds_.elements_[static_cast<size_t>(i)];
    if (e.origin.empty()) e.origin = SourcePosition::element(i);
    return e;
  }
  void save_state(StateWriter& w) override { w.write_int("index", index_); }
  void restore_state(StateReader& r) override {
    const int64_t index = r.read_int("index");
    TERN_CHECK_ARG(index >= 0 && index <= static_cast<int64_t>(ds_.elements_.size()),
                   "iterator state: elements index ", index);
    index_ = index;
  }

 private:
  const ElementsDataset& ds_;
  int64_t index_ = 0;
};

std::unique_ptr<IteratorBase> ElementsDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<ElementsIterator>(parent, *this);
}

}  // namespace

DatasetPtr from_elements(std::vector<Element> elements) {
  return std::make_shared<ElementsDataset>(std::move(elements));
}

std::vector<std::string> glob_files(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& pattern : patterns) {
    glob_t g{};
    const int rc = glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
    if (rc != 0 && rc != GLOB_NOMATCH) {
      throw_error(ErrorCode::kUnavailable, "list_files: cannot read the directories of '", pattern,
                  "'");
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

DatasetPtr list_files(const std::vector<std::string>& patterns,
                      std::optional<uint64_t> shuffle_seed) {
  std::vector<std::string> files = glob_files(patterns);
  if (files.empty()) {
    std::string all;
    for (const std::string& p : patterns) all += (all.empty() ? "'" : ", '") + p + "'";
    throw_error(ErrorCode::kNotFound, "list_files: no files match ",
                all.empty() ? "(no patterns)" : all);
  }
  return file_names_dataset(files, shuffle_seed);
}

DatasetPtr file_names_dataset(const std::vector<std::string>& files,
                              std::optional<uint64_t> shuffle_seed) {
  std::vector<Element> elements;
  for (const std::string& f : files) {
    Element e{bytes_tensor(f)};
    e.origin = SourcePosition::whole_file(source_file_id(f));
    elements.push_back(std::move(e));
  }
  const int64_t n = static_cast<int64_t>(elements.size());
  DatasetPtr ds = from_elements(std::move(elements));
  return shuffle_seed && n > 0 ? ds->shuffle(n, *shuffle_seed) : ds;
}

}  // namespace tern::data
