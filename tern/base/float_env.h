// Denormal (subnormal) floats while tern's kernels run.
//
// On x86 a multiply, add or FMA whose input or result is a denormal float takes a microcode
// assist of ~100+ cycles instead of 4, per element. Training drives some values there: Adam's
// second moment of a weight that stopped getting gradient decays by 0.999 per step, a ReLU MLP's
// gradients shrink, and the Fashion-MNIST MLP of the suite ran its second epoch 1.5x slower than
// its first (42.7k against 66k samples/s) for that reason alone. TensorFlow (its executor and
// thread pools) and XLA run with denormals flushed to zero; so does tern, by default:
//   - the thread that runs an Executable or an eager op has FTZ and DAZ set for the call and its
//     own mode restored afterwards (FlushDenormalsScope);
//   - the intra-op worker threads (OpenMP, owned by the CPU backend) keep the mode set, as
//     TensorFlow's pool threads do.
// Values below 2^-126 (f32) or 2^-1022 (f64) read as zero and results there become zero; bf16
// shares f32's exponent range. TERN_FLUSH_DENORMALS=0 (or set_flush_denormals(false)) keeps IEEE
// gradual underflow everywhere. On CPUs without such a mode (other than x86-64 and AArch64) the
// calls do nothing.
#pragma once

#include <cstdint>

namespace tern {

// Whether kernels run with denormals flushed: TERN_FLUSH_DENORMALS at first use ("0", "false",
// "off": no; default yes), unless set_flush_denormals() was called.
bool flush_denormals();
void set_flush_denormals(bool on);
// Changes each time set_flush_denormals() is called: lets per-thread state (the intra-op workers)
// know when to re-apply the mode.
int flush_denormals_generation();

// Sets (on = true) or clears flush-to-zero and denormals-are-zero for the calling thread, for good.
void set_thread_flush_denormals(bool on);
// Whether the calling thread has both set.
bool thread_flushes_denormals();

// Sets FTZ and DAZ on the calling thread for the scope's life when flush_denormals() is on, and
// puts back the thread's previous mode at its end.
class FlushDenormalsScope {
 public:
  FlushDenormalsScope();
  ~FlushDenormalsScope();
  FlushDenormalsScope(const FlushDenormalsScope&) = delete;
  FlushDenormalsScope& operator=(const FlushDenormalsScope&) = delete;

 private:
  uint64_t saved_ = 0;
  bool restore_ = false;
};

}  // namespace tern
