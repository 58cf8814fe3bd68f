// InputStream: sequential reads from a file, raw or through zlib (gzip members or a zlib
// stream), tracking the byte offset so readers can name where corrupt data sits.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace tern::data {

enum class Compression {
  kAuto,  // gzip if the file starts with 1f 8b, otherwise none
  kNone,
  kGzip,
  kZlib,
};

// "", "GZIP" or "ZLIB" (TFRecord option names, any case); InvalidArgument otherwise.
Compression parse_compression(std::string_view name);

class InputStream {
 public:
  // NotFound if the file cannot be opened.
  static std::unique_ptr<InputStream> open(const std::string& path,
                                           Compression compression = Compression::kAuto);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Reads up to `n` bytes; fewer only at the end of the stream (or where a compressed stream is
  // cut short, which the next read reports). DataLoss naming the file and
  // offset if compressed data is corrupt or ends mid-stream; Unavailable on an I/O error.
  size_t read(void* dst, size_t n);
  // Skips up to `n` bytes; returns how many were skipped.
  int64_t skip(int64_t n);

  // Bytes delivered so far (uncompressed offset).
  int64_t offset() const { return offset_; }
  bool compressed() const { return compression_ != Compression::kNone; }
  // Size of the file on disk (compressed size for compressed streams).
  int64_t file_size() const { return file_size_; }
  const std::string& path() const { return path_; }
  // "byte offset 12" or "uncompressed byte offset 12", for error messages.
  std::string describe_offset(int64_t offset) const;

 private:
  InputStream(std::string path, std::FILE* file, Compression compression, int64_t file_size);
  size_t read_compressed(char* dst, size_t n);
  size_t read_file(void* dst, size_t n);

  struct Inflater;
  std::string path_;
  std::FILE* file_;
  Compression compression_;
  int64_t file_size_;
  int64_t offset_ = 0;
  std::unique_ptr<Inflater> inflater_;
};

}  // namespace tern::data
