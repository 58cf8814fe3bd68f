// IDX reader: header validation, checked sizes, big-endian decoding.
#include "tern/data/idx_dataset.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "tern/base/checked_math.h"
#include "tern/base/error.h"
#include "tern/data/input_stream.h"
#include "tern/data/tensor_slice_dataset.h"

namespace tern::data {
namespace {

static_assert(std::endian::native == std::endian::little,
              "IDX decoding assumes a little-endian host");

constexpr int kMaxRank = 16;
// Deflate never expands more than ~1032:1; a header claiming more than this is not genuine.
constexpr int64_t kMaxDeflateRatio = 1100;

struct IdxType {
  DType dtype;    // tensor dtype
  int file_size;  // bytes per element in the file
};

IdxType idx_type(uint8_t code, const std::string& path) {
  switch (code) {
    case 0x08:
      return {DType::kU8, 1};
    case 0x09:
      return {DType::kI8, 1};
    case 0x0B:
      return {DType::kI32, 2};
    case 0x0C:
      return {DType::kI32, 4};
    case 0x0D:
      return {DType::kF32, 4};
    case 0x0E:
      return {DType::kF64, 8};
  }
  throw_error(ErrorCode::kDataLoss, path, ": unknown IDX type code 0x", std::hex,
              static_cast<int>(code), " at byte offset 2");
}

void read_exact(InputStream& in, void* dst, size_t n, std::string_view what) {
  const int64_t at = in.offset();
  const size_t got = in.read(dst, n);
  if (got < n) {
    throw_error(ErrorCode::kDataLoss, in.path(), ": truncated IDX file: ", what, " needs ", n,
                " bytes at ", in.describe_offset(at), " but the file ends after ", got);
  }
}

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Reverses the bytes of each `width`-byte word in place.
void swap_words(unsigned char* p, int64_t count, int width) {
  for (int64_t i = 0; i < count; ++i, p += width) std::reverse(p, p + width);
}

}  // namespace

Tensor read_idx(const std::string& path, const IdxOptions& options) {
  std::unique_ptr<InputStream> in = InputStream::open(path);
  unsigned char magic[4];
  read_exact(*in, magic, 4, "the magic number");
  if (magic[0] != 0 || magic[1] != 0) {
    throw_error(ErrorCode::kDataLoss, path, ": not an IDX file (magic bytes ", std::hex,
                static_cast<int>(magic[0]), " ", static_cast<int>(magic[1]),
                " at byte offset 0, expected 0 0)");
  }
  const IdxType type = idx_type(magic[2], path);
  const int rank = magic[3];
  if (rank < 1 || rank > kMaxRank) {
    throw_error(ErrorCode::kDataLoss, path, ": IDX rank ", rank,
                " at byte offset 3 is outside [1, ", kMaxRank, "]");
  }
  std::vector<unsigned char> dims_raw(static_cast<size_t>(rank) * 4);
  read_exact(*in, dims_raw.data(), dims_raw.size(), "the dimensions");
  std::vector<int64_t> dims;
  int64_t count = 1;
  int64_t data_bytes = 0;
  try {
    for (int i = 0; i < rank; ++i) {
      const int64_t d = big_endian_u32(&dims_raw[static_cast<size_t>(i) * 4]);
      count = checked_mul(count, d, "IDX element count");
      dims.push_back(d);
    }
    data_bytes = checked_mul(count, type.file_size, "IDX data size");
  } catch (const Error& e) {
    throw_error(ErrorCode::kDataLoss, path, ": bad IDX dimensions at byte offset 4: ", e.message());
  }
  const int64_t header = 4 + 4 * static_cast<int64_t>(rank);
  if (data_bytes > options.max_bytes) {
    throw_error(ErrorCode::kDataLoss, path, ": IDX header claims ", data_bytes,
                " bytes of data, more than the limit of ", options.max_bytes);
  }
  if (in->file_size() >= 0) {
    const int64_t available = in->compressed()
                                  ? checked_mul(in->file_size(), kMaxDeflateRatio, "IDX size")
                                  : in->file_size() - header;
    if (data_bytes > available) {
      throw_error(ErrorCode::kDataLoss, path, ": truncated IDX file: the header claims ",
                  data_bytes, " bytes of data at byte offset ", header, " but the file has ",
                  in->compressed() ? str_cat(in->file_size(), " compressed bytes")
                                   : str_cat(available, " bytes after the header"));
    }
  }
  Tensor out(type.dtype, Shape(dims));
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  if (type.file_size == 2) {  // i16 widened to i32
    std::vector<unsigned char> raw(static_cast<size_t>(data_bytes));
    read_exact(*in, raw.data(), raw.size(), "the data");
    int32_t* values = out.data<int32_t>();
    for (int64_t i = 0; i < count; ++i) {
      const auto hi = raw[static_cast<size_t>(2 * i)], lo = raw[static_cast<size_t>(2 * i + 1)];
      values[i] = static_cast<int16_t>(static_cast<uint16_t>((hi << 8) | lo));
    }
  } else {
    read_exact(*in, dst, static_cast<size_t>(data_bytes), "the data");
    if (type.file_size > 1) swap_words(dst, count, type.file_size);
  }
  unsigned char extra;
  if (in->read(&extra, 1) != 0) {
    throw_error(ErrorCode::kDataLoss, path, ": IDX file has trailing bytes after the data at ",
                in->describe_offset(header + data_bytes));
  }
  return out;
}

DatasetPtr idx_dataset(const std::vector<std::string>& paths, const IdxOptions& options) {
  TERN_CHECK_ARG(!paths.empty(), "idx_dataset: no files");
  Element components;
  for (const std::string& p : paths) components.push_back(read_idx(p, options));
  for (size_t i = 1; i < components.size(); ++i) {
    TERN_CHECK_ARG(components[i].shape().dim(0) == components[0].shape().dim(0),
                   "idx_dataset: ", paths[i], " has ", components[i].shape().dim(0), " rows but ",
                   paths[0], " has ", components[0].shape().dim(0));
  }
  return from_tensor_slices(std::move(components));
}

}  // namespace tern::data
