// Fuzz target: event-file decoding (TFRecord framing, then Event / Summary / HistogramProto /
// TensorProto wire format). Any input must decode or fail with DataLoss; decoded events must
// re-encode and decode to the same values.
#include <cstdlib>

#include "tern/format/tfrecord_frame.h"
#include "tern/io/event_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The input as a whole file, and as one bare Event.
  std::vector<std::string> records;
  try {
    records = format::tfrecord_split(bytes, "fuzz input").records;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss) std::abort();
  }
  records.emplace_back(bytes);
  for (const auto& r : records) {
    io::Event e;
    try {
      e = io::decode_event(r, "fuzz event");
    } catch (const Error& err) {
      if (err.code() != ErrorCode::kDataLoss) std::abort();
      continue;
    }
    std::vector<io::SummaryValue> writable;
    for (const auto& v : e.summary) {
      if (v.kind == io::SummaryKind::kScalar || v.kind == io::SummaryKind::kHistogram)
        writable.push_back(v);
    }
    e.summary = writable;
    io::Event back = io::decode_event(io::encode_event(e), "re-encoded");
    if (back.step != e.step || back.summary.size() != e.summary.size()) std::abort();
    for (size_t i = 0; i < e.summary.size(); ++i) {
      if (back.summary[i].tag != e.summary[i].tag || back.summary[i].kind != e.summary[i].kind)
        std::abort();
    }
  }
  return 0;
}
