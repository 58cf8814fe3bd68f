// What tern/dist does without an MPI launcher. The collectives themselves run under mpirun in
// tests/dist (CTest dist_mpi_2, dist_mpi_4).
#include "tern/dist/communicator.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include "tern/dist/mpi_communicator.h"
#include "tests/support/random_tensor.h"

#include <cstdlib>
#include <optional>
#include <string>

namespace tern::dist {
namespace {

constexpr const char* kLauncherVars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};

// Unsets the launcher variables for one test and puts them back afterwards.
class WithoutLauncher : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      if (const char* v = std::getenv(kLauncherVars[i])) saved_[i] = v;
      unsetenv(kLauncherVars[i]);
    }
  }
  void TearDown() override {
    for (int i = 0; i < 3; ++i) {
      if (saved_[i]) {
        setenv(kLauncherVars[i], saved_[i]->c_str(), 1);
      } else {
        unsetenv(kLauncherVars[i]);
      }
    }
  }

 private:
  std::optional<std::string> saved_[3];
};

TEST(ReduceModeName, NamesBothModes) {
  EXPECT_STREQ(reduce_mode_name(ReduceMode::kDeterministic), "deterministic");
  EXPECT_STREQ(reduce_mode_name(ReduceMode::kFast), "fast");
}

TEST_F(WithoutLauncher, NotLaunchedWhenNoVariableIsSet) {
  EXPECT_FALSE(launched_by_mpi());
}

TEST_F(WithoutLauncher, EachLauncherVariableCounts) {
  for (const char* var : kLauncherVars) {
    setenv(var, "2", 1);
    EXPECT_TRUE(launched_by_mpi()) << var;
    unsetenv(var);
    EXPECT_FALSE(launched_by_mpi()) << var;
  }
}

TEST_F(WithoutLauncher, WorldIsNullAndMpiStaysUninitialized) {
  EXPECT_EQ(world(), nullptr);
  EXPECT_EQ(world(), nullptr);  // asking twice changes nothing
  int initialized = 1;
  MPI_Initialized(&initialized);
  EXPECT_FALSE(initialized);
}

// (check_mpi's text comes from MPI_Error_string, which Open MPI refuses before MPI_Init.)
TEST(MpiDatatype, RefusesWhatAllReduceCannotSum) {
  EXPECT_EQ(mpi_datatype(DType::kF32), MPI_FLOAT);
  EXPECT_EQ(mpi_datatype(DType::kI64), MPI_INT64_T);
  EXPECT_TERN_ERROR(mpi_datatype(DType::kBF16), ErrorCode::kInvalidArgument, "dtype bf16");
}

}  // namespace
}  // namespace tern::dist
