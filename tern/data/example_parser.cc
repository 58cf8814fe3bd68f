// Example parsing into tensors: spec validation, value conversion, per-record and batched output.
#include "tern/data/example_parser.h"

#include "tern/data/example_fast_parse.h"

#include <cstring>
#include <limits>
#include <set>
#include <type_traits>

#include "tern/base/error.h"
#include "tern/base/strings.h"

namespace tern::data {
namespace {

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Converts n values; returns the first index out of T's range, or -1.
template <typename T, typename S>
int64_t convert_values(const S* src, size_t n, T* dst) {
  if constexpr (std::is_same_v<T, S>) {
    if (n > 0) std::memcpy(dst, src, n * sizeof(T));
  } else if constexpr (std::is_integral_v<T> && std::is_integral_v<S>) {
    for (size_t i = 0; i < n; ++i) {
      if (src[i] < static_cast<S>(std::numeric_limits<T>::min()) ||
          src[i] > static_cast<S>(std::numeric_limits<T>::max())) {
        return static_cast<int64_t>(i);
      }
      dst[i] = static_cast<T>(src[i]);
    }
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = from_double<T>(static_cast<double>(src[i]));
  }
  return -1;
}

bool kind_converts_to(FeatureKind kind, DType dtype) {
  switch (kind) {
    case FeatureKind::kFloat:
      return is_floating(dtype);
    case FeatureKind::kInt64:
      return dtype == DType::kI64 || dtype == DType::kI32 || dtype == DType::kI8 ||
             dtype == DType::kU8 || dtype == DType::kF32 || dtype == DType::kF64;
    case FeatureKind::kBytes:
      // Raw bytes are reinterpreted as the dtype: every bit pattern must be a value of it, which
      // bool's is not (a byte other than 0 or 1 loaded as bool is undefined: UBSan).
      return dtype != DType::kBool;
    case FeatureKind::kNone:
      break;
  }
  return false;
}

// Specs are validated first, so the shape is non-negative and its size does not overflow.
int64_t product(const std::vector<int64_t>& dims) {
  return Shape(dims).num_elements();
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += str_cat(i > 0 ? ", " : "", dims[i]);
  return s + "]";
}

std::vector<int64_t> with_batch(bool squeeze, int64_t batch, std::vector<int64_t> dims) {
  if (!squeeze) dims.insert(dims.begin(), batch);
  return dims;
}

// The feature of one record, nullptr if absent.
const Feature* find_feature(const Features& features, const std::string& name) {
  auto it = features.find(name);
  return it == features.end() ? nullptr : &it->second;
}

struct BatchContext {
  const FeatureRows* rows;
  const FeatureSpec* spec;

  [[noreturn]] void fail(size_t row, const std::string& message) const {
    const FeatureRows& r = *rows;
    if (r.rows_are_steps) {
      throw_error(ErrorCode::kInvalidArgument, r.names.name(r.what, 0), ", feature_list '",
                  printable(spec->name), "' step ", row, ": ", message);
    }
    throw_error(ErrorCode::kInvalidArgument, r.names.name(r.what, row), ", feature '",
                printable(spec->name), "': ", message);
  }
  void store(const Feature& f, DType dtype, void* dst, size_t offset, size_t row) const {
    const int64_t bad = store_feature_values(f, dtype, dst, offset);
    if (bad >= 0) {
      fail(row, str_cat("value ", f.int64_list[static_cast<size_t>(bad)], " (index ", bad,
                        ") does not fit in ", dtype_name(dtype)));
    }
  }
};

Tensor fixed_numeric(const std::vector<const Feature*>& rows, const BatchContext& c, bool squeeze) {
  const FeatureSpec& s = *c.spec;
  const int64_t count = product(s.shape);
  Tensor out(s.dtype, Shape(with_batch(squeeze, static_cast<int64_t>(rows.size()), s.shape)));
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t offset = i * static_cast<size_t>(count);
    const Feature* f = rows[i];
    if (f != nullptr && (f->size() > 0 || count == 0)) {
      if (static_cast<int64_t>(f->size()) != count) {
        c.fail(i, str_cat("expected ", count, " values for shape ", Shape(s.shape), ", got ",
                          f->size()));
      }
      c.store(*f, s.dtype, out.raw_data(), offset, i);
    } else if (s.default_value.empty()) {
      c.fail(i, "required feature is missing (give it a default_value)");
    } else if (s.default_value.size() == 1) {
      fill_value(s.dtype, out.raw_data(), offset, static_cast<size_t>(count), s.default_value[0]);
    } else {
      for (size_t k = 0; k < s.default_value.size(); ++k) {
        fill_value(s.dtype, out.raw_data(), offset + k, 1, s.default_value[k]);
      }
    }
  }
  return out;
}

// The one bytes value of row i (or the default's bytes).
std::string_view one_bytes_value(const Feature* f, const BatchContext& c, size_t row,
                                 std::string& default_storage) {
  if (f != nullptr && f->size() > 0) {
    if (f->size() != 1) c.fail(row, str_cat("expected 1 bytes value, got ", f->size()));
    return f->bytes_list[0];
  }
  if (c.spec->default_value.empty())
    c.fail(row, "required feature is missing (give it a default_value)");
  default_storage.clear();
  for (double v : c.spec->default_value)
    default_storage.push_back(static_cast<char>(static_cast<uint8_t>(v)));
  return default_storage;
}

Tensor fixed_bytes(const std::vector<const Feature*>& rows, const BatchContext& c, bool squeeze) {
  const FeatureSpec& s = *c.spec;
  const int64_t b = static_cast<int64_t>(rows.size());
  std::string def;
  if (s.shape.empty()) {
    std::vector<std::string_view> values;
    for (size_t i = 0; i < rows.size(); ++i) values.push_back(one_bytes_value(rows[i], c, i, def));
    const int64_t len = values.empty() ? 0 : static_cast<int64_t>(values[0].size());
    for (size_t i = 0; i < values.size(); ++i) {
      if (static_cast<int64_t>(values[i].size()) != len) {
        c.fail(i, str_cat("bytes of length ", values[i].size(), " in a batch whose first is ", len,
                          " (parse per record for varying lengths)"));
      }
    }
    Tensor out(DType::kU8, Shape(with_batch(squeeze, b, {len})));
    char* dst = static_cast<char*>(out.raw_data());
    for (size_t i = 0; i < values.size(); ++i) {
      if (len > 0)
        std::memcpy(dst + i * static_cast<size_t>(len), values[i].data(), values[i].size());
    }
    return out;
  }
  const int64_t count = product(s.shape);
  const size_t row_bytes = static_cast<size_t>(count) * dtype_size(s.dtype);
  Tensor out(s.dtype, Shape(with_batch(squeeze, b, s.shape)));
  char* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Feature* f = rows[i];
    if (f == nullptr || f->size() == 0) {
      if (s.default_value.empty())
        c.fail(i, "required feature is missing (give it a default_value)");
      for (int64_t k = 0; k < count; ++k) {
        const double v = s.default_value.size() == 1 ? s.default_value[0]
                                                     : s.default_value[static_cast<size_t>(k)];
        fill_value(s.dtype, dst, i * static_cast<size_t>(count) + static_cast<size_t>(k), 1, v);
      }
      continue;
    }
    if (f->size() != 1) c.fail(i, str_cat("expected 1 bytes value, got ", f->size()));
    const std::string& v = f->bytes_list[0];
    if (v.size() != row_bytes) {
      c.fail(i, str_cat("raw bytes of length ", v.size(), " for ", dtype_name(s.dtype),
                        Shape(s.shape), " (", row_bytes, " bytes expected)"));
    }
    if (row_bytes > 0) std::memcpy(dst + i * row_bytes, v.data(), row_bytes);
  }
  return out;
}

void var_len_numeric(const std::vector<const Feature*>& rows, const BatchContext& c, bool squeeze,
                     Element& out) {
  const FeatureSpec& s = *c.spec;
  std::vector<int64_t> lengths;
  int64_t total = 0, longest = 0;
  for (const Feature* f : rows) {
    const int64_t n = f != nullptr ? static_cast<int64_t>(f->size()) : 0;
    lengths.push_back(n);
    total += n;
    longest = std::max(longest, n);
  }
  if (s.ragged) {
    Tensor values(s.dtype, Shape{total});
    size_t offset = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] != nullptr) c.store(*rows[i], s.dtype, values.raw_data(), offset, i);
      offset += static_cast<size_t>(lengths[i]);
    }
    out.push_back(std::move(values));
    out.push_back(squeeze ? Tensor::scalar(DType::kI64, static_cast<double>(lengths[0]))
                          : Tensor::from_vector(Shape{static_cast<int64_t>(rows.size())}, lengths));
    return;
  }
  const int64_t width = s.pad_to > 0 ? s.pad_to : longest;
  Tensor dense(s.dtype, Shape(with_batch(squeeze, static_cast<int64_t>(rows.size()), {width})));
  fill_value(s.dtype, dense.raw_data(), 0, static_cast<size_t>(dense.num_elements()),
             s.padding_value);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (lengths[i] > width) c.fail(i, str_cat(lengths[i], " values exceed pad_to ", width));
    if (rows[i] != nullptr)
      c.store(*rows[i], s.dtype, dense.raw_data(), i * static_cast<size_t>(width), i);
  }
  out.push_back(std::move(dense));
}

void var_len_bytes(const std::vector<const Feature*>& rows, const BatchContext& c, Element& out) {
  if (rows.size() != 1) c.fail(0, "VarLen bytes features are parsed per record, not per batch");
  std::string flat;
  std::vector<int64_t> lengths;
  if (rows[0] != nullptr) {
    for (const std::string& v : rows[0]->bytes_list) {
      flat += v;
      lengths.push_back(static_cast<int64_t>(v.size()));
    }
  }
  out.push_back(bytes_tensor(flat));
  out.push_back(Tensor::from_vector(Shape{static_cast<int64_t>(lengths.size())}, lengths));
}

}  // namespace

std::string record_name(std::string_view message, int64_t record_index) {
  return record_index >= 0 ? str_cat(message, " record ", record_index) : std::string(message);
}

std::string RecordNames::name(std::string_view what, size_t i) const {
  if (origin != nullptr && i < origin->size()) {
    const std::string where = describe_position((*origin)[i]);
    if (!where.empty()) return str_cat(what, " at ", where);
  }
  return record_name(what, first_index >= 0 ? first_index + static_cast<int64_t>(i) : -1);
}

int64_t store_feature_values(const Feature& feature, DType dtype, void* dst, size_t offset) {
  return dispatch_dtype(dtype, [&](auto tag) -> int64_t {
    using T = decltype(tag);
    T* out = static_cast<T*>(dst) + offset;
    if (feature.kind == FeatureKind::kFloat) {
      return convert_values(feature.float_list.data(), feature.float_list.size(), out);
    }
    if (feature.kind == FeatureKind::kInt64) {
      return convert_values(feature.int64_list.data(), feature.int64_list.size(), out);
    }
    return -1;
  });
}

void fill_value(DType dtype, void* dst, size_t offset, size_t n, double value) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(dst) + offset;
    const T v = from_double<T>(value);
    for (size_t i = 0; i < n; ++i) out[i] = v;
  });
}

FeatureSpec fixed_len_feature(std::string name, FeatureKind kind, std::vector<int64_t> shape,
                              std::vector<double> default_value) {
  FeatureSpec s{.name = std::move(name),
                .kind = kind,
                .shape = std::move(shape),
                .default_value = std::move(default_value)};
  s.dtype = kind == FeatureKind::kInt64   ? DType::kI64
            : kind == FeatureKind::kBytes ? DType::kU8
                                          : DType::kF32;
  return s;
}

FeatureSpec var_len_feature(std::string name, FeatureKind kind, bool ragged) {
  FeatureSpec s = fixed_len_feature(std::move(name), kind);
  s.var_len = true;
  s.ragged = ragged || kind == FeatureKind::kBytes;
  return s;
}

void validate_feature_specs(const std::vector<FeatureSpec>& specs, std::string_view what) {
  std::set<std::string, std::less<>> names;
  for (const FeatureSpec& s : specs) {
    TERN_CHECK_ARG(!s.name.empty(), what, ": a feature spec has an empty name");
    TERN_CHECK_ARG(names.insert(s.name).second, what, ": feature '", s.name, "' is listed twice");
    TERN_CHECK_ARG(s.kind != FeatureKind::kNone, what, ": feature '", s.name, "' has no kind");
    TERN_CHECK_ARG(kind_converts_to(s.kind, s.dtype), what, ": feature '", s.name,
                   "': ", feature_kind_name(s.kind), " values cannot become ", dtype_name(s.dtype));
    if (s.var_len) {
      TERN_CHECK_ARG(s.shape.empty(), what, ": VarLen feature '", s.name, "' takes no shape");
      TERN_CHECK_ARG(s.pad_to >= 0, what, ": feature '", s.name, "': pad_to ", s.pad_to, " < 0");
      continue;
    }
    for (int64_t d : s.shape) {
      TERN_CHECK_ARG(d >= 0, what, ": feature '", s.name, "' has a negative dim in ",
                     dims_text(s.shape));
    }
    const int64_t count = Shape(s.shape).num_elements();
    if (s.kind == FeatureKind::kBytes && s.shape.empty()) {
      TERN_CHECK_ARG(s.dtype == DType::kU8, what, ": bytes feature '", s.name,
                     "' of shape [] gives u8 bytes, not ", dtype_name(s.dtype));
      continue;
    }
    const auto n = static_cast<int64_t>(s.default_value.size());
    TERN_CHECK_ARG(n == 0 || n == 1 || n == count, what, ": feature '", s.name, "' has ", n,
                   " default values for shape ", Shape(s.shape), " (", count, " values)");
  }
}

std::vector<std::string> feature_output_names(const std::vector<FeatureSpec>& specs) {
  std::vector<std::string> out;
  for (const FeatureSpec& s : specs) {
    if (s.var_len && s.ragged) {
      out.push_back(s.name + ".values");
      out.push_back(s.name + ".row_lengths");
    } else {
      out.push_back(s.name);
    }
  }
  return out;
}

void feature_rows_to_tensors(const FeatureRows& rows, const FeatureSpec& s, bool squeeze,
                             Element& out) {
  BatchContext c{&rows, &s};
  std::vector<const Feature*> present(rows.rows.size());
  for (size_t i = 0; i < rows.rows.size(); ++i) {
    const Feature* f = rows.rows[i];
    if (f != nullptr && f->kind == FeatureKind::kNone) f = nullptr;
    if (f != nullptr && f->kind != s.kind) {
      c.fail(i,
             str_cat("expected ", feature_kind_name(s.kind), ", got ", feature_kind_name(f->kind)));
    }
    present[i] = f;
  }
  if (!s.var_len) {
    out.push_back(s.kind == FeatureKind::kBytes ? fixed_bytes(present, c, squeeze)
                                                : fixed_numeric(present, c, squeeze));
  } else if (s.kind == FeatureKind::kBytes) {
    var_len_bytes(present, c, out);
  } else {
    var_len_numeric(present, c, squeeze, out);
  }
}

Element features_to_batch(const std::vector<const Features*>& examples,
                          const std::vector<FeatureSpec>& specs, const RecordNames& names,
                          bool squeeze_batch, std::string_view what) {
  Element out;
  FeatureRows rows{.what = what, .names = names};
  rows.rows.resize(examples.size());
  for (const FeatureSpec& s : specs) {
    for (size_t i = 0; i < examples.size(); ++i) rows.rows[i] = find_feature(*examples[i], s.name);
    feature_rows_to_tensors(rows, s, squeeze_batch, out);
  }
  return out;
}

Element parse_example_record(std::string_view record, const std::vector<FeatureSpec>& specs,
                             const RecordNames& names) {
  validate_feature_specs(specs, "parse_example");
  const Example ex = parse_example_proto(record, names.name("tf.train.Example", 0));
  return features_to_batch({&ex.features}, specs, names, true, "tf.train.Example");
}

Element parse_example_batch(const std::vector<std::string_view>& records,
                            const std::vector<FeatureSpec>& specs, const RecordNames& names) {
  validate_feature_specs(specs, "parse_example");
  TERN_CHECK_ARG(!records.empty(), "parse_example: empty batch");
  if (Element out; parse_example_batch_fast(records, specs, &out)) return out;
  return parse_example_batch_general(records, specs, names);
}

Element parse_example_batch_general(const std::vector<std::string_view>& records,
                                    const std::vector<FeatureSpec>& specs,
                                    const RecordNames& names) {
  validate_feature_specs(specs, "parse_example");
  TERN_CHECK_ARG(!records.empty(), "parse_example: empty batch");
  std::vector<Example> parsed;
  parsed.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i)
    parsed.push_back(parse_example_proto(records[i], names.name("tf.train.Example", i)));
  std::vector<const Features*> rows;
  for (const Example& ex : parsed) rows.push_back(&ex.features);
  return features_to_batch(rows, specs, names, false, "tf.train.Example");
}

}  // namespace tern::data
