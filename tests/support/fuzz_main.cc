// A stand-in for libFuzzer's main in ordinary builds (see cmake/tern_fuzz.cmake): runs
// LLVMFuzzerTestOneInput on every seed file named on the command line (files or folders), then on
// random mutations of them (bit flips, byte overwrites, inserted and removed runs, truncations,
// little-endian u64 patches such as huge sizes) until --seconds have passed. Deterministic for a
// given --seed. A crash or sanitizer report fails the test; on SIGSEGV/SIGABRT/SIGFPE/SIGILL the
// input is written to fuzz-crash-input for replay (run the target with that file as its seed).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string mutate(std::string s, std::mt19937_64& rng) {
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    size_t n = s.size();
    size_t at = n ? rng() % n : 0;
    switch (rng() % 7) {
      case 0:
        if (n) s[at] = static_cast<char>(s[at] ^ (1 << (rng() % 8)));
        break;
      case 1:
        if (n) s[at] = static_cast<char>(rng());
        break;
      case 2:
        s.insert(at, std::string(1 + rng() % 16, static_cast<char>(rng())));
        break;
      case 3:
        if (n) s.erase(at, 1 + rng() % 16);
        break;
      case 4:
        s.resize(n ? rng() % n : 0);
        break;
      case 5: {  // a little-endian u64: small, huge, or all ones
        uint64_t values[] = {0, 1, rng() % 256, uint64_t{1} << (rng() % 64), ~uint64_t{0}};
        uint64_t v = values[rng() % 5];
        for (int i = 0; i < 8 && at + i < s.size(); ++i)
          s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
        break;
      }
      default:  // a digit changed (sizes and offsets in text headers)
        if (n) s[at] = static_cast<char>('0' + rng() % 10);
    }
  }
  return s;
}

const std::string* g_current = nullptr;

void dump_input(int sig) {
  if (g_current) {
    int fd = ::open("fuzz-crash-input", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, g_current->data(), g_current->size());
      (void)ignored;
      ::close(fd);
    }
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void run(const std::string& input) {
  g_current = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 2;
  uint64_t seed = 1;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      seconds = std::stod(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::directory_iterator(a)) {
        if (e.is_regular_file()) seeds.push_back(read_all(e.path()));
      }
    } else if (std::filesystem::is_regular_file(a)) {
      seeds.push_back(read_all(a));
    } else {
      std::fprintf(stderr, "fuzz_main: '%s' is neither a flag nor a seed file or folder\n",
                   a.c_str());
      return 2;
    }
  }
  seeds.push_back("");
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGILL}) ::signal(sig, dump_input);
  for (const auto& s : seeds) run(s);
  std::mt19937_64 rng(seed);
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::string s = seeds[rng() % seeds.size()];
    int rounds = 1 + static_cast<int>(rng() % 3);
    for (int r = 0; r < rounds; ++r) s = mutate(std::move(s), rng);
    run(s);
    ++runs;
  }
  std::printf("fuzz_main: %zu seeds, %llu mutated inputs in %.1f s, no crash\n", seeds.size(),
              static_cast<unsigned long long>(runs), seconds);
  return 0;
}
