// Communicator helpers that need no MPI.
#include "tern/dist/communicator.h"

#include <cstdlib>

namespace tern::dist {

const char* reduce_mode_name(ReduceMode mode) {
  return mode == ReduceMode::kDeterministic ? "deterministic" : "fast";
}

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

}  // namespace tern::dist
