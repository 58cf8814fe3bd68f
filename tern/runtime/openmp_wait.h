// OpenMP wait policy for the tern command and benchmark binaries.
//
// libgomp (the OpenMP runtime Debian's oneDNN uses) lets an idle worker thread spin for
// GOMP_SPINCOUNT iterations after every parallel region before it sleeps on a futex; unset, that
// is 300k iterations (several ms on this CPU), and libgomp reads the variables once, when the
// library is loaded, before main() runs. A compiled training step is ~20-60 parallel regions of
// 0.05-20 ms with short serial gaps, so the policy decides how each region starts:
//   - sleeping workers (OMP_WAIT_POLICY=PASSIVE) pay a futex wake per region (tens of us in a
//     VM): the 2-core Fashion-MNIST MLP with BatchNorm (W2 of the suite) took 1.78 s per epoch
//     against 1.09-1.13 s with spinning workers, the CNN (W3) 7.2 s against 5.9-6.4 s;
//   - spinning workers burn the core other work needs when the machine is busy: on a loaded
//     2-core machine (load ~12) the CNN step took 150-195 ms of CPU spinning vs 32 ms passive.
// The default here is a bounded spin, GOMP_SPINCOUNT=30000: as fast as libgomp's unbounded
// default on an idle machine (W2 1.09 s, W3 5.9 s, ResNet-18 step 494 ms vs 495 ms at 300k), with
// a tenth of its spinning per region when the machine is shared. On a busy machine set
// OMP_WAIT_POLICY=PASSIVE (the variables the user sets always win).
#pragma once

namespace tern::runtime {

// The GOMP_SPINCOUNT the tern binaries run with unless the user sets OMP_WAIT_POLICY or
// GOMP_SPINCOUNT.
inline constexpr const char* kDefaultSpinCount = "30000";

// If neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, sets GOMP_SPINCOUNT=kDefaultSpinCount and
// re-executes the current program (/proc/self/exe) with the same arguments so that libgomp reads
// it; returns normally when the variables were already set, after the re-execution, or when
// re-executing is not possible (then libgomp's default stays). Call first thing in main().
void use_bounded_openmp_spin(char** argv);

}  // namespace tern::runtime
