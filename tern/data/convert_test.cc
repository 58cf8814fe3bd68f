// convert_image_dataset round trips: IDX -> TFRecord -> tensors (encoded and raw pixels), IDX ->
// image folder (resized, RGB, named classes), folder -> TFRecord -> folder byte for byte.
#include "tern/data/convert.h"

#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>

#include "tern/data/image_codec.h"
#include "tern/data/test_util.h"
#include "tern/data/tfrecord_writer.h"
#include "tests/support/idx_writer.h"

namespace tern::data {
namespace {

using ::tern::testing::write_idx_u8;
using testing::TempDir;

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

TEST(DataConvert, IdxToTFRecordParsesBackToTheSamePixels) {
  TempDir dir;
  write_idx(dir);
  ConvertResult r =
      convert_image_dataset(dir.file("images.idx"), dir.file("out.tfrecord"),
                            {.labels = dir.file("labels.idx"), .compression = "gzip"});
  EXPECT_EQ(r.written, 12);
  const Tensor images = read_idx(dir.file("images.idx"));
  DatasetPtr ds = parse_example(
      tfrecord_dataset({dir.file("out.tfrecord")}, {.compression = Compression::kGzip}),
      {fixed_len_feature("image/encoded", FeatureKind::kBytes),
       fixed_len_feature("image/class/label", FeatureKind::kInt64)});
  std::vector<Element> all = ds->make_iterator().take();
  ASSERT_EQ(all.size(), 12u);
  for (size_t i = 0; i < all.size(); ++i) {
    const Tensor img = decode_image(tensor_bytes(all[i][0]));
    EXPECT_EQ(img.type().to_string(), "u8[6, 5, 1]");
    EXPECT_TRUE(
        bitwise_equal(img.reshape(Shape{6, 5}),
                      images.slice_rows(static_cast<int64_t>(i), static_cast<int64_t>(i) + 1)
                          .reshape(Shape{6, 5})));
    EXPECT_EQ(all[i][1].get(0), static_cast<double>(i % 3));
  }
  // Raw bytes reinterpret straight into the image shape.
  convert_image_dataset(dir.file("images.idx"), dir.file("raw.tfrecord"),
                        {.labels = dir.file("labels.idx"), .image_format = "raw"});
  FeatureSpec raw = fixed_len_feature("image/encoded", FeatureKind::kBytes, {6, 5, 1});
  Element first =
      *parse_example(tfrecord_dataset({dir.file("raw.tfrecord")}), {raw})->make_iterator().next();
  EXPECT_TRUE(
      bitwise_equal(first[0].reshape(Shape{6, 5}), images.slice_rows(0, 1).reshape(Shape{6, 5})));
}
TEST(DataConvert, IdxToImageFolderAndBack) {
  TempDir dir;
  write_idx(dir);
  const std::string folder = dir.file("folder");
  ConvertOptions o{.labels = dir.file("labels.idx"),
                   .image_format = "jpeg",
                   .height = 16,
                   .width = 16,
                   .channels = 3,
                   .class_names = {"zero", "one", "two"}};
  EXPECT_EQ(convert_image_dataset(dir.file("images.idx"), folder, o).written, 12);
  ImageFolder f = list_image_folder(folder);
  EXPECT_EQ(f.class_names, (std::vector<std::string>{"one", "two", "zero"}));
  ASSERT_EQ(f.files.size(), 12u);
  EXPECT_EQ(read_image_file(f.files[0]).type().to_string(), "u8[16, 16, 3]");
  EXPECT_TRUE(std::filesystem::exists(folder + "/zero/00.jpg"));
  EXPECT_TRUE(std::filesystem::exists(folder + "/two/11.jpg"));
  // Folder -> TFRecord keeps the files' bytes; TFRecord -> folder writes them back unchanged.
  EXPECT_EQ(convert_image_dataset(folder, dir.file("f.tfrecord"), {}).written, 12);
  EXPECT_EQ(convert_image_dataset(dir.file("f.tfrecord"), dir.file("back"), {}).written, 12);
  ImageFolder back = list_image_folder(dir.file("back"));
  EXPECT_EQ(back.class_names, f.class_names);
  ASSERT_EQ(back.files.size(), f.files.size());
  for (size_t i = 0; i < f.files.size(); ++i) {
    EXPECT_EQ(read_file_bytes(back.files[i]), read_file_bytes(f.files[i])) << i;
  }
  EXPECT_THROW(convert_image_dataset(dir.file("images.idx"), dir.file("x"), {}),
               Error);                                                    // no labels
  EXPECT_THROW(convert_image_dataset(folder, dir.file("y"), {}), Error);  // folder->folder
}

TEST(DataConvert, ReportsProgressOncePerImage) {
  TempDir dir;
  write_idx(dir);
  for (const std::string& out : {dir.file("p.tfrecord"), dir.file("folder")}) {
    std::vector<std::pair<int64_t, int64_t>> calls;
    ConvertOptions o{.labels = dir.file("labels.idx")};
    o.progress = [&](int64_t done, int64_t total) { calls.push_back({done, total}); };
    convert_image_dataset(dir.file("images.idx"), out, o);
    ASSERT_EQ(calls.size(), 13u) << out;  // (0, 12), then one per image
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].first, static_cast<int64_t>(i)) << out;
      EXPECT_EQ(calls[i].second, 12) << out;
    }
  }
}

TEST(DataConvert, BadOptionsNameTheOption) {
  TempDir dir;
  write_idx(dir);
  EXPECT_TERN_ERROR(convert_image_dataset(dir.file("images.idx"), dir.file("o.tfrecord"),
                                          {.image_format = "gif"}),
                    ErrorCode::kInvalidArgument, "--image-format must be jpeg, png or raw");
  EXPECT_TERN_ERROR(
      convert_image_dataset(dir.file("images.idx"), dir.file("o.tfrecord"), {.channels = 2}),
      ErrorCode::kInvalidArgument, "--channels must be 1 or 3");
}

// Bad-input report F20: --class-names "../escaped0,..." wrote a class folder outside the output.
TEST(DataConvert, ClassNamesMustBeFolderNamesInsideTheOutput) {
  TempDir dir;
  write_idx(dir);
  for (const char* bad : {"../escaped", "..", "a/b", ""}) {
    SCOPED_TRACE(bad);
    EXPECT_TERN_ERROR(
        convert_image_dataset(dir.file("images.idx"), dir.file("folder"),
                              {.labels = dir.file("labels.idx"), .class_names = {bad, "b", "c"}}),
        ErrorCode::kInvalidArgument, "is not a folder name");
  }
  EXPECT_TERN_ERROR(
      convert_image_dataset(dir.file("images.idx"), dir.file("folder"),
                            {.labels = dir.file("labels.idx"), .class_names = {"a", "b", "a"}}),
      ErrorCode::kInvalidArgument, "'a' is given twice");
  EXPECT_FALSE(std::filesystem::exists(dir.file("escaped")));
}

// Bad-input report F9: on a full disk, conversion to a folder said only "write error" and a
// conversion to TFRecord left a partial file. A full 8 KiB tmpfs (root only; skipped where
// mounting is not permitted).
TEST(DataConvert, AFullDiskIsNamedAndLeavesNoPartialOutput) {
  TempDir dir;
  write_idx(dir);
  const std::string small = dir.file("small");
  std::filesystem::create_directories(small);
  if (::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=8k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  {
    std::ofstream filler(small + "/filler", std::ios::binary);
    filler << std::string(64 << 10, 'x');  // more than fits: the disk is full after this
  }
  std::string folder_error, tfrecord_error;
  try {
    convert_image_dataset(dir.file("images.idx"), small + "/folder",
                          {.labels = dir.file("labels.idx")});
  } catch (const Error& e) {
    folder_error = e.what();
  }
  try {
    convert_image_dataset(dir.file("images.idx"), small + "/out.tfrecord",
                          {.labels = dir.file("labels.idx")});
  } catch (const Error& e) {
    tfrecord_error = e.what();
  }
  const bool partial = std::filesystem::exists(small + "/out.tfrecord");
  ::umount(small.c_str());
  EXPECT_NE(folder_error.find("No space left on device"), std::string::npos) << folder_error;
  EXPECT_NE(tfrecord_error.find("No space left on device"), std::string::npos) << tfrecord_error;
  EXPECT_FALSE(partial) << "a partial out.tfrecord was left behind";
}

// Bad-input report F20: images copied without re-encoding were copied unchecked, so a corrupt
// JPEG or PNG went into the output and failed only when training read it.
TEST(DataConvert, CopiedImagesAreCheckedOnTheWay) {
  TempDir dir;
  Tensor image(DType::kU8, Shape{6, 5, 1});
  for (int64_t p = 0; p < 30; ++p) image.set(p, static_cast<double>(p * 7));
  const std::string jpeg = encode_jpeg(image);
  std::filesystem::create_directories(dir.file("in/a"));
  write_file_bytes(dir.file("in/a/good.jpg"), jpeg);
  write_file_bytes(dir.file("in/a/cut.jpg"), jpeg.substr(0, jpeg.size() / 2));
  EXPECT_TERN_ERROR(convert_image_dataset(dir.file("in"), dir.file("out.tfrecord"), {}),
                    ErrorCode::kDataLoss, "cut.jpg: corrupt");
  std::string png = encode_png(image);
  png[png.size() - 20] ^= 0x55;  // breaks a CRC
  Example ex;
  ex.features["image/encoded"] = Feature::bytes({png});
  ex.features["image/class/label"] = Feature::int64s({0});
  {
    TFRecordWriter w(dir.file("bad_png.tfrecord"));
    w.write(serialize_example(ex));
  }
  EXPECT_TERN_ERROR(convert_image_dataset(dir.file("bad_png.tfrecord"), dir.file("folder"), {}),
                    ErrorCode::kDataLoss, "bad_png.tfrecord record 0: corrupt or truncated PNG");
}

// Bad-input report F13: a raw image with h = 2^62, w = 4 made h * w * c wrap to the byte count
// and pass the size check (signed overflow, UBSan); the check now divides.
TEST(DataConvert, RawImageSizesThatOverflowAreRefused) {
  TempDir dir;
  Example ex;
  ex.features["image/encoded"] = Feature::bytes({std::string(16, '\x7f')});
  ex.features["image/class/label"] = Feature::int64s({1});
  ex.features["image/height"] = Feature::int64s({int64_t{1} << 62});
  ex.features["image/width"] = Feature::int64s({4});
  ex.features["image/channels"] = Feature::int64s({1});
  {
    TFRecordWriter w(dir.file("raw.tfrecord"));
    w.write(serialize_example(ex));
  }
  EXPECT_TERN_ERROR(convert_image_dataset(dir.file("raw.tfrecord"), dir.file("folder"), {}),
                    ErrorCode::kInvalidArgument,
                    "16 raw bytes for a 4611686018427387904x4x1 image");
  ex.features["image/height"] = Feature::int64s({4});
  {
    TFRecordWriter w(dir.file("ok.tfrecord"));
    w.write(serialize_example(ex));
  }
  EXPECT_EQ(convert_image_dataset(dir.file("ok.tfrecord"), dir.file("folder"), {}).written, 1);
}

}  // namespace
}  // namespace tern::data
