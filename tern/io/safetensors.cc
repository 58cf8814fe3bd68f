// safetensors encoding and validating decoding.
#include "tern/io/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tern/base/checked_math.h"
#include "tern/io/atomic_file.h"

namespace tern::io {
namespace {

using json = nlohmann::json;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kNames[] = {
    {DType::kBool, "BOOL"}, {DType::kU8, "U8"},     {DType::kI8, "I8"},
    {DType::kF16, "F16"},   {DType::kBF16, "BF16"}, {DType::kI32, "I32"},
    {DType::kF32, "F32"},   {DType::kF64, "F64"},   {DType::kI64, "I64"}};

const char* st_name(DType d) {
  for (const auto& n : kNames) {
    if (n.dtype == d) return n.name;
  }
  return "?";
}

[[noreturn]] void corrupt(const std::string& what, const std::string& why) {
  throw_error(ErrorCode::kDataLoss, "safetensors file '", what, "': ", why);
}

}  // namespace

std::string encode_safetensors(const NamedTensors& tensors,
                               const std::map<std::string, std::string>& metadata) {
  std::vector<const std::pair<std::string, Tensor>*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    size_t sa = dtype_size(a->second.dtype()), sb = dtype_size(b->second.dtype());
    return sa != sb ? sa > sb : a->first < b->first;
  });
  // nlohmann's ordered_json keeps insertion order, matching the byte layout.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const auto* t : order) {
    TERN_CHECK_ARG(!header.contains(t->first), "safetensors: duplicate tensor name '", t->first,
                   "'");
    TERN_CHECK_ARG(t->first != "__metadata__", "safetensors: '__metadata__' is reserved");
    uint64_t n = t->second.nbytes();
    header[t->first] = {{"dtype", st_name(t->second.dtype())},
                        {"shape", t->second.shape().dims()},
                        {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::string out(8, '\0');
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xff);
  out += text;
  for (const auto* t : order)
    out.append(static_cast<const char*>(t->second.raw_data()), t->second.nbytes());
  return out;
}

SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& what) {
  if (bytes.size() < 8)
    corrupt(what, str_cat("file is ", bytes.size(), " bytes, shorter than the 8-byte header size"));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[static_cast<size_t>(i)])) << (8 * i);
  if (n > kMaxSafetensorsHeader)
    corrupt(what, str_cat("header size ", n, " exceeds the cap of ", kMaxSafetensorsHeader));
  if (n > bytes.size() - 8)
    corrupt(what, str_cat("header size ", n, " runs past the end of the file (", bytes.size(),
                          " bytes)"));
  std::string_view text = bytes.substr(8, n);
  if (text.empty() || text[0] != '{')
    corrupt(what, "header JSON must start with '{' (byte offset 8)");
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    corrupt(what, str_cat("header is not valid JSON: ", e.what()));
  }
  if (!header.is_object()) corrupt(what, "header is not a JSON object");
  SafetensorsFile out;
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (!it->is_object()) corrupt(what, "__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          corrupt(what, str_cat("__metadata__ value for '", m.key(), "' is not a string"));
        out.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const json& e = *it;
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
        !e.contains("data_offsets")) {
      corrupt(what, str_cat("tensor '", name, "' needs dtype, shape and data_offsets"));
    }
    if (!e["dtype"].is_string())
      corrupt(what, str_cat("tensor '", name, "': dtype is not a string"));
    std::string dn = e["dtype"].get<std::string>();
    const DTypeName* dt = nullptr;
    for (const auto& k : kNames) {
      if (dn == k.name) dt = &k;
    }
    if (!dt) corrupt(what, str_cat("tensor '", name, "': unsupported dtype '", dn, "'"));
    const json& sh = e["shape"];
    const json& off = e["data_offsets"];
    if (!sh.is_array() || !off.is_array() || off.size() != 2)
      corrupt(what, str_cat("tensor '", name, "': malformed shape or data_offsets"));
    std::vector<int64_t> dims;
    for (const auto& d : sh) {
      if (!d.is_number_unsigned())
        corrupt(what, str_cat("tensor '", name, "': shape entries must be non-negative integers"));
      dims.push_back(static_cast<int64_t>(d.get<uint64_t>() & 0x7fffffffffffffffULL));
      if (d.get<uint64_t>() > (uint64_t{1} << 62))
        corrupt(what, str_cat("tensor '", name, "': dimension too large"));
    }
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      corrupt(what, str_cat("tensor '", name, "': offsets must be non-negative integers"));
    Shape shape;
    try {
      shape = Shape(dims);
    } catch (const Error&) {
      corrupt(what, str_cat("tensor '", name, "': shape overflows"));
    }
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (end < begin)
      corrupt(what,
              str_cat("tensor '", name, "': data_offsets [", begin, ", ", end, "] are reversed"));
    int64_t expect;
    try {
      expect = checked_mul(shape.num_elements(), static_cast<int64_t>(dtype_size(dt->dtype)),
                           "tensor bytes");
    } catch (const Error&) {
      corrupt(what, str_cat("tensor '", name, "': byte size overflows"));
    }
    if (end - begin != static_cast<uint64_t>(expect)) {
      corrupt(what, str_cat("tensor '", name, "': data_offsets span ", end - begin, " bytes but ",
                            dn, shape, " needs ", expect));
    }
    entries.push_back({name, dt->dtype, shape, begin, end});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t pos = 0;
  for (const auto& e : entries) {
    if (e.begin != pos) {
      corrupt(what, str_cat("tensor '", e.name, "' starts at buffer offset ", e.begin,
                            " but the previous tensor ended at ", pos,
                            e.begin < pos ? " (overlap)" : " (gap)"));
    }
    pos = e.end;
  }
  uint64_t buffer = bytes.size() - 8 - n;
  if (pos != buffer)
    corrupt(what, str_cat("tensors cover ", pos, " bytes but the data buffer holds ", buffer));
  const char* base = bytes.data() + 8 + n;
  for (const auto& e : entries) {
    Tensor t(e.dtype, e.shape);
    if (t.nbytes() > 0) std::memcpy(t.raw_data(), base + e.begin, t.nbytes());
    out.tensors.push_back({e.name, t});
  }
  return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, encode_safetensors(tensors, metadata));
}

SafetensorsFile load_safetensors(const std::string& path) {
  return decode_safetensors(read_file(path), path);
}

}  // namespace tern::io
