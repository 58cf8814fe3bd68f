// Runtime entry points: one-time initialization (kernel registration, backends) and intra-op
// thread control.
#pragma once

namespace tern::runtime {

// Registers reference and CPU kernels and the CPU backend. Idempotent and thread-safe; every
// runtime entry point calls it.
void initialize();

// Intra-op threads (OpenMP, shared with oneDNN). 0 = the number of available cores.
void set_intra_op_threads(int n);
int intra_op_threads();

}  // namespace tern::runtime
