// RawDecoder: tf.Example records -> the transform graph's raw input tensors.
#include "tern/transform/raw_batch.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>

#include "tern/base/error.h"
#include "tern/base/fingerprint.h"
#include "tern/data/example_fast_parse.h"
#include "tern/data/example_parser.h"

namespace tern::transform {
namespace {

constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();

std::vector<int64_t> column_dims(const TransformSpec::RawFeature& f, int64_t batch) {
  switch (f.kind) {
    case RawKind::kNumeric:
      return f.length == 1 ? std::vector<int64_t>{batch} : std::vector<int64_t>{batch, f.length};
    case RawKind::kCategorical:
      return {batch};
    case RawKind::kImage:
      return {batch, f.shape[0], f.shape[1], f.shape[2]};
  }
  return {};
}

DType column_dtype(RawKind kind) {
  return kind == RawKind::kNumeric ? DType::kF32
                                   : kind == RawKind::kCategorical ? DType::kI64 : DType::kU8;
}

void prepare(const std::vector<TransformSpec::RawFeature>& features, int64_t batch,
             bool keep_strings, RawBatch& out) {
  out.size = batch;
  out.columns.resize(features.size());
  for (size_t j = 0; j < features.size(); ++j) {
    RawColumn& c = out.columns[j];
    c.values = Tensor(column_dtype(features[j].kind), Shape(column_dims(features[j], batch)));
    c.missing.assign(static_cast<size_t>(batch), 0);
    c.strings.clear();
    if (keep_strings && features[j].kind == RawKind::kCategorical)
      c.strings.resize(static_cast<size_t>(batch));
  }
  out.label_strings.clear();
  out.label_ints = Tensor();
  out.label_is_bytes = false;
}

[[noreturn]] void feature_error(const std::string& file, int64_t index, const std::string& name,
                                const std::string& problem) {
  throw_error(ErrorCode::kInvalidArgument, record_where(file, index), ": feature '", name, "' ",
              problem);
}

}  // namespace

std::string record_where(const std::string& file, int64_t index) {
  return str_cat(file, ": record ", index);
}

RawDecoder::RawDecoder(const TransformSpec& spec, bool keep_strings)
    : features_(spec.raw_features()), label_(spec.label), keep_strings_(keep_strings) {
  fast_ok_ = true;
  for (const auto& f : features_) fast_ok_ = fast_ok_ && f.kind != RawKind::kCategorical;
  kinds_ = std::make_unique<std::atomic<uint8_t>[]>(features_.size() + 1);
  for (size_t j = 0; j <= features_.size(); ++j)
    kinds_[j] = static_cast<uint8_t>(j < features_.size() && features_[j].kind != RawKind::kImage
                                         ? data::FeatureKind::kFloat
                                         : j < features_.size() ? data::FeatureKind::kBytes
                                                                : data::FeatureKind::kInt64);
}

RawDecoder::~RawDecoder() = default;

void RawDecoder::decode(std::span<const std::string_view> records, const std::string& file,
                        int64_t first_index, RawBatch& out) const {
  prepare(features_, static_cast<int64_t>(records.size()), keep_strings_, out);
  if (records.empty()) return;
  if (decode_fast(records, out)) return;
  decode_general(records, file, first_index, out);
}

bool RawDecoder::decode_fast(std::span<const std::string_view> records, RawBatch& out) const {
  const auto label_kind = static_cast<data::FeatureKind>(kinds_[features_.size()].load());
  if (!fast_ok_ || (!label_.empty() && label_kind != data::FeatureKind::kInt64)) return false;
  std::vector<data::FeatureSpec> specs;
  for (size_t j = 0; j < features_.size(); ++j) {
    const auto& f = features_[j];
    if (f.kind == RawKind::kImage) {
      data::FeatureSpec s = data::fixed_len_feature(f.name, data::FeatureKind::kBytes, f.shape);
      s.dtype = DType::kU8;
      specs.push_back(s);
    } else {
      auto kind = static_cast<data::FeatureKind>(kinds_[j].load());
      specs.push_back(data::fixed_len_feature(f.name, kind, {f.length}));
    }
  }
  if (!label_.empty()) specs.push_back(data::fixed_len_feature(label_, data::FeatureKind::kInt64));
  std::vector<std::string_view> views(records.begin(), records.end());
  data::Element e;
  if (!data::parse_example_batch_fast(views, specs, &e)) return false;
  const int64_t batch = out.size;
  for (size_t j = 0; j < features_.size(); ++j) {
    RawColumn& c = out.columns[j];
    const Tensor& t = e[j];
    if (features_[j].kind == RawKind::kImage) {
      std::memcpy(c.values.raw_data(), t.raw_data(), c.values.nbytes());
    } else if (t.dtype() == DType::kF32) {
      std::memcpy(c.values.raw_data(), t.raw_data(), c.values.nbytes());
    } else {  // int64 values
      const int64_t* src = t.data<int64_t>();
      float* dst = c.values.data<float>();
      for (int64_t i = 0; i < t.num_elements(); ++i) dst[i] = static_cast<float>(src[i]);
    }
  }
  if (!label_.empty()) out.label_ints = e[features_.size()].reshape(Shape{batch});
  return true;
}

void RawDecoder::decode_general(std::span<const std::string_view> records, const std::string& file,
                                int64_t first_index, RawBatch& out) const {
  const int64_t batch = out.size;
  if (!label_.empty()) out.label_ints = Tensor(DType::kI64, Shape{batch});
  bool label_known = false;
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t index = first_index + i;
    const std::string where = record_where(file, index);
    data::Example ex = data::parse_example_proto(records[static_cast<size_t>(i)], where);
    for (size_t j = 0; j < features_.size(); ++j) {
      const TransformSpec::RawFeature& f = features_[j];
      RawColumn& c = out.columns[j];
      auto it = ex.features.find(f.name);
      const data::Feature* feat = it == ex.features.end() ? nullptr : &it->second;
      const bool absent = !feat || feat->size() == 0;
      switch (f.kind) {
        case RawKind::kNumeric: {
          float* dst = c.values.data<float>() + i * f.length;
          if (absent) {
            c.missing[static_cast<size_t>(i)] = 1;
            std::fill(dst, dst + f.length, kMissing);
            break;
          }
          if (feat->kind == data::FeatureKind::kBytes)
            feature_error(file, index, f.name,
                          "is a bytes_list; a numeric feature needs float_list or int64_list "
                          "(or use op vocabulary / hash for a categorical one)");
          if (static_cast<int64_t>(feat->size()) != f.length)
            feature_error(file, index, f.name,
                          str_cat("has ", feat->size(), " values; the spec says length = ",
                                  f.length));
          kinds_[j] = static_cast<uint8_t>(feat->kind);
          for (int64_t k = 0; k < f.length; ++k) {
            const size_t u = static_cast<size_t>(k);
            dst[k] = feat->kind == data::FeatureKind::kFloat
                         ? feat->float_list[u]
                         : static_cast<float>(feat->int64_list[u]);
          }
          break;
        }
        case RawKind::kCategorical: {
          if (feat && feat->size() > 0 && feat->kind != data::FeatureKind::kBytes)
            feature_error(file, index, f.name,
                          str_cat("is a ", data::feature_kind_name(feat->kind),
                                  "; a categorical feature needs a bytes_list (force the column "
                                  "categorical at ingest)"));
          if (feat && feat->size() > 1)
            feature_error(file, index, f.name,
                          str_cat("has ", feat->size(), " values; a categorical feature takes one"));
          std::string_view v = absent ? std::string_view() : std::string_view(feat->bytes_list[0]);
          c.values.data<int64_t>()[i] = fingerprint64_i64(v);
          if (absent) c.missing[static_cast<size_t>(i)] = 1;
          if (keep_strings_) c.strings[static_cast<size_t>(i)] = std::string(v);
          break;
        }
        case RawKind::kImage: {
          const int64_t bytes = f.shape[0] * f.shape[1] * f.shape[2];
          if (!feat) feature_error(file, index, f.name, "is missing (an image feature is required)");
          if (feat->kind != data::FeatureKind::kBytes || feat->size() != 1 ||
              static_cast<int64_t>(feat->bytes_list[0].size()) != bytes)
            feature_error(
                file, index, f.name,
                str_cat("must be one bytes value of ", bytes, " raw u8 pixels (shape [",
                        f.shape[0], ", ", f.shape[1], ", ", f.shape[2], "]), got a ",
                        data::feature_kind_name(feat->kind), " of ", feat->size(), " value(s)",
                        feat->kind == data::FeatureKind::kBytes && feat->size() == 1
                            ? str_cat(" of ", feat->bytes_list[0].size(), " bytes")
                            : ""));
          std::memcpy(c.values.data<uint8_t>() + i * bytes, feat->bytes_list[0].data(),
                      static_cast<size_t>(bytes));
          break;
        }
      }
    }
    if (label_.empty()) continue;
    auto it = ex.features.find(label_);
    if (it == ex.features.end() || it->second.size() == 0)
      feature_error(file, index, label_, "(the label) is missing");
    const data::Feature& l = it->second;
    if (l.size() != 1 || l.kind == data::FeatureKind::kFloat)
      feature_error(file, index, label_,
                    str_cat("(the label) must be one int64 or bytes value, got a ",
                            data::feature_kind_name(l.kind), " of ", l.size(), " value(s)"));
    const bool bytes = l.kind == data::FeatureKind::kBytes;
    if (!label_known) {
      out.label_is_bytes = bytes;
      label_known = true;
      kinds_[features_.size()] = static_cast<uint8_t>(l.kind);
    } else if (bytes != out.label_is_bytes) {
      feature_error(file, index, label_,
                    str_cat("(the label) is a ", data::feature_kind_name(l.kind),
                            " but record ", first_index, " has a ",
                            out.label_is_bytes ? "bytes_list" : "int64_list", " label"));
    }
    if (bytes) {
      out.label_strings.push_back(l.bytes_list[0]);
    } else {
      out.label_ints.data<int64_t>()[i] = l.int64_list[0];
    }
  }
  if (out.label_is_bytes) out.label_ints = Tensor();
}

}  // namespace tern::transform
