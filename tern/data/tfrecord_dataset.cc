// TFRecordDataset: sequential reading of TFRecord files with a resumable (file, offset) position.
#include "tern/data/tfrecord_dataset.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class TFRecordDataset : public Dataset {
 public:
  TFRecordDataset(std::vector<std::string> files, TFRecordOptions options)
      : files_(std::move(files)), options_(options) {
    TERN_CHECK_ARG(options.max_record_bytes >= 0, "tfrecord_dataset: negative max_record_bytes");
  }
  std::string name() const override { return "TFRecord"; }
  int64_t cardinality() const override { return files_.empty() ? 0 : kUnknownCardinality; }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const std::vector<std::string> files_;
  const TFRecordOptions options_;
};

class TFRecordIterator : public IteratorBase {
 public:
  TFRecordIterator(const IteratorContext& parent, const TFRecordDataset& ds)
      : IteratorBase(parent, ds.name()), ds_(ds) {}

 protected:
  std::optional<Element> get_next() override {
    while (file_index_ < static_cast<int64_t>(ds_.files_.size())) {
      if (!reader_) {
        reader_ = std::make_unique<TFRecordReader>(ds_.files_[static_cast<size_t>(file_index_)],
                                                   ds_.options_);
        reported_skips_ = 0;
      }
      std::optional<std::string> record = reader_->read();
      report_skips();
      if (record) return Element{bytes_tensor(*record)};
      reader_.reset();
      ++file_index_;
    }
    return std::nullopt;
  }

  void save_state(StateWriter& w) override {
    w.write_int("file_index", file_index_);
    w.write_int("offset", reader_ ? reader_->offset() : 0);
  }

  void restore_state(StateReader& r) override {
    const int64_t index = r.read_int("file_index");
    const int64_t offset = r.read_int("offset");
    TERN_CHECK_ARG(index >= 0 && index <= static_cast<int64_t>(ds_.files_.size()),
                   "iterator state: TFRecord file index ", index, " outside [0, ",
                   ds_.files_.size(), "]");
    file_index_ = index;
    reader_.reset();
    if (offset > 0 && index < static_cast<int64_t>(ds_.files_.size())) {
      reader_ =
          std::make_unique<TFRecordReader>(ds_.files_[static_cast<size_t>(index)], ds_.options_);
      reader_->seek(offset);
      reported_skips_ = 0;
    }
  }

 private:
  void report_skips() {
    const int64_t now = reader_->skipped_records();
    if (now > reported_skips_) counters().skipped.fetch_add(now - reported_skips_);
    reported_skips_ = now;
  }

  const TFRecordDataset& ds_;
  int64_t file_index_ = 0;
  std::unique_ptr<TFRecordReader> reader_;
  int64_t reported_skips_ = 0;
};

std::unique_ptr<IteratorBase> TFRecordDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<TFRecordIterator>(parent, *this);
}

}  // namespace

DatasetPtr tfrecord_dataset(std::vector<std::string> files, TFRecordOptions options) {
  return std::make_shared<TFRecordDataset>(std::move(files), options);
}

}  // namespace tern::data
