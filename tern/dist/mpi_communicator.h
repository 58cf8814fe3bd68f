// MpiCommunicator: the Communicator over an MPI communicator (a duplicate of MPI_COMM_WORLD made
// by world()). Every MPI error comes back as a tern::Error (kUnavailable) naming the operation and
// MPI's error string: the communicator uses MPI_ERRORS_RETURN.
//
// all_reduce_sum:
//   kFast           MPI_Allreduce in place (pieces of at most 2^30 elements).
//   kDeterministic  mpi_deterministic_all_reduce.cc: a reduce-scatter (chunk j of the buffer
//                   belongs to rank j, which adds the N contributions in rank order, slice by
//                   slice as they arrive) and an all-gather, both over point-to-point messages.
// Scratch (receive slots, request arrays) lives here and only grows; reserve() grows it up front.
//
// Not thread-safe: calls may come from any thread, never two at once (MPI_THREAD_SERIALIZED).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tern/dist/communicator.h"

namespace tern::dist {

// Throws tern::Error (kUnavailable) "MPI <op> failed: <MPI's error string>" unless rc is
// MPI_SUCCESS.
void check_mpi(int rc, const char* op);
// The MPI type of an all_reduce_sum dtype (f32, f64, i64); InvalidArgument naming any other.
MPI_Datatype mpi_datatype(DType dtype);

class MpiCommunicator : public Communicator {
 public:
  // Duplicates `parent` (the new communicator returns errors instead of aborting).
  explicit MpiCommunicator(MPI_Comm parent);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  int local_size() const override { return local_size_; }
  int local_rank() const override { return local_rank_; }

  void all_reduce_sum(void* data, int64_t count, DType dtype, ReduceMode mode) override;
  void reserve(size_t bytes) override;
  size_t scratch_bytes() const override { return scratch_.size(); }
  std::vector<std::string> all_gather(const std::string& mine) override;
  void broadcast(void* data, size_t bytes, int root) override;
  void barrier() override;
  [[noreturn]] void abort(int exit_code, const std::string& message) override;

 private:
  // kDeterministic for `count` elements of `dtype` (f32, f64 or i64); in
  // mpi_deterministic_all_reduce.cc.
  void deterministic_all_reduce(std::byte* data, int64_t count, DType dtype);
  // Grows scratch_ and the request arrays for a reduce-scatter whose largest chunk holds
  // `max_chunk_bytes`.
  void grow_scratch(int64_t max_chunk_bytes);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  std::string host_;
  // Receive slots of the deterministic reduce-scatter, and its requests; grown only.
  std::vector<std::byte> scratch_;
  std::vector<MPI_Request> send_requests_;
  std::vector<MPI_Request> recv_requests_;
};

}  // namespace tern::dist
