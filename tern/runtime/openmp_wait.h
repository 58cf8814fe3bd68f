// OpenMP wait policy for the tern command and benchmark binaries.
//
// libgomp (the OpenMP runtime Debian's oneDNN uses) lets idle worker threads spin for up to
// ~300k iterations after every parallel region unless OMP_WAIT_POLICY / GOMP_SPINCOUNT say
// otherwise, and it reads those variables once, when the library is loaded, before main() runs.
// A compiled training step is ~40 parallel regions of 0.1-20 ms with short serial gaps; on a
// machine whose cores are also busy with other work, a spinning worker burns the time slices the
// thread doing the real work needs: the Fashion-MNIST CNN step measured 150-195 ms of CPU with the
// default policy against 32 ms with OMP_WAIT_POLICY=PASSIVE (2 cores, load ~12), and 4x the wall
// time. Passive waiting costs one futex wake per region (~40 per step) on an idle machine.
#pragma once

namespace tern::runtime {

// If neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, sets OMP_WAIT_POLICY=PASSIVE and
// re-executes the current program (/proc/self/exe) with the same arguments so that libgomp reads
// it; returns normally when the variables were already set, after the re-execution, or when
// re-executing is not possible (then the default policy stays). Call first thing in main().
void use_passive_openmp_wait(char** argv);

}  // namespace tern::runtime
