// Fuzz target: the safetensors reader (cmake/tern_fuzz.cmake builds it with libFuzzer or the
// replay driver). Any input must either decode or fail with DataLoss; a decoded file must
// re-encode and decode to the same tensors.
#include <cstdlib>
#include <cstring>

#include "tern/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  io::SafetensorsFile f;
  try {
    f = io::decode_safetensors(bytes, "fuzz input");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss) std::abort();  // corrupt input is DataLoss, nothing else
    return 0;
  }
  io::SafetensorsFile again =
      io::decode_safetensors(io::encode_safetensors(f.tensors, f.metadata), "re-encoded");
  if (again.tensors.size() != f.tensors.size() || again.metadata != f.metadata) std::abort();
  for (const auto& [name, t] : f.tensors) {
    bool found = false;
    for (const auto& [name2, t2] : again.tensors) {
      if (name2 != name) continue;
      found = t2.type() == t.type() && std::memcmp(t2.raw_data(), t.raw_data(), t.nbytes()) == 0;
    }
    if (!found) std::abort();
  }
  return 0;
}
