// TFRecord framing: the docs/formats.md vectors, decoding one frame, and corruption (flipped
// length, length-CRC, payload and footer bytes, a huge length with a valid CRC, every truncation),
// each found by tfrecord_decode and, in a stream, a DataLoss naming the frame's byte offset.
#include "tern/format/tfrecord_frame.h"

#include <gtest/gtest.h>

#include "tern/format/crc32c.h"
#include "tern/format/little_endian.h"
#include "tern/format/test_util.h"

namespace tern::format {
namespace {

using testing::data_loss;
using testing::unhex;

TEST(TFRecordFrame, MatchesTheFormatsVectors) {
  EXPECT_EQ(tfrecord_frame(""), unhex("00 00 00 00 00 00 00 00 29 03 98 07 d8 ea 82 a2"));
  EXPECT_EQ(tfrecord_frame("hello"),
            unhex("05 00 00 00 00 00 00 00 ea b2 04 3e 68 65 6c 6c 6f bb 1f 1c 19"));
  EXPECT_EQ(tfrecord_frame(unhex("0a 0c 0a 0a 0a 01 78 12 05 1a 03 0a 01 01")),
            unhex("0e 00 00 00 00 00 00 00 c5 e5 69 3f 0a 0c 0a 0a 0a 01 78 12 05 1a 03 0a 01 01 "
                  "5b ce e9 ef"));
  EXPECT_EQ(tfrecord_header(5) + "hello" + tfrecord_footer("hello"), tfrecord_frame("hello"));
}

TEST(TFRecordFrame, DecodesOneFrameFollowedByMore) {
  const std::string bytes = tfrecord_frame("hello") + tfrecord_frame("");
  TFRecordFrame f = tfrecord_decode(bytes);
  ASSERT_TRUE(f.ok()) << f.problem;
  EXPECT_EQ(f.data, "hello");
  EXPECT_EQ(f.length, 5u);
  EXPECT_EQ(f.frame_bytes(), 21u);
  EXPECT_TRUE(f.problem.empty());
  f = tfrecord_decode(std::string_view(bytes).substr(21));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.data, "");
  EXPECT_EQ(f.frame_bytes(), 16u);
}

TEST(TFRecordFrame, FindsEveryKindOfCorruption) {
  const std::string good = tfrecord_frame("hello");
  auto flipped = [&](size_t at) {
    std::string b = good;
    b[at] ^= 0x01;
    return tfrecord_decode(b);
  };
  for (size_t at = 0; at < 12; ++at) {  // a length byte or a length-CRC byte
    const TFRecordFrame f = flipped(at);
    EXPECT_EQ(f.status, TFRecordStatus::kLengthCrcMismatch) << at;
    EXPECT_EQ(f.problem, "length CRC mismatch");
  }
  for (size_t at = 12; at < good.size(); ++at) {  // a payload byte or a footer byte
    const TFRecordFrame f = flipped(at);
    EXPECT_EQ(f.status, TFRecordStatus::kDataCrcMismatch) << at;
    EXPECT_EQ(f.problem, "data CRC mismatch in a record of 5 bytes");
    EXPECT_TRUE(f.data.empty());
  }
  for (size_t cut = 0; cut < good.size(); ++cut) {
    const TFRecordFrame f = tfrecord_decode(std::string_view(good).substr(0, cut));
    EXPECT_EQ(f.status,
              cut < 12 ? TFRecordStatus::kTruncatedHeader : TFRecordStatus::kTruncatedRecord)
        << cut;
  }
  EXPECT_EQ(tfrecord_decode(good.substr(0, 5)).problem,
            "truncated record header (5 bytes at the end of the file)");
  const TFRecordFrame cut = tfrecord_decode(good.substr(0, 19));
  EXPECT_EQ(cut.problem, "truncated record: the header says 5 bytes but the file ends after 7");
  EXPECT_EQ(cut.frame_bytes(), 21u);
}

TEST(TFRecordFrame, HugeLengthWithAValidCrcIsOverTheLimit) {
  std::string huge;
  put_fixed64(huge, (uint64_t{1} << 48) + 1);
  put_fixed32(huge, crc32c_mask(crc32c(huge)));
  EXPECT_EQ(huge, tfrecord_header((uint64_t{1} << 48) + 1));
  const TFRecordFrame f = tfrecord_decode(huge + "x");
  EXPECT_EQ(f.status, TFRecordStatus::kLengthOverLimit);
  EXPECT_EQ(f.problem, "record length 281474976710657 exceeds the limit of 1073741824");
  EXPECT_EQ(tfrecord_decode(tfrecord_frame("hello"), 4).status, TFRecordStatus::kLengthOverLimit);
  EXPECT_TRUE(tfrecord_decode(tfrecord_frame("hello"), 5).ok());
}

TEST(TFRecordSplit, ReadsAStreamAndReportsATruncatedTail) {
  const std::string three = tfrecord_frame("hello") + tfrecord_frame("") + tfrecord_frame("world");
  TFRecordScan s = tfrecord_split(three, "mem");
  EXPECT_EQ(s.records, (std::vector<std::string>{"hello", "", "world"}));
  EXPECT_EQ(s.truncated_at, -1);
  EXPECT_TRUE(tfrecord_split("", "mem").records.empty());
  for (size_t cut : {1u, 4u, 12u, 20u}) {  // into the third frame, which starts at 37
    s = tfrecord_split(std::string_view(three).substr(0, three.size() - cut), "mem");
    EXPECT_EQ(s.records, (std::vector<std::string>{"hello", ""})) << cut;
    EXPECT_EQ(s.truncated_at, 37) << cut;
  }
}

TEST(TFRecordSplit, CorruptionIsDataLossNamingTheByteOffset) {
  const std::string two = tfrecord_frame("hello") + tfrecord_frame("world");
  std::string bad = two;
  bad[21 + 2] ^= 0x40;  // the second frame's length
  EXPECT_EQ(data_loss([&] { tfrecord_split(bad, "f.tfevents"); }),
            "f.tfevents: corrupt TFRecord at byte offset 21: length CRC mismatch");
  bad = two;
  bad[12 + 1] ^= 0x01;  // a payload byte of the first frame
  EXPECT_EQ(data_loss([&] { tfrecord_split(bad, "f.tfevents"); }),
            "f.tfevents: corrupt TFRecord at byte offset 0: data CRC mismatch in a record of 5 "
            "bytes");
  EXPECT_EQ(data_loss([&] { tfrecord_split(two, "mem", 4); }),
            "mem: corrupt TFRecord at byte offset 0: record length 5 exceeds the limit of 4");
  EXPECT_EQ(data_loss([&] { tfrecord_split(std::string(64, '\x5a'), "junk"); }),
            "junk: corrupt TFRecord at byte offset 0: length CRC mismatch");
}

}  // namespace
}  // namespace tern::format
