// SHA-256 through OpenSSL's EVP digest interface (libcrypto).
#include "tern/base/sha256.h"

#include <openssl/evp.h>

#include <utility>

#include "tern/base/error.h"

namespace tern {
namespace {

EVP_MD_CTX* ctx_of(void* p) {
  return static_cast<EVP_MD_CTX*>(p);
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  TERN_CHECK(ctx_ != nullptr, "sha256: EVP_MD_CTX_new failed (out of memory)");
  if (EVP_DigestInit_ex(ctx_of(ctx_), EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_of(std::exchange(ctx_, nullptr)));
    throw_error(ErrorCode::kInternal, "sha256: EVP_DigestInit_ex failed");
  }
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(ctx_of(ctx_));
}

Sha256::Sha256(Sha256&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    EVP_MD_CTX_free(ctx_of(ctx_));
    ctx_ = std::exchange(other.ctx_, nullptr);
  }
  return *this;
}

void Sha256::update(const void* data, size_t size) {
  TERN_CHECK(ctx_ != nullptr, "sha256: update after digest() (or on a moved-from hash)");
  if (size == 0) return;
  TERN_CHECK(EVP_DigestUpdate(ctx_of(ctx_), data, size) == 1, "sha256: EVP_DigestUpdate failed");
}

std::array<uint8_t, 32> Sha256::digest() {
  TERN_CHECK(ctx_ != nullptr, "sha256: digest() called twice (or on a moved-from hash)");
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  const bool ok = EVP_DigestFinal_ex(ctx_of(ctx_), out.data(), &len) == 1 && len == out.size();
  EVP_MD_CTX_free(ctx_of(std::exchange(ctx_, nullptr)));  // finished: no update or digest after
  TERN_CHECK(ok, "sha256: EVP_DigestFinal_ex failed");
  return out;
}

std::string Sha256::hex_digest() {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (uint8_t b : digest()) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

}  // namespace tern
