// GeneratorDataset: from_generator.
#include "tern/data/generator_dataset.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class GeneratorDataset : public Dataset {
 public:
  GeneratorDataset(std::function<Generator()> make, int64_t cardinality)
      : make_(std::move(make)), cardinality_(cardinality) {
    TERN_CHECK_ARG(make_ != nullptr, "from_generator: empty generator factory");
    TERN_CHECK_ARG(cardinality >= kUnknownCardinality, "from_generator: bad cardinality ",
                   cardinality);
  }
  std::string name() const override { return "Generator"; }
  int64_t cardinality() const override { return cardinality_; }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  Generator make_generator() const {
    Generator g = make_();
    TERN_CHECK_ARG(g != nullptr, "from_generator: the factory returned an empty generator");
    return g;
  }

 private:
  std::function<Generator()> make_;
  int64_t cardinality_;
};

class GeneratorIterator : public IteratorBase {
 public:
  GeneratorIterator(const IteratorContext& parent, const GeneratorDataset& ds)
      : IteratorBase(parent, ds.name()), ds_(ds) {}

 protected:
  std::optional<Element> get_next() override {
    if (done_) return std::nullopt;
    if (!gen_) gen_ = ds_.make_generator();
    std::optional<Element> e = gen_();
    if (!e) {
      done_ = true;
      return std::nullopt;
    }
    if (e->origin.empty()) e->origin = SourcePosition::element(produced_);
    ++produced_;
    return e;
  }
  void save_state(StateWriter& w) override {
    w.write_int("produced", produced_);
    w.write_int("done", done_ ? 1 : 0);
  }
  void restore_state(StateReader& r) override {
    const int64_t produced = r.read_int("produced");
    const bool done = r.read_int("done") != 0;
    TERN_CHECK_ARG(produced >= 0, "iterator state: generator produced count ", produced);
    gen_ = ds_.make_generator();
    for (int64_t i = 0; i < produced; ++i) {
      if (!gen_()) {
        throw_error(ErrorCode::kFailedPrecondition, "restore: the generator ended after ", i,
                    " elements but the saved iterator had produced ", produced,
                    " (is it deterministic?)");
      }
    }
    produced_ = produced;
    done_ = done;
  }

 private:
  const GeneratorDataset& ds_;
  Generator gen_;
  int64_t produced_ = 0;
  bool done_ = false;
};

std::unique_ptr<IteratorBase> GeneratorDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<GeneratorIterator>(parent, *this);
}

}  // namespace

DatasetPtr from_generator(std::function<Generator()> make_generator, int64_t cardinality) {
  return std::make_shared<GeneratorDataset>(std::move(make_generator), cardinality);
}

}  // namespace tern::data
