// SHA-256 throughput of tern::Sha256 (tern/base/sha256.h): one large buffer (a checkpoint's
// weights file, hashed on save and on verify) and many small messages (config hashes, per-call
// overhead). Prints MB/s, the median of --repeats runs.
//
//   sha256_bench [--mb 64] [--repeats 5]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "tern/base/sha256.h"

namespace {

double time_large(const std::string& data, std::string* digest) {
  const double t0 = tern::bench::wall_seconds();
  *digest = tern::sha256_hex(data);
  return tern::bench::wall_seconds() - t0;
}

double time_small(const std::string& data, size_t message, std::string* digest) {
  const double t0 = tern::bench::wall_seconds();
  for (size_t off = 0; off + message <= data.size(); off += message) {
    tern::Sha256 h;
    h.update(data.data() + off, message);
    *digest = h.hex_digest();
  }
  return tern::bench::wall_seconds() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  int mb = 64, repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mb")) mb = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
  }
  std::string data(static_cast<size_t>(mb) << 20, '\0');
  uint32_t x = 12345;
  for (char& c : data) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  std::string digest;
  std::vector<double> large, small;
  for (int r = 0; r < repeats; ++r) {
    large.push_back(time_large(data, &digest));
    small.push_back(time_small(data, 1024, &digest));
  }
  const double mbytes = static_cast<double>(data.size()) / 1e6;
  std::printf("sha256 %d MiB buffer: %.1f MB/s (median of %d)\n", mb,
              mbytes / tern::bench::median(large), repeats);
  std::printf("sha256 1 KiB messages: %.1f MB/s (median of %d)\n",
              mbytes / tern::bench::median(small), repeats);
  std::printf("last digest %s\n", digest.c_str());
  return 0;
}
