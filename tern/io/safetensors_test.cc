// safetensors: the docs/formats.md test vector, round trips, and corrupt files.
#include "tern/io/safetensors.h"

#include <gtest/gtest.h>

#include "tests/support/random_tensor.h"

namespace tern::io {
namespace {

std::string hex(const std::string& s) {
  static const char* k = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += k[c >> 4];
    out += k[c & 15];
  }
  return out;
}

TEST(Safetensors, MatchesTheReferenceVector) {
  std::string bytes = encode_safetensors({{"w", Tensor::from_values(DType::kF32, {2}, {1, 2})}});
  EXPECT_EQ(bytes.size(), 72u);
  EXPECT_EQ(hex(bytes),
            "3800000000000000"
            "7b2277223a7b226474797065223a22463332222c227368617065223a5b325d2c22646174615f6f66667365"
            "7473223a5b302c385d7d7d2020"
            "0000803f00000040");
}

TEST(Safetensors, RoundTripsEveryDType) {
  NamedTensors in;
  int i = 0;
  for (DType d : kAllDTypes)
    in.push_back({str_cat("t", i++), testing::random_tensor(d, {3, 2}, 7, 0, 5)});
  in.push_back({"scalar", Tensor::scalar(DType::kF32, 3.5)});
  in.push_back({"empty", Tensor(DType::kF32, {0, 4})});
  SafetensorsFile out = decode_safetensors(encode_safetensors(in, {{"step", "12"}}), "mem");
  EXPECT_EQ(out.metadata.at("step"), "12");
  ASSERT_EQ(out.tensors.size(), in.size());
  for (const auto& [name, t] : in) {
    bool found = false;
    for (const auto& [n2, t2] : out.tensors) {
      if (n2 == name) {
        found = true;
        EXPECT_TRUE(bitwise_equal(t, t2)) << name;
      }
    }
    EXPECT_TRUE(found) << name;
  }
}

TEST(Safetensors, CorruptFilesAreDataLoss) {
  std::string good = encode_safetensors({{"a", Tensor::from_values(DType::kF32, {2}, {1, 2})},
                                         {"b", Tensor::from_values(DType::kF32, {1}, {3})}});
  EXPECT_TERN_ERROR(decode_safetensors(good.substr(0, good.size() - 1), "f"), ErrorCode::kDataLoss,
                    "buffer holds");
  EXPECT_TERN_ERROR(decode_safetensors(good.substr(0, 5), "f"), ErrorCode::kDataLoss, "shorter");
  std::string huge = good;
  huge[7] = 0x7f;  // header size 2^62-ish
  EXPECT_TERN_ERROR(decode_safetensors(huge, "f"), ErrorCode::kDataLoss, "exceeds the cap");
  std::string flipped = good;
  flipped[9] = '[';  // JSON no longer starts with '{' + invalid
  EXPECT_TERN_ERROR(decode_safetensors(flipped, "f"), ErrorCode::kDataLoss, "f");
  auto with_header = [](const std::string& json, size_t buffer) {
    std::string h = json;
    while (h.size() % 8) h += ' ';
    std::string out(8, '\0');
    out[0] = static_cast<char>(h.size());
    return out + h + std::string(buffer, '\0');
  };
  EXPECT_TERN_ERROR(
      decode_safetensors(
          with_header(
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
              12),
          "f"),
      ErrorCode::kDataLoss, "overlap");
  EXPECT_TERN_ERROR(
      decode_safetensors(
          with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "f"),
      ErrorCode::kDataLoss, "needs 12");
  EXPECT_TERN_ERROR(
      decode_safetensors(with_header(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8),
                         "f"),
      ErrorCode::kDataLoss, "unsupported dtype");
  EXPECT_TERN_ERROR(load_safetensors("/nonexistent/x.safetensors"), ErrorCode::kNotFound,
                    "/nonexistent");
}

}  // namespace
}  // namespace tern::io
