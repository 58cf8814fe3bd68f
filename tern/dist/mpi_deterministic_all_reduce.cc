// MpiCommunicator's deterministic all-reduce: the buffer's `count` elements are split into size()
// contiguous chunks (the first count % N chunks one element longer); rank j owns chunk j.
//
// 1. Reduce-scatter, point to point. Every rank sends chunk p of its buffer to rank p, in slices
//    of kSliceBytes; the owner receives the N-1 contributions slice by slice into kSlots receive
//    slots (the next slices arrive while this one is summed, and the slots stay in cache) and
//    adds them in rank order: acc = x_0; acc = acc + x_1; ... acc = acc + x_{N-1}. That is the
//    order of one process accumulating N micro-batch gradients, so the bits match it on any
//    transport and any N (additions are never regrouped; `a + b` keeps a as the left operand).
// 2. All-gather: MPI_Allgatherv in place, after every send of step 1 has completed.
//
// Scratch: kSlots x (N-1) slices, at most kSliceBytes each, kept in the communicator.
#include <algorithm>

#include "tern/base/error.h"
#include "tern/dist/mpi_communicator.h"

namespace tern::dist {
namespace {

constexpr int64_t kSliceBytes = int64_t{1} << 20;  // a multiple of every element size
constexpr int kSlots = 2;
constexpr int kReduceScatterTag = 7301;

// out = a + b, element by element (out may be a or b). Unsigned for i64: wraps like MPI_SUM.
template <typename T>
void add(T* out, const T* a, const T* b, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

// Sums one slice in rank order into `mine` (this rank's contribution, in the user's buffer).
// `received` holds the other ranks' slices, rank k at slot (k < rank ? k : k - 1) * stride; the
// one from rank 0 serves as the accumulator until this rank's own term is added.
template <typename T>
void sum_in_rank_order(T* mine, T* received, int64_t stride, int rank, int size, int64_t n) {
  auto from = [&](int k) { return received + (k < rank ? k : k - 1) * stride; };
  T* acc = mine;
  if (rank > 0) {
    acc = from(0);
    for (int k = 1; k < rank; ++k) add(acc, acc, from(k), n);
    add(mine, acc, mine, n);
  }
  for (int k = rank + 1; k < size; ++k) add(mine, mine, from(k), n);
}

void sum_slice(DType dtype, std::byte* mine, std::byte* received, int64_t stride, int rank,
               int size, int64_t n) {
  switch (dtype) {
    case DType::kF32:
      return sum_in_rank_order(reinterpret_cast<float*>(mine), reinterpret_cast<float*>(received),
                               stride, rank, size, n);
    case DType::kF64:
      return sum_in_rank_order(reinterpret_cast<double*>(mine), reinterpret_cast<double*>(received),
                               stride, rank, size, n);
    case DType::kI64:
      return sum_in_rank_order(reinterpret_cast<uint64_t*>(mine),
                               reinterpret_cast<uint64_t*>(received), stride, rank, size, n);
    default:
      TERN_CHECK(false, "dtype ", dtype_name(dtype));
  }
}

}  // namespace

void MpiCommunicator::grow_scratch(int64_t max_chunk_bytes) {
  const int64_t peers = size_ - 1;
  const int64_t slice = std::min(kSliceBytes, max_chunk_bytes);
  const size_t need = static_cast<size_t>(kSlots * peers * slice);
  if (scratch_.size() < need) scratch_ = std::vector<std::byte>(need);
  const int64_t slices = (max_chunk_bytes + kSliceBytes - 1) / kSliceBytes;
  if (send_requests_.size() < static_cast<size_t>(peers * slices)) {
    send_requests_.resize(peers * slices, MPI_REQUEST_NULL);
  }
  if (recv_requests_.size() < static_cast<size_t>(kSlots * peers)) {
    recv_requests_.resize(kSlots * peers, MPI_REQUEST_NULL);
  }
}

void MpiCommunicator::reserve(size_t bytes) {
  if (size_ == 1) return;
  // A chunk of any element size holds at most ceil(bytes / N) + 8 bytes.
  grow_scratch(static_cast<int64_t>((bytes + size_ - 1) / size_ + 8));
}

void MpiCommunicator::deterministic_all_reduce(std::byte* data, int64_t count, DType dtype) {
  const MPI_Datatype type = mpi_datatype(dtype);
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  const int64_t base = count / size_, rem = count % size_;
  auto chunk_offset = [&](int j) { return j * base + std::min<int64_t>(j, rem); };
  auto chunk_length = [&](int j) { return base + (j < rem ? 1 : 0); };
  const int64_t max_chunk = base + (rem > 0 ? 1 : 0);
  grow_scratch(max_chunk * esize);
  const int64_t slice = kSliceBytes / esize;          // elements per message
  const int64_t stride = std::min(slice, max_chunk);  // elements per peer in a slot
  const int64_t slot_elems = (size_ - 1) * stride;    // elements per slot
  const int64_t mine_offset = chunk_offset(rank_), mine_length = chunk_length(rank_);
  const int64_t my_slices = (mine_length + slice - 1) / slice;

  // Receives of slice s go to slot s % kSlots, one request per peer.
  auto post_receives = [&](int64_t s) {
    const int slot = static_cast<int>(s % kSlots);
    const int n = static_cast<int>(std::min(slice, mine_length - s * slice));
    std::byte* base_ptr = scratch_.data() + slot * slot_elems * esize;
    for (int k = 0; k < size_; ++k) {
      if (k == rank_) continue;
      const int q = k < rank_ ? k : k - 1;
      check_mpi(MPI_Irecv(base_ptr + q * stride * esize, n, type, k, kReduceScatterTag, comm_,
                          &recv_requests_[slot * (size_ - 1) + q]),
                "MPI_Irecv");
    }
  };
  for (int64_t s = 0; s < std::min<int64_t>(kSlots, my_slices); ++s) post_receives(s);

  // Every slice of every other rank's chunk, to its owner (peers in turn from rank + 1 on).
  int sends = 0;
  for (int step = 1; step < size_; ++step) {
    const int peer = (rank_ + step) % size_;
    const int64_t offset = chunk_offset(peer), length = chunk_length(peer);
    for (int64_t done = 0; done < length; done += slice) {
      const int n = static_cast<int>(std::min(slice, length - done));
      check_mpi(MPI_Isend(data + (offset + done) * esize, n, type, peer, kReduceScatterTag, comm_,
                          &send_requests_[sends++]),
                "MPI_Isend");
    }
  }

  for (int64_t s = 0; s < my_slices; ++s) {
    const int slot = static_cast<int>(s % kSlots);
    check_mpi(MPI_Waitall(size_ - 1, &recv_requests_[slot * (size_ - 1)], MPI_STATUSES_IGNORE),
              "MPI_Waitall (reduce-scatter receives)");
    const int64_t n = std::min(slice, mine_length - s * slice);
    sum_slice(dtype, data + (mine_offset + s * slice) * esize,
              scratch_.data() + slot * slot_elems * esize, stride, rank_, size_, n);
    if (s + kSlots < my_slices) post_receives(s + kSlots);
  }
  check_mpi(MPI_Waitall(sends, send_requests_.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall (reduce-scatter sends)");

  for (int j = 0; j < size_; ++j) {
    counts_[j] = static_cast<int>(chunk_length(j));
    displs_[j] = static_cast<int>(chunk_offset(j));
  }
  check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts_.data(), displs_.data(),
                           type, comm_),
            "MPI_Allgatherv");
}

}  // namespace tern::dist
