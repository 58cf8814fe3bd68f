// Iterator state blobs: StateWriter records the position of every stage (counters, RNG positions,
// buffered elements) as named entries; StateReader reads them back in the same order, checking
// each name, so a blob restored into a different pipeline fails with a message naming the key.
// Blob layout: "TERNITR1", entries (u8 tag, u64 key length, key, payload), u32 masked CRC32C.
// An element is its component count, its tensors and, when known, its origin (a string entry).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tern/data/element.h"

namespace tern::data {

class StateWriter {
 public:
  StateWriter();
  void write_int(std::string_view key, int64_t value);
  void write_string(std::string_view key, std::string_view value);
  void write_tensor(std::string_view key, const Tensor& value);
  void write_element(std::string_view key, const Element& value);
  void write_elements(std::string_view key, const std::vector<Element>& values);

  // Keys written while the scope lives are prefixed "<name>/".
  class Scope {
   public:
    Scope(StateWriter& w, std::string_view name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StateWriter& w_;
    size_t saved_;
  };

  // The finished blob (header, entries, checksum).
  std::string finish() const;

 private:
  void begin_entry(uint8_t tag, std::string_view key);
  void put_u64(uint64_t v);
  void put_bytes(const void* data, size_t n);

  std::string buf_;
  std::string prefix_;
};

class StateReader {
 public:
  // Checks the header and checksum: DataLoss if the blob is truncated or corrupt.
  explicit StateReader(std::string_view blob);
  int64_t read_int(std::string_view key);
  std::string read_string(std::string_view key);
  Tensor read_tensor(std::string_view key);
  Element read_element(std::string_view key);
  std::vector<Element> read_elements(std::string_view key);
  // Whether the next entry is named `key` (under the current scope): for entries later versions
  // added, so blobs written before them still restore.
  bool next_key_is(std::string_view key) const;
  // InvalidArgument if entries remain (the blob came from a longer pipeline).
  void expect_end() const;

  class Scope {
   public:
    Scope(StateReader& r, std::string_view name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StateReader& r_;
    size_t saved_;
  };

 private:
  void begin_entry(uint8_t tag, std::string_view key);
  uint64_t get_u64();
  std::string_view get_bytes(uint64_t n);

  std::string_view data_;
  size_t pos_ = 0;
  std::string prefix_;
};

}  // namespace tern::data
