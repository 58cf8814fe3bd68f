// DataParallel pieces that need no MPI: the per-worker blobs of a checkpoint and the bucket plan.
#include "tern/dist/data_parallel.h"

#include <gtest/gtest.h>

namespace tern::dist {
namespace {

TEST(RankBlobs, PackAndUnpackEveryRanksState) {
  const std::vector<std::string> blobs = {"rank zero's iterator", "", std::string("a\0b\n", 4)};
  const std::string packed = pack_rank_blobs(blobs);
  EXPECT_TRUE(is_packed_rank_blobs(packed));
  EXPECT_FALSE(is_packed_rank_blobs("an iterator state of one process"));
  EXPECT_EQ(unpack_rank_blobs(packed, "ckpt"), blobs);
}

TEST(RankBlobs, DamageIsDataLossNamingTheFileAndOffset) {
  const std::string packed = pack_rank_blobs({"abcdef", "gh"});
  auto error_of = [](const std::string& bytes) {
    try {
      unpack_rank_blobs(bytes, "ckpt-7/data_iterator.bin");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(packed.substr(0, packed.size() - 1)).find("truncated"), std::string::npos);
  EXPECT_NE(error_of(packed + "x").find("trailing"), std::string::npos);
  EXPECT_NE(error_of("not a header").find("ckpt-7/data_iterator.bin"), std::string::npos);
  std::string bad = packed;
  bad[bad.find('\n') + 1] = 'z';  // the count
  EXPECT_NE(error_of(bad).find("byte"), std::string::npos);
  // A size with a leading zero ("06" for 6) is not the canonical form pack writes.
  std::string padded = packed;
  padded.insert(padded.find('\n', padded.find('\n') + 1) + 1, "0");
  EXPECT_NE(error_of(padded).find("bad per-worker header"), std::string::npos) << padded;
}

TEST(BucketPlan, FirstBucketSmallThenLargeOneDtypePerBucket) {
  // 4-byte floats: the first bucket closes at 1 KiB, the next ones at 4 KiB; a gradient larger
  // than the cap gets a bucket of its own; f64 gradients never share an f32 bucket.
  const std::vector<TensorType> grads = {
      {DType::kF32, Shape{200}},   // 800 B
      {DType::kF32, Shape{100}},   // 400 B: would exceed 1 KiB -> bucket 1
      {DType::kF32, Shape{500}},   // 2000 B: bucket 1 (2400 B)
      {DType::kF64, Shape{10}},    // its own dtype -> bucket 2
      {DType::kF32, Shape{2000}},  // 8000 B > 4 KiB: bucket 3 alone
      {DType::kF32, Shape{10}},    // bucket 4
  };
  BucketOptions o;
  o.first_bucket_bytes = 1024;
  o.bucket_bytes = 4096;
  std::vector<Bucket> b = plan_buckets(grads, o);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].members, (std::vector<int>{0}));
  EXPECT_EQ(b[1].members, (std::vector<int>{1, 2}));
  EXPECT_EQ(b[1].offsets, (std::vector<int64_t>{0, 100}));
  EXPECT_EQ(b[1].elements, 600);
  EXPECT_EQ(b[2].dtype, DType::kF64);
  EXPECT_EQ(b[3].members, (std::vector<int>{4}));
  EXPECT_EQ(b[4].members, (std::vector<int>{5}));
}

}  // namespace
}  // namespace tern::dist
