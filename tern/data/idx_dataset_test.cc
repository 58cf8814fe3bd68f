// Tests for the IDX reader: every type code, gzip, corrupt and truncated files, real
// Fashion-MNIST when installed.
#include "tern/data/idx_dataset.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tern/data/test_util.h"

namespace tern::data {
namespace {

using testing::TempDir;
using testing::write_file;

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::string h = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) h += be32(d);
  return h;
}

TEST(Idx, ReadsU8) {
  TempDir dir;
  write_file(dir.file("a.idx"), idx_header(0x08, {2, 3}) + std::string("\x01\x02\x03\x04\x05\xff"));
  Tensor t = read_idx(dir.file("a.idx"));
  EXPECT_EQ(t.type(), (TensorType{DType::kU8, Shape{2, 3}}));
  EXPECT_EQ(t.to_doubles(), (std::vector<double>{1, 2, 3, 4, 5, 255}));
}

TEST(Idx, ReadsTheFormatsDocVector) {
  // docs/formats.md, "IDX": u8 [2, 3] holding 1 to 6, byte for byte.
  const unsigned char bytes[] = {0x00, 0x00, 0x08, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00,
                                 0x00, 0x00, 0x03, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06};
  TempDir dir;
  write_file(dir.file("doc.idx"), std::string(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
  const Tensor t = read_idx(dir.file("doc.idx"));
  EXPECT_EQ(t.type().to_string(), "u8[2, 3]");
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.get(i), static_cast<double>(i + 1));
}

TEST(Idx, ReadsBigEndianTypes) {
  TempDir dir;
  write_file(dir.file("i8"), idx_header(0x09, {2}) + std::string("\xff\x05", 2));
  EXPECT_EQ(read_idx(dir.file("i8")).to_doubles(), (std::vector<double>{-1, 5}));
  write_file(dir.file("i16"), idx_header(0x0B, {2}) + std::string("\xff\xfe\x01\x00", 4));
  Tensor i16 = read_idx(dir.file("i16"));
  EXPECT_EQ(i16.dtype(), DType::kI32);
  EXPECT_EQ(i16.to_doubles(), (std::vector<double>{-2, 256}));
  write_file(dir.file("i32"), idx_header(0x0C, {1}) + std::string("\xff\xff\xff\xfd", 4));
  EXPECT_EQ(read_idx(dir.file("i32")).to_doubles(), (std::vector<double>{-3}));
  write_file(dir.file("f32"), idx_header(0x0D, {1}) + std::string("\x3f\xc0\x00\x00", 4));
  EXPECT_EQ(read_idx(dir.file("f32")).to_doubles(), (std::vector<double>{1.5}));
  write_file(dir.file("f64"),
             idx_header(0x0E, {1}) + std::string("\xc0\x04\x00\x00\x00\x00\x00\x00", 8));
  EXPECT_EQ(read_idx(dir.file("f64")).to_doubles(), (std::vector<double>{-2.5}));
}

TEST(Idx, ReadsGzip) {
  TempDir dir;
  std::string raw = idx_header(0x08, {4, 2});
  for (int i = 0; i < 8; ++i) raw.push_back(static_cast<char>(i * 3));
  write_file(dir.file("a.gz"), testing::gzip_bytes(raw));
  EXPECT_EQ(read_idx(dir.file("a.gz")).to_doubles(),
            (std::vector<double>{0, 3, 6, 9, 12, 15, 18, 21}));
  // Two gzip members concatenated read as one stream.
  std::string half1 = raw.substr(0, 10), half2 = raw.substr(10);
  write_file(dir.file("b.gz"), testing::gzip_bytes(half1) + testing::gzip_bytes(half2));
  EXPECT_EQ(read_idx(dir.file("b.gz")).shape(), Shape({4, 2}));
}

TEST(Idx, CorruptFilesAreDataLossNamingFileAndOffset) {
  TempDir dir;
  const std::string f = dir.file("bad.idx");
  write_file(f, idx_header(0x08, {10, 2}) + std::string(7, 'x'));
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss, "bad.idx: truncated IDX file");
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss, "byte offset 12");
  write_file(f, std::string("\x00\x00\x08", 3));
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss, "byte offset 0");
  write_file(f, std::string("\x00\x00\x08\x02\x00\x00", 6));
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss,
                    "the dimensions needs 8 bytes at byte offset 4");
  write_file(f, "PK\x03\x04 not idx");
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss, "not an IDX file");
  write_file(f, idx_header(0x07, {1}) + "x");
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss, "type code 0x7");
  write_file(f, std::string("\x00\x00\x08\x00", 4));
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss, "rank 0");
  write_file(f, idx_header(0x08, {2}) + "abc");
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss, "trailing bytes");
  EXPECT_TERN_ERROR(read_idx(dir.file("missing.idx")), ErrorCode::kNotFound, "missing.idx");
}

TEST(Idx, HugeHeadersAreRejectedBeforeAllocating) {
  TempDir dir;
  const std::string f = dir.file("huge.idx");
  // 2^32-1 cubed overflows int64.
  write_file(f, idx_header(0x08, {0xffffffffu, 0xffffffffu, 0xffffffffu}));
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss, "bad IDX dimensions");
  // 64 GiB claimed: over the cap.
  write_file(f, idx_header(0x0E, {1u << 30, 8}));
  EXPECT_TERN_ERROR(read_idx(f), ErrorCode::kDataLoss, "more than the limit");
  // Under the cap but far more than a tiny gzip file could hold.
  write_file(dir.file("huge.gz"), testing::gzip_bytes(idx_header(0x08, {1u << 30})));
  EXPECT_TERN_ERROR(read_idx(dir.file("huge.gz")), ErrorCode::kDataLoss, "compressed bytes");
  // Corrupt compressed data.
  std::string gz = testing::gzip_bytes(idx_header(0x08, {64}) + std::string(64, 'q'));
  gz[gz.size() - 6] ^= 0x55;  // the gzip trailer CRC
  write_file(dir.file("bad.gz"), gz);
  EXPECT_TERN_ERROR(read_idx(dir.file("bad.gz")), ErrorCode::kDataLoss,
                    "bad.gz: corrupt compressed data at byte offset");
  // Truncated compressed stream.
  std::string whole = testing::gzip_bytes(idx_header(0x08, {64}) + std::string(64, 'q'));
  write_file(dir.file("cut.gz"), whole.substr(0, whole.size() - 12));
  EXPECT_TERN_ERROR(read_idx(dir.file("cut.gz")), ErrorCode::kDataLoss,
                    "cut.gz: compressed stream truncated at byte offset");
}

TEST(Idx, DatasetZipsFilesByRow) {
  TempDir dir;
  write_file(dir.file("x"), idx_header(0x08, {3, 2}) + std::string("abcdef"));
  write_file(dir.file("y"), idx_header(0x08, {3}) + std::string("\x07\x08\x09"));
  DatasetPtr ds = idx_dataset({dir.file("x"), dir.file("y")});
  EXPECT_EQ(ds->cardinality(), 3);
  std::vector<Element> all = ds->make_iterator().take();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2][0].to_doubles(), (std::vector<double>{'e', 'f'}));
  EXPECT_EQ(all[2][1].get(0), 9);
  write_file(dir.file("z"), idx_header(0x08, {4}) + std::string("\x07\x08\x09\x0a"));
  EXPECT_TERN_ERROR(idx_dataset({dir.file("x"), dir.file("z")}), ErrorCode::kInvalidArgument,
                    "4 rows");
}

TEST(Idx, RealFashionMnist) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  const std::string images = root + "/t10k-images-idx3-ubyte.gz";
  const std::string labels = root + "/t10k-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(images) || !std::filesystem::exists(labels)) {
    GTEST_SKIP() << "Fashion-MNIST not installed at " << root;
  }
  Tensor x = read_idx(images);
  EXPECT_EQ(x.type(), (TensorType{DType::kU8, Shape{10000, 28, 28}}));
  std::vector<Element> batches =
      idx_dataset({images, labels})->shuffle(10000, 1)->batch(1000)->make_iterator().take();
  ASSERT_EQ(batches.size(), 10u);
  EXPECT_EQ(batches[0][0].shape(), Shape({1000, 28, 28}));
  std::vector<int64_t> counts(10, 0);
  for (const Element& b : batches) {
    for (double v : b[1].to_doubles()) ++counts.at(static_cast<size_t>(v));
  }
  for (int64_t c : counts) EXPECT_EQ(c, 1000);  // the test split is balanced
}

}  // namespace
}  // namespace tern::data
