// Tests for JPEG / PNG decoding and encoding: pixels equal to an independent decoder's (PIL) on
// its own files, round trips, channel conversions, and truncated / corrupt / oversized input as
// DataLoss / ResourceExhausted naming the source, never a crash.
#include "tern/data/image_codec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tern/data/image_test_vectors.h"
#include "tern/data/test_util.h"
#include "tests/support/memory_cap.h"

namespace tern::data {
namespace {

using testing::kPil16BitPng;
using testing::kPilJpeg;
using testing::kPilPalettePng;
using testing::TempDir;
using testing::unhex;

int64_t sum(const Tensor& t) {
  int64_t s = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) s += static_cast<int64_t>(t.get(i));
  return s;
}

std::vector<double> pixel(const Tensor& img, int64_t y, int64_t x) {
  std::vector<double> out;
  const int64_t c = img.shape().dim(2);
  for (int64_t k = 0; k < c; ++k) out.push_back(img.get((y * img.shape().dim(1) + x) * c + k));
  return out;
}

Tensor gradient(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kU8, Shape{h, w, c});
  uint8_t* p = t.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k)
        p[(y * w + x) * c + k] = static_cast<uint8_t>((x * 7 + y * 3 + k * 50) % 256);
  return t;
}

ErrorCode code_of(const std::function<void()>& fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return ErrorCode::kInternal;  // no error: never expected by these tests
}

TEST(ImageCodec, JpegPixelsMatchPil) {
  const std::string jpeg = unhex(kPilJpeg);
  EXPECT_EQ(detect_image_format(jpeg), ImageFormat::kJpeg);
  Tensor img = decode_image(jpeg);
  EXPECT_EQ(img.type().to_string(), "u8[12, 16, 3]");
  EXPECT_EQ(sum(img), 60259);  // PIL's decode of the same bytes
  EXPECT_EQ(pixel(img, 5, 7), (std::vector<double>{104, 103, 101}));
  EXPECT_EQ(pixel(img, 11, 15), (std::vector<double>{255, 213, 210}));
  ImageInfo info = read_image_info(jpeg);
  EXPECT_EQ(info.height, 12);
  EXPECT_EQ(info.width, 16);
  EXPECT_EQ(info.channels, 3);
  EXPECT_EQ(decode_image(jpeg, {.channels = 1}).type().to_string(), "u8[12, 16, 1]");
  Tensor rgba = decode_image(jpeg, {.channels = 4});
  EXPECT_EQ(pixel(rgba, 5, 7), (std::vector<double>{104, 103, 101, 255}));
}

TEST(ImageCodec, PngPixelsMatchPil) {
  Tensor rgba = decode_image(unhex(kPilPalettePng), {.channels = 4});
  EXPECT_EQ(rgba.type().to_string(), "u8[12, 16, 4]");
  EXPECT_EQ(sum(rgba), 103376);
  EXPECT_EQ(pixel(rgba, 5, 7), (std::vector<double>{176, 60, 99, 255}));
  EXPECT_EQ(read_image_info(unhex(kPilPalettePng)).channels, 4);  // palette + tRNS
  EXPECT_TRUE(bitwise_equal(decode_image(unhex(kPilPalettePng)), rgba));
  Tensor g = decode_image(unhex(kPil16BitPng));
  ASSERT_EQ(g.type().to_string(), "u8[12, 16, 1]");
  for (int64_t i = 0; i < g.num_elements(); ++i) {
    const double expected = static_cast<double>((300 * i) >> 8);  // the high byte
    EXPECT_NEAR(g.get(i), expected, 1.0) << i;
  }
}

TEST(ImageCodec, PngRoundTripsExactly) {
  for (int64_t c : {1, 2, 3, 4}) {
    Tensor img = gradient(9, 13, c);
    Tensor back = decode_png(encode_png(img));
    EXPECT_TRUE(bitwise_equal(back, img)) << c;
  }
}

// Smooth (no wrap-around edges), so JPEG's error stays small.
Tensor smooth(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kU8, Shape{h, w, c});
  uint8_t* p = t.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k)
        p[(y * w + x) * c + k] = static_cast<uint8_t>(x * 3 + y * 2 + k * 30);
  return t;
}

TEST(ImageCodec, JpegRoundTripIsClose) {
  for (int64_t c : {1, 3}) {
    Tensor img = smooth(32, 40, c);
    Tensor back = decode_jpeg(encode_jpeg(img, 100));
    ASSERT_EQ(back.type(), img.type());
    EXPECT_LE(max_abs_diff(back, img), 3) << c;
  }
  // A gray JPEG expands to RGB / RGBA with equal color channels.
  const std::string gray = encode_jpeg(smooth(8, 8, 1));
  for (int c : {3, 4}) {
    Tensor rgb = decode_jpeg(gray, {.channels = c});
    ASSERT_EQ(rgb.shape().dim(2), c);
    EXPECT_EQ(pixel(rgb, 3, 5)[0], pixel(rgb, 3, 5)[2]);
    EXPECT_EQ(pixel(rgb, 3, 5)[1], pixel(rgb, 3, 5)[0]);
    if (c == 4) {
      EXPECT_EQ(pixel(rgb, 3, 5)[3], 255);
    }
  }
  EXPECT_EQ(code_of([] { encode_jpeg(gradient(4, 4, 4)); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] {
              encode_png(Tensor(DType::kF32, Shape{4, 4, 3}));
            }),
            ErrorCode::kInvalidArgument);
}

TEST(ImageCodec, TruncatedAndCorruptInputIsDataLoss) {
  const std::string jpeg = encode_jpeg(gradient(40, 48, 3), 90);
  const std::string png = encode_png(gradient(40, 48, 3));
  for (const std::string& good : {jpeg, png}) {
    for (size_t n : {size_t{0}, size_t{2}, size_t{10}, good.size() / 2, good.size() - 3}) {
      std::string msg;
      EXPECT_EQ(code_of([&] { decode_image(good.substr(0, n), {}, "cut.img"); }, &msg),
                ErrorCode::kDataLoss)
          << n;
      EXPECT_NE(msg.find("cut.img"), std::string::npos) << msg;
    }
  }
  // A truncated JPEG decodes (gray-filled) when asked to tolerate it.
  Tensor partial = decode_jpeg(jpeg.substr(0, jpeg.size() / 2), {.tolerate_corrupt = true});
  EXPECT_EQ(partial.type().to_string(), "u8[40, 48, 3]");
  // A flipped byte in the PNG data breaks its CRC.
  std::string bad = png;
  bad[png.size() - 20] ^= 0x55;
  std::string msg;
  EXPECT_EQ(code_of([&] { decode_png(bad, {}, "bad.png"); }, &msg), ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("bad.png: corrupt"), std::string::npos) << msg;
  EXPECT_EQ(code_of([] { decode_image("GIF89a....", {}, "x.gif"); }, &msg), ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("x.gif: not a JPEG or PNG"), std::string::npos) << msg;
}

TEST(ImageCodec, EveryByteFlipFailsCleanlyOrDecodes) {
  const std::string inputs[] = {unhex(kPilJpeg), unhex(kPil16BitPng),
                                encode_png(gradient(5, 6, 3))};
  for (const std::string& good : inputs) {
    for (size_t i = 0; i < good.size(); ++i) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ 0xA5);
      try {
        Tensor t = decode_image(bad, {.max_bytes = 1 << 22});
        EXPECT_EQ(t.rank(), 3);
      } catch (const Error& e) {
        EXPECT_TRUE(e.code() == ErrorCode::kDataLoss || e.code() == ErrorCode::kResourceExhausted)
            << e.what();
      }
    }
  }
}

TEST(ImageCodec, OversizedImagesAreRefusedBeforeAllocating) {
  const std::string png = encode_png(gradient(40, 48, 3));
  std::string msg;
  EXPECT_EQ(code_of([&] { decode_image(png, {.max_bytes = 1000}, "big.png"); }, &msg),
            ErrorCode::kResourceExhausted);
  EXPECT_NE(msg.find("big.png: PNG of 40x48x3"), std::string::npos) << msg;
  const std::string jpeg = encode_jpeg(gradient(40, 48, 3));
  EXPECT_EQ(code_of([&] { decode_image(jpeg, {.max_bytes = 1000}); }),
            ErrorCode::kResourceExhausted);
}

// Bad-input report F11: tiny files whose headers claim huge data made the decoders allocate it
// first: a 61-byte PNG with a tEXt chunk of 2^31-1 bytes (2.1 GB, libpng), a 746-byte JPEG whose
// SOF says 18000x18000 (943 MB). Both must fail as DataLoss within a 256 MiB address-space margin.
TEST(ImageCodec, TinyFilesClaimingHugeDataFailBeforeAllocating) {
  if (!::tern::testing::kMemoryCapWorks) GTEST_SKIP() << "no address-space cap under ASan";
  std::string png = encode_png(gradient(4, 4, 1));
  // Signature and IHDR (33 bytes), then a tEXt chunk header claiming 2^31-1 bytes and 20 of them.
  std::string text_chunk = std::string("\x7f\xff\xff\xff", 4) + "tEXt" + std::string(20, 'k');
  std::string huge_text = png.substr(0, 33) + text_chunk;
  ASSERT_EQ(huge_text.size(), 61u);
  std::string got = ::tern::testing::in_child_with_memory_cap(256 << 20, [&] {
    decode_image(huge_text, {}, "text.png");
    return std::string("decoded");
  });
  EXPECT_NE(got.find("text.png: corrupt PNG (chunk 'tEXt' at byte 33 claims 2147483647 bytes"),
            std::string::npos)
      << got;
  // A JPEG whose SOF0 is patched to 18000x18000.
  std::string jpeg = encode_jpeg(gradient(8, 8, 3));
  const size_t sof = jpeg.find("\xff\xc0");
  ASSERT_NE(sof, std::string::npos);
  for (size_t at : {sof + 5, sof + 7}) {  // height, then width, big-endian
    jpeg[at] = static_cast<char>(18000 >> 8);
    jpeg[at + 1] = static_cast<char>(18000 & 0xff);
  }
  got = ::tern::testing::in_child_with_memory_cap(256 << 20, [&] {
    decode_image(jpeg, {}, "sof.jpg");
    return std::string("decoded");
  });
  EXPECT_NE(got.find("sof.jpg: corrupt JPEG (its header claims 18000x18000 pixels"),
            std::string::npos)
      << got;
}

// Bad-input report F14: whole-file reads of a FIFO blocked forever and of /dev/zero (a .jpg link
// to it) grew to the memory limit. read_file_bytes takes regular files only, without blocking.
TEST(ImageCodec, ReadFileBytesRefusesFifosAndDevices) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("pipe.jpg").c_str(), 0600), 0);
  EXPECT_TERN_ERROR(read_file_bytes(dir.file("pipe.jpg")), ErrorCode::kInvalidArgument,
                    "pipe.jpg: not a regular file");
  EXPECT_TERN_ERROR(read_image_file("/dev/null"), ErrorCode::kInvalidArgument,
                    "/dev/null: not a regular file");
}

TEST(ImageCodec, FilesNameThemselvesInErrors) {
  TempDir dir;
  EXPECT_EQ(code_of([&] { read_image_file(dir.file("missing.jpg")); }), ErrorCode::kNotFound);
  const std::string jpeg = encode_jpeg(gradient(8, 8, 3));
  write_file_bytes(dir.file("ok.jpg"), jpeg);
  EXPECT_EQ(read_image_file(dir.file("ok.jpg")).type().to_string(), "u8[8, 8, 3]");
  write_file_bytes(dir.file("cut.jpg"), jpeg.substr(0, jpeg.size() - 40));
  std::string msg;
  EXPECT_EQ(code_of([&] { read_image_file(dir.file("cut.jpg")); }, &msg), ErrorCode::kDataLoss);
  EXPECT_NE(msg.find(dir.file("cut.jpg")), std::string::npos) << msg;
}

}  // namespace
}  // namespace tern::data
