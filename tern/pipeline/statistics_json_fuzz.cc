// Fuzz target: the readers of statistics.json and anomalies.json (outside bytes: files a pipeline
// root holds, possibly edited or damaged). Any input must parse or fail with InvalidArgument /
// DataLoss; what parses must write back to JSON that parses to the same text again.
#include <cstdlib>

#include "tern/base/error.h"
#include "tern/pipeline/statistics.h"
#include "tern/pipeline/validate.h"

namespace {

bool expected(const tern::Error& e) {
  return e.code() == tern::ErrorCode::kInvalidArgument || e.code() == tern::ErrorCode::kDataLoss;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const std::string once =
        pipeline::statistics_to_json(pipeline::parse_statistics_json(bytes, "fuzz"));
    const std::string twice =
        pipeline::statistics_to_json(pipeline::parse_statistics_json(once, "again"));
    if (once != twice) std::abort();
  } catch (const Error& e) {
    if (!expected(e)) std::abort();
  }
  try {
    const auto a = pipeline::parse_anomalies_json(bytes, "fuzz");
    if (pipeline::parse_anomalies_json(pipeline::anomalies_to_json(a), "again") != a) std::abort();
  } catch (const Error& e) {
    if (!expected(e)) std::abort();
  }
  return 0;
}
