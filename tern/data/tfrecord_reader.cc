// TFRecordReader: buffered framing checks, corruption reporting and resynchronisation.
#include "tern/data/tfrecord_reader.h"

#include <algorithm>

#include "tern/base/error.h"
#include "tern/base/logging.h"
#include "tern/data/crc32c.h"

namespace tern::data {
namespace {

constexpr size_t kHeaderBytes = 12;
constexpr size_t kFooterBytes = 4;
constexpr size_t kReadChunk = 256 * 1024;

uint64_t load_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

TFRecordReader::TFRecordReader(const std::string& path, TFRecordOptions options)
    : path_(path), options_(options), in_(InputStream::open(path, options.compression)) {}

const unsigned char* TFRecordReader::data() const {
  return reinterpret_cast<const unsigned char*>(buf_.data()) + head_;
}

size_t TFRecordReader::fill(size_t n) {
  while (buf_.size() - head_ < n && !stream_failed_) {
    if (head_ > 0 && head_ >= buf_.size() / 2) {
      buf_.erase(0, head_);
      head_ = 0;
    }
    const size_t want = std::max(n - (buf_.size() - head_), kReadChunk);
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
  for (;;) {
    const int64_t start = pos_;
    const size_t have = fill(kHeaderBytes);
    if (have == 0) return std::nullopt;
    if (have < kHeaderBytes) {
      corrupt(start, str_cat("truncated record header (", have, " bytes at the end of the file)"));
      consume(have);
      return std::nullopt;
    }
    const uint64_t length = load_le(data(), 8);
    const uint32_t length_crc = static_cast<uint32_t>(load_le(data() + 8, 4));
    const bool header_ok = crc32c_unmask(length_crc) == crc32c(data(), 8);
    if (!header_ok || length > static_cast<uint64_t>(options_.max_record_bytes)) {
      corrupt(start, header_ok ? str_cat("record length ", length, " exceeds the limit of ",
                                         options_.max_record_bytes)
                               : std::string("length CRC mismatch"));
      resyncing_ = true;
      consume(1);  // scan forward for the next valid header
      continue;
    }
    const size_t total = kHeaderBytes + static_cast<size_t>(length) + kFooterBytes;
    const size_t got = fill(total);
    if (got < total) {
      corrupt(start, str_cat("truncated record: the header says ", length,
                             " bytes but the file ends after ", got - std::min(got, kHeaderBytes)));
      consume(got);
      return std::nullopt;
    }
    const uint32_t data_crc = static_cast<uint32_t>(load_le(data() + kHeaderBytes + length, 4));
    if (crc32c_unmask(data_crc) != crc32c(data() + kHeaderBytes, static_cast<size_t>(length))) {
      corrupt(start, str_cat("data CRC mismatch in a record of ", length, " bytes"));
      resyncing_ = false;  // the framing is intact: the next record starts right after
      consume(total);
      continue;
    }
    resyncing_ = false;
    std::string record(reinterpret_cast<const char*>(data()) + kHeaderBytes,
                       static_cast<size_t>(length));
    consume(total);
    return record;
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
