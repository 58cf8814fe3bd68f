// Fuzz target: TFRecord framing of outside bytes. Any input must split into records or fail with
// DataLoss; the records found must frame back to exactly the bytes they came from (framing is
// deterministic), and tfrecord_decode must agree with tfrecord_split on the first frame.
#include <cstdlib>

#include "tern/base/error.h"
#include "tern/format/tfrecord_frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const format::TFRecordFrame first = format::tfrecord_decode(bytes);
  if (first.ok() && (first.data.size() != first.length || first.frame_bytes() > size)) std::abort();
  if (!first.ok() && (first.problem.empty() || !first.data.empty())) std::abort();
  format::TFRecordScan scan;
  try {
    scan = format::tfrecord_split(bytes, "fuzz input");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss) std::abort();
    return 0;  // a corrupt frame (not one merely cut short): nothing more to compare
  }
  if (size > 0 && first.ok() != (!scan.records.empty() && scan.records[0] == first.data)) {
    std::abort();
  }
  std::string again;
  for (const std::string& r : scan.records) again += format::tfrecord_frame(r);
  const size_t end = scan.truncated_at < 0 ? size : static_cast<size_t>(scan.truncated_at);
  if (again != bytes.substr(0, end)) std::abort();
  return 0;
}
