// TFRecordReader: buffering, corruption reporting and resynchronisation around the frame checks
// of tern/format/tfrecord_frame.h.
#include "tern/data/tfrecord_reader.h"

#include <algorithm>

#include "tern/base/error.h"
#include "tern/base/logging.h"
#include "tern/format/tfrecord_frame.h"

namespace tern::data {
namespace {

constexpr size_t kReadChunk = 256 * 1024;

}  // namespace

TFRecordReader::TFRecordReader(const std::string& path, TFRecordOptions options)
    : path_(path), options_(options), in_(InputStream::open(path, options.compression)) {}

std::string_view TFRecordReader::unconsumed() const {
  return std::string_view(buf_).substr(head_);
}

size_t TFRecordReader::fill(size_t n) {
  while (buf_.size() - head_ < n && !stream_failed_) {
    if (head_ > 0 && head_ >= buf_.size() / 2) {
      buf_.erase(0, head_);
      head_ = 0;
    }
    // The buffer at most doubles per read: a header claiming 1 GiB in a 19-byte file must not
    // allocate (and zero) 1 GiB before the read finds nothing there (bad-input report F11).
    const size_t want = std::min(std::max(n - (buf_.size() - head_), kReadChunk),
                                 std::max(kReadChunk, buf_.size()));
    const size_t old = buf_.size();
    buf_.resize(old + want);
    size_t got = 0;
    try {
      got = in_->read(buf_.data() + old, want);
    } catch (const Error& e) {
      buf_.resize(old);
      if (e.code() != ErrorCode::kDataLoss || !options_.skip_corrupt) throw;
      log_warning("skipping the rest of ", path_, ": ", e.message());
      stream_failed_ = true;
      ++skipped_;
      break;
    }
    buf_.resize(old + got);
    if (got < want) break;  // end of stream
  }
  return std::min(n, buf_.size() - head_);
}

void TFRecordReader::consume(size_t n) {
  head_ += n;
  pos_ += static_cast<int64_t>(n);
}

void TFRecordReader::corrupt(int64_t at, const std::string& what) {
  if (!options_.skip_corrupt) {
    throw_error(ErrorCode::kDataLoss, path_, ": corrupt TFRecord at ", in_->describe_offset(at),
                ": ", what);
  }
  if (!resyncing_) {
    ++skipped_;
    log_warning("skipping corrupt TFRecord in ", path_, " at ", in_->describe_offset(at), ": ",
                what);
  }
}

std::optional<std::string> TFRecordReader::read() {
  const uint64_t limit = static_cast<uint64_t>(options_.max_record_bytes);
  for (;;) {
    const int64_t start = pos_;
    if (fill(format::kTFRecordHeaderBytes) == 0) return std::nullopt;
    // Everything buffered is checked: usually the whole record is there already.
    format::TFRecordFrame frame = format::tfrecord_decode(unconsumed(), limit);
    if (frame.status == format::TFRecordStatus::kTruncatedRecord) {
      fill(static_cast<size_t>(frame.frame_bytes()));
      frame = format::tfrecord_decode(unconsumed(), limit);
    }
    switch (frame.status) {
      case format::TFRecordStatus::kOk: {
        resyncing_ = false;
        std::string record(frame.data);
        consume(static_cast<size_t>(frame.frame_bytes()));
        return record;
      }
      case format::TFRecordStatus::kTruncatedHeader:
      case format::TFRecordStatus::kTruncatedRecord:
        corrupt(start, frame.problem);
        consume(unconsumed().size());  // the end of the file
        return std::nullopt;
      case format::TFRecordStatus::kLengthCrcMismatch:
      case format::TFRecordStatus::kLengthOverLimit:
        corrupt(start, frame.problem);
        resyncing_ = true;
        consume(1);  // scan forward for the next valid header
        continue;
      case format::TFRecordStatus::kDataCrcMismatch:
        corrupt(start, frame.problem);
        resyncing_ = false;  // the framing is intact: the next record starts right after
        consume(static_cast<size_t>(frame.frame_bytes()));
        continue;
    }
  }
}

void TFRecordReader::seek(int64_t offset) {
  TERN_CHECK_ARG(offset >= 0, path_, ": cannot seek to negative offset ", offset);
  resyncing_ = false;
  const int64_t buffered = static_cast<int64_t>(buf_.size() - head_);
  if (offset >= pos_ && offset <= pos_ + buffered) {
    consume(static_cast<size_t>(offset - pos_));
    return;
  }
  if (offset < pos_ || stream_failed_) {
    in_ = InputStream::open(path_, options_.compression);
    stream_failed_ = false;
  }
  buf_.clear();
  head_ = 0;
  const int64_t skip = offset - in_->offset();
  if (in_->skip(skip) < skip) {
    throw_error(ErrorCode::kDataLoss, path_, ": cannot seek to ", in_->describe_offset(offset),
                ": the file is shorter");
  }
  pos_ = offset;
}

}  // namespace tern::data
