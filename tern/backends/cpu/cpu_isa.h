// Which x86-64 instructions the vectorized CPU kernels use, and the run-time check that allows
// them.
//
// tern is compiled for baseline x86-64 (any 64-bit x86 CPU; -march=native with TERN_NATIVE=ON).
// The files of the vectorized kernel families (elementwise_*.cc, reduce_sum.cc, softmax_xent_cpu.cc
// ...) compile their code for x86-64-v3 (AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE) by writing it
// between TERN_CPU_V3_BEGIN and TERN_CPU_V3_END, after their #includes. The region is a target
// pragma, so only the functions that file defines get those instructions: the standard library's
// and tern's header templates instantiated there keep baseline code, and the linker cannot pick
// an AVX2 copy of them for the rest of the program (check_cpu_isa.py checks the objects).
// register_cpu_kernels registers those families only when cpu_isa() is kX86_64_v3; otherwise the
// oneDNN kernels (which dispatch on the CPU themselves) and the ref kernels run. The choice is
// made once, like oneDNN's: TERN_CPU_ISA=x86-64 in the environment forces the baseline path (as
// ONEDNN_MAX_CPU_ISA caps oneDNN's), e.g. to test it on a newer machine.
//
// Under clang the region is `#pragma clang attribute`, which does not reach the functions clang
// makes of `#pragma omp parallel` bodies: such a body calls a function of the file rather than
// using intrinsics itself (GCC gives those functions the region's target).
//
// Nothing here decides what the rest of tern is compiled for; that is CMake's TERN_NATIVE option.
#pragma once

#include <string>

// _Pragma takes one string literal: no line breaks inside it.
// clang-format off
#if defined(__clang__)
#define TERN_CPU_V3_BEGIN _Pragma("clang attribute push(__attribute__((target(\"avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt\"))), apply_to = function)")
#define TERN_CPU_V3_END _Pragma("clang attribute pop")
#else
#define TERN_CPU_V3_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt\")")
#define TERN_CPU_V3_END _Pragma("GCC pop_options")
#endif
// clang-format on

// An `omp simd` loop's AVX-512 build inside a TERN_CPU_V3_BEGIN region (16 floats per register),
// run where cpu_runs_v4_variants(). The target names x86-64-v4's extensions, not
// `arch=x86-64-v4`: GCC inlines a function into one of another arch only when it is
// always_inline, and the loop's formula comes from the x86-64-v3 region; `flatten` inlines it
// (with two builds of a loop GCC would otherwise call a larger formula out of line).
#define TERN_CPU_V4_LOOP \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,prefer-vector-width=512"), flatten))

namespace tern::cpu {

enum class CpuIsa {
  kX86_64,     // baseline: SSE2; the vectorized families are not registered
  kX86_64_v3,  // AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE (Haswell, Zen and later)
};

// What this CPU runs, capped by TERN_CPU_ISA ("x86-64" or "x86-64-v3"; read once, at the first
// call). An unknown TERN_CPU_ISA value is an InvalidArgument error naming the variable.
CpuIsa cpu_isa();
// "x86-64" / "x86-64-v3".
std::string cpu_isa_name(CpuIsa isa);
// Whether the loops that also have an AVX-512 (x86-64-v4) build (the dropout kernels' Philox
// tiles, the elementwise formulas, small_gemm ...) may run it: the CPU has x86-64-v4 and
// TERN_CPU_ISA is unset or "x86-64-v4".
bool cpu_runs_v4_variants();
// Whether the CPU is AMD's (the vendor string). Kernel choices that measured differently on AMD
// and Intel CPUs follow it, never a timing, so every run and every rank of a job on one kind of
// CPU picks the same kernels (the same bits).
bool cpu_is_amd();
// How many times the f32 FMA's FLOP rate one core reaches with AVX512_BF16's dot product
// (vdpbf16ps), both on 512-bit registers, measured at the first call (~1 ms; bf16_dot_rate.cc):
// ~1 on the Emerald Rapids machines without AMX measured (vdpbf16ps issues at half the FMA's
// rate), ~2 on AMD Zen 5.
// 0 where the CPU lacks AVX512_BF16 or the vectorized kernels are off (TERN_CPU_ISA=x86-64).
// Informational (`tern --version`): no kernel choice depends on a timing.
double bf16_dot_speedup();

}  // namespace tern::cpu
