// inspect_data_file describes TFRecords of Examples and SequenceExamples, IDX and CSV files, and
// rejects a file in none of these formats.
#include "tern/data/inspect.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tern/data/convert.h"
#include "tern/data/test_util.h"
#include "tern/format/tfrecord_frame.h"
#include "tests/support/idx_writer.h"

namespace tern::data {
namespace {

using ::tern::testing::write_idx_u8;
using testing::TempDir;
using testing::write_file;

// 12 images of 6x5, label i % 3, pixel values from the index.
void write_idx(const TempDir& dir) {
  std::vector<uint8_t> images, labels;
  for (int i = 0; i < 12; ++i) {
    labels.push_back(static_cast<uint8_t>(i % 3));
    for (int p = 0; p < 30; ++p) images.push_back(static_cast<uint8_t>(i * 20 + p * 3));
  }
  write_idx_u8(dir.file("images.idx"), {12, 6, 5}, images);
  write_idx_u8(dir.file("labels.idx"), {12}, labels);
}

TEST(DataInspect, DescribesEachFormat) {
  TempDir dir;
  write_idx(dir);
  convert_image_dataset(dir.file("images.idx"), dir.file("out.tfrecord"),
                        {.labels = dir.file("labels.idx")});
  std::ostringstream tf, idx, csv;
  inspect_data_file(dir.file("out.tfrecord"), {.records = 1}, tf);
  EXPECT_NE(tf.str().find("TFRecord (uncompressed), 12 records"), std::string::npos) << tf.str();
  EXPECT_NE(tf.str().find("image/encoded      bytes_list  [png 6x5x1"), std::string::npos)
      << tf.str();
  EXPECT_NE(tf.str().find("image/class/label: int64_list, 1 value each  -> FixedLen []"),
            std::string::npos)
      << tf.str();
  inspect_data_file(dir.file("images.idx"), {.records = 2}, idx);
  EXPECT_NE(idx.str().find("IDX u8[12, 6, 5], 12 records"), std::string::npos) << idx.str();
  EXPECT_NE(idx.str().find("record 1: u8[6, 5], min 20, max 107"), std::string::npos) << idx.str();
  std::ofstream(dir.file("t.csv")) << "a,b,c\n1,2.5,x\n2,,y\n3,4,\"z,w\"\n";
  inspect_data_file(dir.file("t.csv"), {.records = 1}, csv);
  EXPECT_NE(csv.str().find("3 rows after the header, 3 columns"), std::string::npos) << csv.str();
  EXPECT_NE(csv.str().find("b: float, 1 empty"), std::string::npos) << csv.str();
  EXPECT_NE(csv.str().find("c: string"), std::string::npos) << csv.str();
  {
    TFRecordWriter w(dir.file("seq.tfrecord"));
    SequenceExample ex;
    ex.context["id"] = Feature::int64s({7});
    ex.feature_lists["frames"] = {Feature::floats({1, 2}), Feature::floats({3, 4})};
    w.write(serialize_sequence_example(ex));
    w.write("not a protobuf \xff\xff");
    w.close();
  }
  std::ostringstream seq;
  inspect_data_file(dir.file("seq.tfrecord"), {}, seq);
  EXPECT_NE(seq.str().find("2 records"), std::string::npos) << seq.str();
  EXPECT_NE(seq.str().find("tf.train.SequenceExample"), std::string::npos) << seq.str();
  EXPECT_NE(seq.str().find("frames  2 steps of float_list"), std::string::npos) << seq.str();
  EXPECT_NE(seq.str().find("record 1: 17 bytes, not a tf.train.Example"), std::string::npos)
      << seq.str();
  std::ofstream(dir.file("junk.bin")) << "just some bytes here";
  std::ostringstream junk;
  EXPECT_THROW(inspect_data_file(dir.file("junk.bin"), {}, junk), Error);
}

// Bad-input report F21: an IDX file with a zero dimension printed "Internal: tensor.cc: check
// failed"; a TFRecord whose first header is corrupt was "neither IDX nor TFRecord", hiding the
// CRC error.
TEST(DataInspect, ZeroDimsAndACorruptFirstHeaderAreDescribed) {
  TempDir dir;
  write_idx_u8(dir.file("zero.idx"), {4, 28, 0}, std::vector<uint8_t>{});
  std::ostringstream idx;
  inspect_data_file(dir.file("zero.idx"), {.records = 1}, idx);
  EXPECT_NE(idx.str().find("record 0: u8[28, 0], no values"), std::string::npos) << idx.str();
  std::string frame = format::tfrecord_frame("a record");
  frame[8] ^= 0x01;  // the length CRC
  write_file(dir.file("bad.tfrecord"), frame);
  std::ostringstream tf;
  EXPECT_TERN_ERROR(inspect_data_file(dir.file("bad.tfrecord"), {}, tf), ErrorCode::kDataLoss,
                    "bad.tfrecord: corrupt TFRecord at byte offset 0: length CRC mismatch");
}

}  // namespace
}  // namespace tern::data
