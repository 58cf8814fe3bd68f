// OutputStream: sequential writes to a file, raw or through zlib (a gzip member or a zlib
// stream wrapping everything written, as TFRecord compression does).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "tern/data/input_stream.h"

namespace tern::data {

class OutputStream {
 public:
  // Creates or truncates `path` (kAuto means kNone here). Unavailable if it cannot be opened.
  static std::unique_ptr<OutputStream> create(const std::string& path,
                                              Compression compression = Compression::kNone);
  // Finishes the stream; errors at this point are logged, so call close() to see them.
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  void write(std::string_view bytes);
  // Pushes everything written so far to the OS (a zlib sync flush for compressed streams);
  // with `durable`, also fsyncs the file.
  void flush(bool durable = false);
  // Finishes the compressed stream and closes the file; later writes fail.
  void close();

  // Uncompressed bytes written.
  int64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  OutputStream(std::string path, std::FILE* file, Compression compression);
  void deflate_some(int flush_mode);
  void write_file(const void* data, size_t n);

  struct Deflater;
  std::string path_;
  std::FILE* file_;
  Compression compression_;
  int64_t offset_ = 0;
  std::unique_ptr<Deflater> deflater_;
};

}  // namespace tern::data
