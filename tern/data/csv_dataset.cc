// CsvDataset: typed CSV rows with defaults, resumable at (file, byte offset, line).
#include "tern/data/csv_dataset.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "tern/base/error.h"
#include "tern/base/strings.h"
#include "tern/data/csv_reader.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename T>
bool parse_number(std::string_view s, T* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

}  // namespace

Tensor parse_csv_scalar(std::string_view text, DType dtype, std::string_view where) {
  const std::string_view s = trim(text);
  Tensor t(dtype, Shape{});
  if (dtype == DType::kBool) {
    if (s == "1" || s == "true" || s == "True" || s == "TRUE") {
      t.set(0, 1);
    } else if (!(s == "0" || s == "false" || s == "False" || s == "FALSE")) {
      throw_error(ErrorCode::kInvalidArgument, where, ": '", printable(text), "' is not a bool");
    }
    return t;
  }
  if (is_floating(dtype)) {
    double v;
    if (!parse_number(s, &v)) {
      throw_error(ErrorCode::kInvalidArgument, where, ": '", printable(text), "' is not a number");
    }
    t.set(0, v);
    return t;
  }
  int64_t v;
  if (!parse_number(s, &v)) {
    throw_error(ErrorCode::kInvalidArgument, where, ": '", printable(text), "' is not an integer");
  }
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
        throw_error(ErrorCode::kInvalidArgument, where, ": ", v, " is out of range for ",
                    dtype_name(dtype));
      }
      *t.data<T>() = static_cast<T>(v);
    }
  });
  return t;
}

namespace {

class CsvDataset : public Dataset {
 public:
  CsvDataset(std::vector<std::string> files, CsvOptions options)
      : files_(std::move(files)), options_(std::move(options)) {
    TERN_CHECK_ARG(!options_.columns.empty(), "csv_dataset: no columns given");
    if (options_.select_columns.empty()) {
      for (size_t i = 0; i < options_.columns.size(); ++i) select_.push_back(static_cast<int>(i));
    } else {
      select_ = options_.select_columns;
    }
    for (int c : select_) {
      TERN_CHECK_ARG(c >= 0 && c < static_cast<int>(options_.columns.size()),
                     "csv_dataset: selected column ", c, " outside [0, ", options_.columns.size(),
                     ")");
    }
  }
  std::string name() const override { return "Csv"; }
  int64_t cardinality() const override { return files_.empty() ? 0 : kUnknownCardinality; }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  Element convert(const std::vector<CsvField>& row, const std::string& path, int64_t line) const {
    if (row.size() != options_.columns.size()) {
      throw_error(ErrorCode::kInvalidArgument, path, ":", line, ": expected ",
                  options_.columns.size(), " fields, found ", row.size());
    }
    Element out;
    for (int c : select_) {
      const CsvColumn& col = options_.columns[static_cast<size_t>(c)];
      const CsvField& f = row[static_cast<size_t>(c)];
      if (col.as_bytes) {
        out.push_back(bytes_tensor(f.text));
      } else if (f.text.empty() && !f.quoted) {
        if (!col.default_value) {
          throw_error(ErrorCode::kInvalidArgument, path, ":", line, ": column ", c,
                      " is empty and has no default");
        }
        out.push_back(Tensor::scalar(col.dtype, *col.default_value));
      } else {
        out.push_back(parse_csv_scalar(f.text, col.dtype, str_cat(path, ":", line, " column ", c)));
      }
    }
    return out;
  }

  const std::vector<std::string> files_;
  const CsvOptions options_;
  std::vector<int> select_;
};

class CsvIterator : public IteratorBase {
 public:
  CsvIterator(const IteratorContext& parent, const CsvDataset& ds)
      : IteratorBase(parent, ds.name()), ds_(ds) {}

 protected:
  std::optional<Element> get_next() override {
    while (file_index_ < static_cast<int64_t>(ds_.files_.size())) {
      if (!reader_) {
        open(file_index_);
        if (ds_.options_.header) reader_->next_row();
      }
      std::optional<std::vector<CsvField>> row = reader_->next_row();
      if (row) {
        Element e = ds_.convert(*row, reader_->path(), reader_->row_line());
        e.origin = SourcePosition::line(file_id_, reader_->row_line());
        return e;
      }
      reader_.reset();
      ++file_index_;
    }
    return std::nullopt;
  }

  void save_state(StateWriter& w) override {
    w.write_int("file_index", file_index_);
    w.write_int("offset", reader_ ? reader_->offset() : -1);
    w.write_int("line", reader_ ? reader_->line() : 1);
  }

  void restore_state(StateReader& r) override {
    const int64_t index = r.read_int("file_index");
    const int64_t offset = r.read_int("offset");
    const int64_t line = r.read_int("line");
    TERN_CHECK_ARG(index >= 0 && index <= static_cast<int64_t>(ds_.files_.size()),
                   "iterator state: csv file index ", index);
    file_index_ = index;
    reader_.reset();
    if (offset >= 0 && index < static_cast<int64_t>(ds_.files_.size())) {
      open(index);
      reader_->seek(offset, line);
    }
  }

 private:
  void open(int64_t index) {
    const std::string& path = ds_.files_[static_cast<size_t>(index)];
    reader_ = std::make_unique<CsvReader>(path, ds_.options_.delimiter, ds_.options_.compression,
                                          ds_.options_.max_row_bytes);
    file_id_ = source_file_id(path);
  }

  const CsvDataset& ds_;
  int64_t file_index_ = 0;
  std::unique_ptr<CsvReader> reader_;
  int32_t file_id_ = -1;
};

std::unique_ptr<IteratorBase> CsvDataset::make_stage_iterator(const IteratorContext& parent) const {
  return std::make_unique<CsvIterator>(parent, *this);
}

}  // namespace

DatasetPtr csv_dataset(std::vector<std::string> files, CsvOptions options) {
  return std::make_shared<CsvDataset>(std::move(files), std::move(options));
}

}  // namespace tern::data
