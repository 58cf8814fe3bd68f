// MpiCommunicator: MPI start-up and shut-down (world()), error translation, and every collective
// but the deterministic reduce-scatter (mpi_deterministic_all_reduce.cc).
#include "tern/dist/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "tern/base/error.h"

namespace tern::dist {

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kF64:
      return MPI_DOUBLE;
    case DType::kI64:
      return MPI_INT64_T;
    default:
      throw_error(ErrorCode::kInvalidArgument, "all_reduce_sum: dtype ", dtype_name(dtype),
                  " is not supported (f32, f64, i64)");
  }
}

namespace {

// Largest piece one MPI_Allreduce moves (counts are int).
constexpr int64_t kMaxPieceElements = int64_t{1} << 30;

// MPI for the whole process: initialized by the first world() call, finalized when static
// objects are destroyed at exit. A program that initialized MPI itself keeps it (and finalizes).
class MpiSession {
 public:
  MpiSession() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
                "MPI_Init_thread");
      owns_mpi_ = true;
    }
    int provided = 0;
    check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
      error_ = str_cat("MPI provides thread level ", provided,
                       ", tern needs MPI_THREAD_SERIALIZED (", MPI_THREAD_SERIALIZED, ")");
      return;
    }
    world_ = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD);
  }
  ~MpiSession() {
    world_.reset();  // frees the duplicate unless a caller still holds it (then MPI_Finalize does)
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) MPI_Finalize();
  }
  const std::shared_ptr<MpiCommunicator>& world() const {
    if (!error_.empty()) throw_error(ErrorCode::kFailedPrecondition, error_);
    return world_;
  }

 private:
  bool owns_mpi_ = false;
  std::string error_;
  std::shared_ptr<MpiCommunicator> world_;
};

}  // namespace

void check_mpi(int rc, const char* op) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw_error(ErrorCode::kUnavailable, "MPI ", op,
              " failed: ", len > 0 ? std::string(text, len) : "unknown error", " (error code ", rc,
              ")");
}

std::shared_ptr<Communicator> world() {
  if (!launched_by_mpi()) return nullptr;
  static MpiSession session;
  return session.world();
}

MpiCommunicator::MpiCommunicator(MPI_Comm parent) {
  check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  check_mpi(MPI_Comm_rank(local, &local_rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(local, &local_size_), "MPI_Comm_size");
  check_mpi(MPI_Comm_free(&local), "MPI_Comm_free");
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  check_mpi(MPI_Get_processor_name(host, &len), "MPI_Get_processor_name");
  host_.assign(host, len);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiCommunicator::all_reduce_sum(void* data, int64_t count, DType dtype, ReduceMode mode) {
  const MPI_Datatype type = mpi_datatype(dtype);
  TERN_CHECK_ARG(count >= 0, "all_reduce_sum: count ", count, " is negative");
  TERN_CHECK_ARG(data != nullptr || count == 0, "all_reduce_sum: data is null for ", count,
                 " elements");
  if (size_ == 1 || count == 0) return;
  auto* bytes = static_cast<std::byte*>(data);
  if (mode == ReduceMode::kDeterministic) return deterministic_all_reduce(bytes, count, dtype);
  const size_t elem_size = dtype_size(dtype);
  for (int64_t done = 0; done < count; done += kMaxPieceElements) {
    const int n = static_cast<int>(std::min(kMaxPieceElements, count - done));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, bytes + done * elem_size, n, type, MPI_SUM, comm_),
              "MPI_Allreduce");
  }
}

std::vector<std::string> MpiCommunicator::all_gather(const std::string& mine) {
  TERN_CHECK_ARG(mine.size() <= INT_MAX, "all_gather: ", mine.size(), " bytes is over INT_MAX");
  const int my_size = static_cast<int>(mine.size());
  std::vector<int> sizes(size_), offsets(size_);
  check_mpi(MPI_Allgather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm_), "MPI_Allgather");
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[r] = static_cast<int>(std::min<int64_t>(total, INT_MAX));
    total += sizes[r];
  }
  // Every rank sees the same sizes, so every rank refuses together.
  TERN_CHECK_ARG(total <= INT_MAX, "all_gather: ", total, " bytes in all is over INT_MAX");
  std::string all(static_cast<size_t>(total), '\0');
  check_mpi(MPI_Allgatherv(mine.data(), my_size, MPI_BYTE, all.data(), sizes.data(), offsets.data(),
                           MPI_BYTE, comm_),
            "MPI_Allgatherv");
  std::vector<std::string> out(size_);
  for (int r = 0; r < size_; ++r) out[r] = all.substr(offsets[r], sizes[r]);
  return out;
}

void MpiCommunicator::broadcast(void* data, size_t bytes, int root) {
  TERN_CHECK_ARG(root >= 0 && root < size_, "broadcast: root ", root, " is not a rank (size ",
                 size_, ")");
  TERN_CHECK_ARG(data != nullptr || bytes == 0, "broadcast: data is null for ", bytes, " bytes");
  constexpr size_t kMaxPiece = size_t{1} << 30;
  auto* p = static_cast<std::byte*>(data);
  for (size_t done = 0; done < bytes; done += kMaxPiece) {
    const int n = static_cast<int>(std::min(kMaxPiece, bytes - done));
    check_mpi(MPI_Bcast(p + done, n, MPI_BYTE, root, comm_), "MPI_Bcast");
  }
}

void MpiCommunicator::barrier() {
  check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

void MpiCommunicator::abort(int exit_code, const std::string& message) {
  std::fprintf(stderr, "tern: rank %d (host %s): %s\n", rank_, host_.c_str(), message.c_str());
  std::fflush(stderr);
  MPI_Abort(comm_, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; if it ever does, this rank still ends
}

}  // namespace tern::dist
