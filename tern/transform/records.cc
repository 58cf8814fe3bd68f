// RecordBlocks: block reads, frame splitting, CRCs now or deferred.
#include "tern/transform/records.h"

#include <algorithm>
#include <cstring>

#include "tern/base/error.h"
#include "tern/data/input_stream.h"
#include "tern/format/crc32c.h"
#include "tern/format/little_endian.h"
#include "tern/format/tfrecord_frame.h"

namespace tern::transform {

using format::kTFRecordFooterBytes;
using format::kTFRecordHeaderBytes;

RecordBlocks::RecordBlocks(const std::string& path, int64_t block_bytes, DataCrc data_crc)
    : path_(path),
      data_crc_(data_crc),
      in_(data::InputStream::open(path, data::Compression::kAuto)) {
  buf_.resize(static_cast<size_t>(std::max<int64_t>(block_bytes, 4096)));
}

RecordBlocks::~RecordBlocks() = default;

void RecordBlocks::corrupt(int64_t at, const std::string& problem) const {
  throw_error(ErrorCode::kDataLoss, path_, ": corrupt TFRecord at byte offset ", at, ": ", problem);
}

bool RecordBlocks::next(std::vector<std::string_view>& records) {
  records.clear();
  stored_crcs_.clear();
  offsets_.clear();
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
      const char* p = buf_.data() + pos;
      const size_t left = size_ - pos;
      const int64_t at = offset_ + static_cast<int64_t>(pos);
      if (left < kTFRecordHeaderBytes) {
        if (eof_) corrupt(at, "the file ends inside a record header (truncated)");
        break;
      }
      const uint64_t length = format::load_fixed64(p);
      if (format::crc32c_unmask(format::load_fixed32(p + 8)) != format::crc32c(p, 8))
        corrupt(at, "length CRC mismatch");
      if (length > format::kTFRecordMaxLength)
        corrupt(at, str_cat("record length ", length, " is over the limit of ",
                            format::kTFRecordMaxLength, " bytes"));
      const uint64_t frame = kTFRecordHeaderBytes + length + kTFRecordFooterBytes;
      if (left < frame) {
        if (eof_) corrupt(at, "the file ends inside a record (truncated)");
        // A record longer than the block: grow the block to hold it.
        if (pos == 0 && frame > buf_.size()) buf_.resize(static_cast<size_t>(frame));
        break;
      }
      const std::string_view data(p + kTFRecordHeaderBytes, static_cast<size_t>(length));
      const uint32_t stored = format::load_fixed32(p + kTFRecordHeaderBytes + length);
      if (data_crc_ == DataCrc::kChecked) {
        if (format::crc32c_unmask(stored) != format::crc32c(data))
          corrupt(at, str_cat("data CRC mismatch in a record of ", length, " bytes"));
      } else {
        stored_crcs_.push_back(stored);
        offsets_.push_back(at);
      }
      records.push_back(data);
      pos += static_cast<size_t>(frame);
    }
    head_ = pos;
    offset_ += static_cast<int64_t>(pos);
    next_index_ += static_cast<int64_t>(records.size());
    if (!records.empty()) {
      if (data_crc_ == DataCrc::kDeferred) records_ = records;
      return true;
    }
    if (eof_) return false;  // (a partial record at the end threw above)
    // Nothing complete yet: the block was grown to hold the record; read the rest of it.
  }
}

void RecordBlocks::check_data_crcs(size_t begin, size_t end) const {
  TERN_CHECK_ARG(data_crc_ == DataCrc::kDeferred && end <= records_.size() && begin <= end,
                 "RecordBlocks::check_data_crcs: records ", begin, " .. ", end, " of ",
                 records_.size(), " deferred");
  for (size_t i = begin; i < end; ++i) {
    if (format::crc32c_unmask(stored_crcs_[i]) != format::crc32c(records_[i]))
      corrupt(offsets_[i],
              str_cat("data CRC mismatch in a record of ", records_[i].size(), " bytes"));
  }
}

}  // namespace tern::transform
