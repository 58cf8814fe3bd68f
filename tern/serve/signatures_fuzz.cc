// Fuzz target: signatures.json of a model directory (a file the server reads from the base path).
// Any input must parse or fail with InvalidArgument; parsed signatures must write and parse back
// to the same signatures.
#include <cstdlib>
#include <string_view>

#include "tern/serve/model_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  serve::StoredSignatures sigs;
  try {
    sigs = serve::parse_signatures(text, "signatures.json");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (serve::parse_signatures(serve::write_signatures(sigs), "rewritten") != sigs) std::abort();
  return 0;
}
