// Communicator: the collectives data-parallel training needs, between the processes ("ranks") of
// one job. MPI (mpi_communicator.h, Open MPI from Debian) is the implementation today; NCCL for
// GPU buffers plugs in beside it later through the same interface. No MPI header appears outside
// tern/dist.
//
// Every collective is called by every rank in the same order (the usual MPI rule); a rank that
// skips one makes the others wait, which the training watchdog (watchdog.h) turns into an abort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tern/tensor/dtype.h"

namespace tern::dist {

// How all_reduce_sum orders its additions.
enum class ReduceMode {
  // Chunk-wise reduce-scatter in which the owner of each chunk adds the ranks' contributions in
  // rank order 0, 1, ..., N-1, then an all-gather: bitwise the same as one process adding the N
  // contributions in that order (gradient accumulation over N micro-batches), on any transport.
  kDeterministic,
  // MPI_Allreduce: the library picks the algorithm and the order. Run-to-run reproducible for a
  // fixed N, buffer size and transport, but not equal to sequential accumulation for N >= 3.
  kFast,
};
const char* reduce_mode_name(ReduceMode mode);

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi", ...
  virtual std::string backend() const = 0;
  // Ranks on this machine (all ranks sharing this rank's host), and this rank's index among them.
  virtual int local_size() const = 0;
  virtual int local_rank() const = 0;

  // Sums `count` elements of `dtype` at `data` over all ranks, in place (every rank ends with the
  // sum). f32, f64 and i64. Scratch memory is kept between calls (grown once to the largest
  // count seen, or up front with reserve()), so a training step allocates nothing.
  virtual void all_reduce_sum(void* data, int64_t count, DType dtype, ReduceMode mode) = 0;
  virtual void reserve(size_t bytes) = 0;
  // Bytes of that scratch memory held now (it only grows).
  virtual size_t scratch_bytes() const = 0;
  // Every rank's `mine`, indexed by rank (sizes may differ between ranks).
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
  // Root's `bytes` bytes at `data` copied to every rank's `data`.
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // Prints "tern: rank R (host H): <message>" to stderr and ends the whole job with `exit_code`
  // (every rank, on every host).
  [[noreturn]] virtual void abort(int exit_code, const std::string& message) = 0;
};

// Whether this process was started by an MPI launcher (mpirun / mpiexec set OMPI_COMM_WORLD_SIZE
// or PMI_SIZE / PMIX_RANK).
bool launched_by_mpi();

// The job's communicator: MPI's world (initialized on first call, finalized at exit) when
// launched_by_mpi(), else null. Thread level MPI_THREAD_SERIALIZED: calls may come from any
// thread, never two at once (the bucket reducer's thread and the training loop take turns).
std::shared_ptr<Communicator> world();

}  // namespace tern::dist
