// Aligned host storage.
#include "tern/tensor/storage.h"

#include <cstdlib>
#include <cstring>

#include "tern/base/error.h"

namespace tern {

std::shared_ptr<Storage> Storage::allocate(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw_error(ErrorCode::kResourceExhausted, "out of memory allocating ", bytes, " bytes");
  std::memset(p, 0, rounded);
  return std::shared_ptr<Storage>(new Storage(p, bytes, [p] { std::free(p); }));
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t bytes, std::function<void()> release) {
  return std::shared_ptr<Storage>(new Storage(data, bytes, std::move(release)));
}

Storage::~Storage() {
  if (release_) release_();
}

}  // namespace tern
