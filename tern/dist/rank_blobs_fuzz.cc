// Fuzz target: the per-worker blob reader (a checkpoint's data_iterator.bin written by a
// data-parallel job). Any input must either unpack or fail with DataLoss; an unpacked input must
// pack back to the same bytes.
#include <cstdlib>
#include <string>

#include "tern/dist/data_parallel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> blobs;
  try {
    blobs = dist::unpack_rank_blobs(bytes, "fuzz input");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss) std::abort();
    return 0;
  }
  if (dist::pack_rank_blobs(blobs) != bytes) std::abort();
  return 0;
}
