// Fuzz target: the schema.toml reader (a file users edit). Any input must parse or fail with
// InvalidArgument naming the file; what parses must write back to TOML that reads the same.
#include <cstdlib>

#include "tern/base/error.h"
#include "tern/pipeline/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  pipeline::Schema s;
  try {
    s = pipeline::parse_schema(bytes, "fuzz.toml");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (pipeline::parse_schema(pipeline::schema_to_toml(s), "again.toml") != s) std::abort();
  return 0;
}
