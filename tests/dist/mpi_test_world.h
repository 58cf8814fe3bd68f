// tests/dist: the job's communicator for the tests (set by dist_mpi_main.cc before any test
// runs), and a count of C++ heap allocations (every operator new in the process).
//
// Every test calls the same collectives in the same order on every rank, unconditionally: a
// failed expectation on one rank must not leave the others waiting in a collective.
#pragma once

#include <cstdint>

#include "tern/dist/communicator.h"

namespace tern::dist::testing {

Communicator& test_world();
int64_t heap_allocations();

}  // namespace tern::dist::testing
