// Runtime entry points: one-time initialization (the linked backends register their devices and
// kernels) and intra-op thread control, delegated to the backends.
#pragma once

namespace tern::runtime {

// Registers every backend this program links (tern/backends/backends.h). Idempotent and
// thread-safe; every runtime entry point calls it.
void initialize();

// Intra-op threads of every registered backend (OpenMP on the CPU). 0 = the number of available
// cores; InvalidArgument outside 0..kMaxThreads (tern/base/thread_pool.h).
void set_intra_op_threads(int n);
// The CPU backend's intra-op threads.
int intra_op_threads();

}  // namespace tern::runtime
