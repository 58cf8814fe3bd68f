// RecordBlocks: records cut by block boundaries and records longer than a block come back whole
// and in order, with their indices; gzip files read the same; an empty file has no records.
#include "tern/transform/records.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tern/base/philox.h"
#include "tern/data/tfrecord_writer.h"
#include "tern/transform/test_util.h"

namespace tern::transform {
namespace {

std::vector<std::string> read_all(const std::string& path, int64_t block, int64_t* blocks_seen) {
  RecordBlocks blocks(path, block);
  std::vector<std::string> out;
  std::vector<std::string_view> recs;
  *blocks_seen = 0;
  while (blocks.next(recs)) {
    EXPECT_EQ(blocks.first_index(), static_cast<int64_t>(out.size()));
    EXPECT_FALSE(recs.empty());
    out.insert(out.end(), recs.begin(), recs.end());
    ++*blocks_seen;
  }
  return out;
}

TEST(RecordBlocks, WholeRecordsAcrossBlocks) {
  testing::TempDir dir;
  std::vector<std::string> want;
  PhiloxStream rng(5, 0);
  for (int i = 0; i < 60; ++i) {
    std::string r(rng.next_below(i % 10 == 9 ? 20000 : 3000), '\0');
    for (char& c : r) c = static_cast<char>(rng.next_u32());
    want.push_back(r);
  }
  for (auto compression : {data::Compression::kNone, data::Compression::kGzip}) {
    const std::string path = dir / "r.tfrecord";
    {
      data::TFRecordWriter w(path, compression);
      for (const auto& r : want) w.write(r);
      w.close();
    }
    int64_t small_blocks = 0, one_block = 0;
    EXPECT_EQ(read_all(path, 4096, &small_blocks), want);  // records up to 5x the block
    EXPECT_EQ(read_all(path, int64_t{1} << 24, &one_block), want);
    EXPECT_GT(small_blocks, 10);
    EXPECT_EQ(one_block, 1);
  }
  std::ofstream(dir / "empty.tfrecord").close();
  int64_t n = 0;
  EXPECT_TRUE(read_all(dir / "empty.tfrecord", 4096, &n).empty());
  EXPECT_EQ(n, 0);
}

TEST(RecordBlocks, DeferredDataCrcsAreCheckedByRange) {
  testing::TempDir dir;
  const std::string path = dir / "r.tfrecord";
  {
    data::TFRecordWriter w(path);
    for (int i = 0; i < 5; ++i) w.write(std::string(100, static_cast<char>('a' + i)));
    w.close();
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[3 * 116 + 12 + 50] ^= 1;  // record 3's data (frames of 12 + 100 + 4 bytes)
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  RecordBlocks deferred(path, 4096, RecordBlocks::DataCrc::kDeferred);
  std::vector<std::string_view> recs;
  ASSERT_TRUE(deferred.next(recs));
  ASSERT_EQ(recs.size(), 5u);
  deferred.check_data_crcs(0, 3);
  deferred.check_data_crcs(4, 5);
  try {
    deferred.check_data_crcs(2, 5);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(std::string(e.what()).find("r.tfrecord: corrupt TFRecord at byte offset 348: data "
                                         "CRC mismatch in a record of 100 bytes"),
              std::string::npos)
        << e.what();
  }
  RecordBlocks checked(path, 4096);
  EXPECT_THROW(checked.next(recs), Error);
}

}  // namespace
}  // namespace tern::transform
