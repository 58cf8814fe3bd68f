// InputStream: buffered file reads and streaming zlib/gzip inflation.
#include "tern/data/input_stream.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "tern/base/error.h"

namespace tern::data {

struct InputStream::Inflater {
  z_stream strm{};
  std::vector<unsigned char> in = std::vector<unsigned char>(256 * 1024);
  int64_t file_read = 0;     // compressed bytes read from the file
  bool member_done = false;  // a gzip member / zlib stream just ended
  bool eof = false;
  ~Inflater() { inflateEnd(&strm); }
};

Compression parse_compression(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.empty() || upper == "NONE") return Compression::kNone;
  if (upper == "GZIP") return Compression::kGzip;
  if (upper == "ZLIB") return Compression::kZlib;
  if (upper == "AUTO") return Compression::kAuto;
  throw_error(ErrorCode::kInvalidArgument, "unknown compression '", name,
              "' (expected \"\", GZIP or ZLIB)");
}

std::unique_ptr<InputStream> InputStream::open(const std::string& path, Compression compression) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw_error(ErrorCode::kNotFound, "cannot open ", path, ": ", std::strerror(errno));
  }
  int64_t size = -1;
  if (std::fseek(f, 0, SEEK_END) == 0) size = std::ftell(f);
  std::rewind(f);
  if (compression == Compression::kAuto) {
    unsigned char magic[2] = {0, 0};
    const size_t got = std::fread(magic, 1, 2, f);
    std::rewind(f);
    compression =
        got == 2 && magic[0] == 0x1f && magic[1] == 0x8b ? Compression::kGzip : Compression::kNone;
  }
  return std::unique_ptr<InputStream>(new InputStream(path, f, compression, size));
}

InputStream::InputStream(std::string path, std::FILE* file, Compression compression,
                         int64_t file_size)
    : path_(std::move(path)), file_(file), compression_(compression), file_size_(file_size) {
  if (compression_ == Compression::kNone) return;
  inflater_ = std::make_unique<Inflater>();
  const int window_bits = compression_ == Compression::kGzip ? 15 + 16 : 15;
  if (inflateInit2(&inflater_->strm, window_bits) != Z_OK) {
    std::fclose(file_);
    throw_error(ErrorCode::kResourceExhausted, "zlib: cannot initialize inflate for ", path_);
  }
}

InputStream::~InputStream() {
  std::fclose(file_);
}

std::string InputStream::describe_offset(int64_t offset) const {
  return str_cat(compressed() ? "uncompressed byte offset " : "byte offset ", offset);
}

size_t InputStream::read_file(void* dst, size_t n) {
  const size_t got = std::fread(dst, 1, n, file_);
  if (got < n && std::ferror(file_)) {
    throw_error(ErrorCode::kUnavailable, "read error in ", path_, ": ", std::strerror(errno));
  }
  return got;
}

size_t InputStream::read(void* dst, size_t n) {
  const size_t got = compressed() ? read_compressed(static_cast<char*>(dst), n) : read_file(dst, n);
  offset_ += static_cast<int64_t>(got);
  return got;
}

int64_t InputStream::skip(int64_t n) {
  if (!compressed() && file_size_ >= 0) {
    const int64_t step = std::clamp<int64_t>(file_size_ - offset_, 0, std::max<int64_t>(n, 0));
    if (std::fseek(file_, static_cast<long>(step), SEEK_CUR) == 0) {
      offset_ += step;
      return step;
    }
  }
  char buf[16384];
  int64_t done = 0;
  while (done < n) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(n - done, sizeof(buf)));
    const size_t got = read(buf, want);
    done += static_cast<int64_t>(got);
    if (got < want) break;
  }
  return done;
}

size_t InputStream::read_compressed(char* dst, size_t n) {
  Inflater& z = *inflater_;
  size_t got = 0;
  while (got < n && !z.eof) {
    if (z.strm.avail_in == 0) {
      const size_t filled = read_file(z.in.data(), z.in.size());
      if (filled == 0) {
        if (z.member_done || z.file_read == 0) {
          z.eof = true;
          break;
        }
        if (got > 0) break;  // deliver what there is; the next read reports the truncation
        throw_error(ErrorCode::kDataLoss, path_, ": compressed stream truncated at byte offset ",
                    z.file_read, " (", describe_offset(offset_ + static_cast<int64_t>(got)), ")");
      }
      z.file_read += static_cast<int64_t>(filled);
      z.strm.next_in = z.in.data();
      z.strm.avail_in = static_cast<uInt>(filled);
    }
    if (z.member_done) {  // more bytes after a complete member: gzip allows concatenation
      inflateReset(&z.strm);
      z.member_done = false;
    }
    z.strm.next_out = reinterpret_cast<Bytef*>(dst + got);
    z.strm.avail_out = static_cast<uInt>(std::min<size_t>(n - got, 1u << 30));
    const uInt before = z.strm.avail_out;
    const int rc = inflate(&z.strm, Z_NO_FLUSH);
    got += before - z.strm.avail_out;
    if (rc == Z_STREAM_END) {
      z.member_done = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const int64_t at = z.file_read - static_cast<int64_t>(z.strm.avail_in);
      throw_error(ErrorCode::kDataLoss, path_, ": corrupt compressed data at byte offset ", at,
                  " (", describe_offset(offset_ + static_cast<int64_t>(got)),
                  "): ", z.strm.msg != nullptr ? z.strm.msg : zError(rc));
    }
  }
  return got;
}

}  // namespace tern::data
