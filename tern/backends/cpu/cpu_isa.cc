// The CPU's instruction set level for the vectorized kernels (cpu_isa.h). Compiled for baseline
// x86-64: it runs before anything knows what the CPU has.
#include "tern/backends/cpu/cpu_isa.h"

#include <cstdlib>

#include "tern/base/error.h"

namespace tern::cpu {
namespace {

bool cpu_runs_v3() {
#if defined(__clang__)
  // clang 14's __builtin_cpu_supports knows neither "x86-64-v3" nor f16c / movbe / lzcnt; every
  // CPU with AVX2, FMA and BMI2 has them (Intel since Haswell, AMD since Zen).
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("bmi2");
#else
  // Also checks that the OS saves the AVX registers (XGETBV).
  return __builtin_cpu_supports("x86-64-v3");
#endif
}

CpuIsa detect() {
  const CpuIsa best = cpu_runs_v3() ? CpuIsa::kX86_64_v3 : CpuIsa::kX86_64;
  const char* cap = std::getenv("TERN_CPU_ISA");
  if (!cap || !*cap) return best;
  const std::string want = cap;
  if (want == cpu_isa_name(CpuIsa::kX86_64)) return CpuIsa::kX86_64;
  if (want == cpu_isa_name(CpuIsa::kX86_64_v3) || want == "x86-64-v4") return best;
  throw_error(ErrorCode::kInvalidArgument, "TERN_CPU_ISA='", want,
              "': expected x86-64, x86-64-v3 or x86-64-v4 (the most the vectorized kernels may "
              "use)");
}

}  // namespace

CpuIsa cpu_isa() {
  static const CpuIsa isa = detect();
  return isa;
}

bool cpu_is_amd() {
  return __builtin_cpu_is("amd");
}

bool cpu_runs_v4_variants() {
  static const bool v4 = []() -> bool {
    if (cpu_isa() != CpuIsa::kX86_64_v3) return false;
    const char* cap = std::getenv("TERN_CPU_ISA");
    if (cap && *cap && std::string(cap) != "x86-64-v4") return false;
#if defined(__clang__)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
    return __builtin_cpu_supports("x86-64-v4") != 0;
#endif
  }();
  return v4;
}

std::string cpu_isa_name(CpuIsa isa) {
  return isa == CpuIsa::kX86_64_v3 ? "x86-64-v3" : "x86-64";
}

}  // namespace tern::cpu
