// Fuzz target: TFRecordReader over a file of outside bytes (cmake/tern_fuzz.cmake builds it with
// libFuzzer or the replay driver). The input is written to a temporary file and read record by
// record, plain and with skip_corrupt; gzip is detected from its magic bytes.
// Any failure must be DataLoss; a plain read that ends without one must give exactly the records
// tern/format's tfrecord_split finds in the same (uncompressed) bytes. The reader grows its buffer
// with the data that arrives, so a tiny file claiming a huge record must stay cheap (bad-input
// report F11; libFuzzer's -rss_limit_mb catches a regression).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tern/base/error.h"
#include "tern/data/tfrecord_reader.h"
#include "tern/format/tfrecord_frame.h"

namespace {

const std::string& temp_path() {
  static const std::string path = "/tmp/tern_tfrecord_reader_fuzz_" + std::to_string(::getpid());
  return path;
}

// The records read before the end, or before a DataLoss (then `failed` is set).
std::vector<std::string> read_all(const tern::data::TFRecordOptions& options, bool* failed) {
  *failed = false;
  std::vector<std::string> out;
  try {
    tern::data::TFRecordReader reader(temp_path(), options);
    while (auto r = reader.read()) out.push_back(std::move(*r));
  } catch (const tern::Error& e) {
    if (e.code() != tern::ErrorCode::kDataLoss) std::abort();
    *failed = true;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  {
    std::FILE* f = std::fopen(temp_path().c_str(), "wb");
    if (f == nullptr) std::abort();
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
  }
  bool failed = false;
  const std::vector<std::string> plain =
      read_all({.compression = data::Compression::kAuto}, &failed);
  bool skip_failed = false;
  const std::vector<std::string> skipping =
      read_all({.compression = data::Compression::kAuto, .skip_corrupt = true}, &skip_failed);
  // Skipping may fail only where the stream itself cannot be read (a corrupt compressed
  // stream's header); it never gives fewer records than the plain read before its error.
  if (skipping.size() < plain.size()) std::abort();
  const bool compressed = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;  // gzip, detected
  if (!failed && !compressed) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    format::TFRecordScan scan;
    try {
      scan = format::tfrecord_split(bytes, "fuzz input");
    } catch (const Error&) {
      std::abort();  // the reader accepted what the framing rejects
    }
    if (scan.truncated_at >= 0 || scan.records != plain) std::abort();
  }
  std::remove(temp_path().c_str());
  return 0;
}
