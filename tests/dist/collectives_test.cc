// Communicator's identity, all_gather, broadcast and barrier under mpirun.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/dist/mpi_test_world.h"
#include "tests/support/random_tensor.h"

namespace tern::dist::testing {
namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

TEST(Communicator, RankSizeAndLocalRanksMatchTheLauncher) {
  Communicator& comm = test_world();
  EXPECT_EQ(comm.backend(), "mpi");
  EXPECT_EQ(comm.size(), env_int("OMPI_COMM_WORLD_SIZE"));
  EXPECT_EQ(comm.rank(), env_int("OMPI_COMM_WORLD_RANK"));
  EXPECT_EQ(comm.local_size(), env_int("OMPI_COMM_WORLD_LOCAL_SIZE"));
  EXPECT_EQ(comm.local_rank(), env_int("OMPI_COMM_WORLD_LOCAL_RANK"));
  EXPECT_EQ(world().get(), &comm) << "world() hands out one communicator";
  comm.barrier();
}

// Rank r's string: empty for rank 0, else 1000 r + 1 bytes with a NUL inside.
std::string gather_payload(int rank) {
  if (rank == 0) return "";
  std::string s(1000 * rank, static_cast<char>('a' + rank % 26));
  s += '\0';
  return s + std::to_string(rank);
}

TEST(AllGather, DifferentSizesPerRankIncludingEmpty) {
  Communicator& comm = test_world();
  const std::vector<std::string> all = comm.all_gather(gather_payload(comm.rank()));
  ASSERT_EQ(all.size(), static_cast<size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(all[r], gather_payload(r)) << "rank " << r;
}

TEST(AllGather, EveryRankEmpty) {
  const std::vector<std::string> all = test_world().all_gather("");
  EXPECT_EQ(all, std::vector<std::string>(test_world().size()));
}

TEST(Broadcast, FromFirstAndLastRank) {
  Communicator& comm = test_world();
  for (int root : {0, comm.size() - 1}) {
    std::vector<uint8_t> buf(100003);
    for (size_t i = 0; i < buf.size(); ++i) {
      buf[i] = comm.rank() == root ? static_cast<uint8_t>(i * 31 + root) : 0xee;
    }
    comm.broadcast(buf.data(), buf.size(), root);
    size_t wrong = 0;
    for (size_t i = 0; i < buf.size(); ++i) wrong += buf[i] != static_cast<uint8_t>(i * 31 + root);
    EXPECT_EQ(wrong, 0u) << "root " << root << ", rank " << comm.rank();
  }
  comm.broadcast(nullptr, 0, 0);
}

TEST(Broadcast, RootOutsideTheJobIsRefused) {
  Communicator& comm = test_world();
  char c = 0;
  EXPECT_TERN_ERROR(comm.broadcast(&c, 1, comm.size()), ErrorCode::kInvalidArgument,
                    "root " + std::to_string(comm.size()));
  EXPECT_TERN_ERROR(comm.broadcast(&c, 1, -1), ErrorCode::kInvalidArgument, "root -1");
}

}  // namespace
}  // namespace tern::dist::testing
