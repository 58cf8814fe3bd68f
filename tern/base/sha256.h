// SHA-256 (FIPS 180-4), for weight fingerprints (`weights_sha256`) and file integrity
// (checkpoint manifests, model directory fingerprints, config hashes). Computed by OpenSSL's
// libcrypto (EVP), which uses the CPU's SHA extensions where present; no OpenSSL header is seen
// outside tern/base. bench/sha256_bench.cc measures it (BENCHMARKS.md, "SHA-256").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tern {

// An incremental hash: update() any number of times, then digest() or hex_digest() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Ends the hash: update() and digest() afterwards throw.
  std::array<uint8_t, 32> digest();
  std::string hex_digest();

 private:
  void* ctx_ = nullptr;  // EVP_MD_CTX
};

// Lower-case hex SHA-256 of `data` (what `sha256sum` prints).
std::string sha256_hex(std::string_view data);

}  // namespace tern
