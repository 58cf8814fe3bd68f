// build_transform_graph: the spec and its analysis as IR ops.
#include "tern/transform/graph.h"

#include <algorithm>
#include <map>

#include "tern/base/error.h"
#include "tern/base/fingerprint.h"

namespace tern::transform {
namespace {

bool lone_image(const TransformSpec& spec) {
  return spec.features.size() == 1 && spec.features[0].kind == RawKind::kImage;
}

float inverse_or_zero(double d) { return d > 0 ? static_cast<float>(1.0 / d) : 0.0f; }

ir::Value* f32_scalar(ir::Graph& g, double v, const std::string& name) {
  return g.constant(Tensor::scalar(DType::kF32, v), name);
}

// (x - shift) * scale, the affine form of z_score and scale_to_0_1.
ir::Value* affine(ir::Graph& g, ir::Value* x, double shift, float scale, const std::string& p) {
  ir::Value* centered = g.add("sub", {x, f32_scalar(g, shift, p + "/shift")}, {}, p + "/center");
  return g.add("mul", {centered, g.constant(Tensor::scalar(DType::kF32, scale), p + "/scale")}, {},
               p + "/scaled");
}

// An i64 index -> one_hot f32 [..., depth] or the index as f32.
ir::Value* index_output(ir::Graph& g, ir::Value* idx, OutputForm form, int64_t depth,
                        const std::string& p) {
  if (form == OutputForm::kIndex) return g.add("cast", {idx}, {{"dtype", DType::kF32}}, p + "/index");
  return g.add("one_hot", {idx}, {{"depth", depth}, {"dtype", DType::kF32}}, p + "/one_hot");
}

// The vocabulary's keys (sorted fingerprints) and values (ranks) as constants.
std::pair<ir::Value*, ir::Value*> vocabulary_tables(ir::Graph& g, const FeatureAnalysis& a,
                                                    const std::string& p) {
  std::vector<std::pair<int64_t, int64_t>> table;  // fingerprint, rank
  for (size_t r = 0; r < a.vocabulary.size(); ++r)
    table.emplace_back(fingerprint64_i64(a.vocabulary[r].first), static_cast<int64_t>(r));
  std::sort(table.begin(), table.end());
  std::vector<int64_t> keys, values;
  for (size_t i = 0; i < table.size(); ++i) {
    if (i > 0 && table[i].first == table[i - 1].first)
      throw_error(ErrorCode::kFailedPrecondition, "transform feature '", a.name,
                  "': vocabulary values '", a.vocabulary[static_cast<size_t>(table[i - 1].second)].first,
                  "' and '", a.vocabulary[static_cast<size_t>(table[i].second)].first,
                  "' have the same 64-bit fingerprint; drop one (top_k / frequency_threshold)");
    keys.push_back(table[i].first);
    values.push_back(table[i].second);
  }
  const int64_t n = static_cast<int64_t>(keys.size());
  return {g.constant(Tensor::from_vector(Shape{n}, keys), p + "/keys"),
          g.constant(Tensor::from_vector(Shape{n}, values), p + "/ranks")};
}

}  // namespace

int64_t feature_width(const FeatureTransform& f, const FeatureAnalysis& a) {
  switch (f.op) {
    case TransformOp::kZScore:
    case TransformOp::kScaleTo01:
    case TransformOp::kIdentity:
      return f.kind == RawKind::kImage ? f.shape[0] * f.shape[1] * f.shape[2] : f.length;
    case TransformOp::kBucketize:
      return f.output == OutputForm::kIndex
                 ? f.length
                 : f.length * (static_cast<int64_t>(a.boundaries.size()) + 1);
    case TransformOp::kVocabulary:
      return f.output == OutputForm::kIndex
                 ? 1
                 : static_cast<int64_t>(a.vocabulary.size()) + f.num_oov_buckets;
    case TransformOp::kHash:
    case TransformOp::kCross:
      return f.output == OutputForm::kIndex ? 1 : f.hash_buckets;
  }
  return 0;
}

std::vector<int64_t> transform_output_shape(const TransformSpec& spec,
                                            const TransformAnalysis& analysis) {
  if (lone_image(spec)) return spec.features[0].shape;
  int64_t d = 0;
  for (size_t k = 0; k < spec.features.size(); ++k)
    d += feature_width(spec.features[k], analysis.features[k]);
  return {d};
}

std::unique_ptr<ir::Graph> build_transform_graph(const TransformSpec& spec,
                                                 const TransformAnalysis& analysis, int64_t batch) {
  TERN_CHECK_ARG(batch >= 1, "transform graph: batch must be >= 1, got ", batch);
  TERN_CHECK_ARG(analysis.features.size() == spec.features.size(), "transform graph: the analysis "
                 "has ", analysis.features.size(), " features, the spec ", spec.features.size());
  auto g = std::make_unique<ir::Graph>("transform");
  std::map<std::string, ir::Value*> inputs;
  for (const auto& r : spec.raw_features()) {
    std::vector<int64_t> dims{batch};
    DType dtype = DType::kF32;
    if (r.kind == RawKind::kNumeric && r.length > 1) dims.push_back(r.length);
    if (r.kind == RawKind::kCategorical) dtype = DType::kI64;
    if (r.kind == RawKind::kImage) {
      dtype = DType::kU8;
      dims.insert(dims.end(), r.shape.begin(), r.shape.end());
    }
    inputs[r.name] = g->input(r.name, {dtype, Shape(dims)});
  }
  std::vector<ir::Value*> parts;
  for (size_t k = 0; k < spec.features.size(); ++k) {
    const FeatureTransform& f = spec.features[k];
    const FeatureAnalysis& a = analysis.features[k];
    const std::string p = f.name;
    ir::Value* x = inputs.at(f.inputs[0]);
    ir::Value* y = nullptr;
    switch (f.kind) {
      case RawKind::kImage: {
        y = g->add("cast", {x}, {{"dtype", DType::kF32}}, p + "/to_f32");
        if (f.op == TransformOp::kZScore) y = affine(*g, y, a.mean, inverse_or_zero(a.std), p);
        if (f.op == TransformOp::kScaleTo01)
          y = affine(*g, y, a.min, inverse_or_zero(a.max - a.min), p);
        break;
      }
      case RawKind::kNumeric: {
        const double fill = f.default_is_mean ? a.mean : f.default_value;
        ir::Value* nan = g->add("not_equal", {x, x}, {}, p + "/is_missing");
        x = g->add("where", {nan, f32_scalar(*g, fill, p + "/default"), x}, {}, p + "/filled");
        if (f.op == TransformOp::kZScore) y = affine(*g, x, a.mean, inverse_or_zero(a.std), p);
        if (f.op == TransformOp::kScaleTo01)
          y = affine(*g, x, a.min, inverse_or_zero(a.max - a.min), p);
        if (f.op == TransformOp::kIdentity) y = x;
        if (f.op == TransformOp::kBucketize) {
          ir::Value* idx = g->add("bucketize", {x}, {{"boundaries", a.boundaries}}, p + "/bucket");
          y = index_output(*g, idx, f.output, static_cast<int64_t>(a.boundaries.size()) + 1, p);
        }
        break;
      }
      case RawKind::kCategorical: {
        if (f.op == TransformOp::kVocabulary) {
          auto [keys, values] = vocabulary_tables(*g, a, p);
          ir::Value* idx = g->add("vocab_lookup", {x, keys, values},
                                  {{"num_oov_buckets", f.num_oov_buckets}}, p + "/lookup");
          y = index_output(*g, idx, f.output,
                           static_cast<int64_t>(a.vocabulary.size()) + f.num_oov_buckets, p);
        } else {
          if (f.op == TransformOp::kCross) {
            std::vector<ir::Value*> xs;
            for (const auto& in : f.inputs) xs.push_back(inputs.at(in));
            x = g->add("fingerprint_combine", xs, {}, p + "/combine");
          }
          ir::Value* idx =
              g->add("hash_bucket", {x}, {{"num_buckets", f.hash_buckets}}, p + "/hash");
          y = index_output(*g, idx, f.output, f.hash_buckets, p);
        }
        break;
      }
    }
    if (!lone_image(spec))
      y = g->add("reshape", {y}, {{"shape", std::vector<int64_t>{-1, feature_width(f, a)}}},
                 p + "/columns");
    parts.push_back(y);
  }
  ir::Value* out = parts.size() == 1
                       ? parts[0]
                       : g->add("concat", parts, {{"axis", int64_t{1}}}, "concat");
  g->add_output(kTransformOutput, out);
  return g;
}

}  // namespace tern::transform
