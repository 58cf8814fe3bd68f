// Storage: a refcounted, 64-byte aligned byte buffer, owned or borrowed (e.g. an arena slice).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace tern {

class Storage {
 public:
  // Allocates `bytes` zero-initialized, 64-byte aligned host bytes.
  static std::shared_ptr<Storage> allocate(size_t bytes);
  // Wraps memory owned elsewhere; `release` (may be empty) runs when the last reference dies.
  static std::shared_ptr<Storage> wrap(void* data, size_t bytes,
                                       std::function<void()> release = {});

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  Storage(void* data, size_t bytes, std::function<void()> release)
      : data_(data), bytes_(bytes), release_(std::move(release)) {}
  void* data_;
  size_t bytes_;
  std::function<void()> release_;
};

}  // namespace tern
