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
        open(file_index_);
        record_ = 0;
      }
      std::optional<std::string> record = reader_->read();
      report_skips();
      if (record) {
        Element e{bytes_tensor(*record)};
        e.origin = record_ >= 0 ? SourcePosition::record(file_id_, record_++)
                                : SourcePosition::whole_file(file_id_);
        return e;
      }
      reader_.reset();
      ++file_index_;
    }
    return std::nullopt;
  }

  void save_state(StateWriter& w) override {
    w.write_int("file_index", file_index_);
    w.write_int("offset", reader_ ? reader_->offset() : 0);
    w.write_int("record", record_);
  }

  void restore_state(StateReader& r) override {
    const int64_t index = r.read_int("file_index");
    const int64_t offset = r.read_int("offset");
    TERN_CHECK_ARG(index >= 0 && index <= static_cast<int64_t>(ds_.files_.size()),
                   "iterator state: TFRecord file index ", index, " outside [0, ",
                   ds_.files_.size(), "]");
    // The record index came later: a state without it names only the file for this one.
    const int64_t record = r.next_key_is("record") ? r.read_int("record") : -1;
    TERN_CHECK_ARG(record >= -1, "iterator state: TFRecord record index ", record);
    file_index_ = index;
    reader_.reset();
    if (offset > 0 && index < static_cast<int64_t>(ds_.files_.size())) {
      open(index);
      reader_->seek(offset);
      record_ = record;
    }
  }

 private:
  void open(int64_t index) {
    const std::string& path = ds_.files_[static_cast<size_t>(index)];
    reader_ = std::make_unique<TFRecordReader>(path, ds_.options_);
    file_id_ = source_file_id(path);
    reported_skips_ = 0;
  }
  void report_skips() {
    const int64_t now = reader_->skipped_records();
    if (now > reported_skips_) counters().skipped.fetch_add(now - reported_skips_);
    reported_skips_ = now;
  }

  const TFRecordDataset& ds_;
  int64_t file_index_ = 0;
  std::unique_ptr<TFRecordReader> reader_;
  int32_t file_id_ = -1;
  int64_t record_ = 0;  // index of the next record in the file (-1: unknown after a restore)
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
