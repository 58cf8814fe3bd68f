// RecordBlocks: block reads, frame splitting with every CRC checked.
#include "tern/transform/records.h"

#include <algorithm>
#include <cstring>

#include "tern/base/error.h"
#include "tern/data/input_stream.h"
#include "tern/format/tfrecord_frame.h"

namespace tern::transform {

RecordBlocks::RecordBlocks(const std::string& path, int64_t block_bytes)
    : path_(path), in_(data::InputStream::open(path, data::Compression::kAuto)) {
  buf_.resize(static_cast<size_t>(std::max<int64_t>(block_bytes, 4096)));
}

RecordBlocks::~RecordBlocks() = default;

bool RecordBlocks::next(std::vector<std::string_view>& records) {
  records.clear();
  // Keep the unconsumed tail (a record cut by the last read) at the front, then fill.
  if (head_ > 0) {
    std::memmove(buf_.data(), buf_.data() + head_, size_ - head_);
    size_ -= head_;
    head_ = 0;
  }
  while (true) {
    while (!eof_ && size_ < buf_.size()) {
      size_t got = in_->read(buf_.data() + size_, buf_.size() - size_);
      if (got == 0) eof_ = true;
      size_ += got;
    }
    first_index_ = next_index_;
    size_t pos = 0;
    while (pos < size_) {
      std::string_view rest(buf_.data() + pos, size_ - pos);
      format::TFRecordFrame f = format::tfrecord_decode(rest);
      if (f.ok()) {
        records.push_back(f.data);
        pos += static_cast<size_t>(f.frame_bytes());
        continue;
      }
      bool cut = f.status == format::TFRecordStatus::kTruncatedHeader ||
                 f.status == format::TFRecordStatus::kTruncatedRecord;
      if (!cut || eof_)
        throw_error(ErrorCode::kDataLoss, path_, ": corrupt TFRecord at byte offset ",
                    offset_ + static_cast<int64_t>(pos), ": ",
                    cut ? "the file ends inside a record (truncated)" : f.problem);
      // A record longer than what is left of the block: grow the block to hold it.
      if (pos == 0 && f.status == format::TFRecordStatus::kTruncatedRecord &&
          f.frame_bytes() > buf_.size())
        buf_.resize(static_cast<size_t>(f.frame_bytes()));
      break;
    }
    head_ = pos;
    offset_ += static_cast<int64_t>(pos);
    next_index_ += static_cast<int64_t>(records.size());
    if (!records.empty()) return true;
    if (eof_) return false;  // (a partial record at the end threw above)
    // Nothing complete yet: the block was grown to hold the record; read the rest of it.
  }
}

}  // namespace tern::transform
