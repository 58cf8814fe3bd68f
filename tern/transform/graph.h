// The transform as a graph in tern's IR (docs/transform.md, "The graph"): one input per raw feature
// (TransformSpec::raw_features(), named by the feature), one output `x`.
//
//   inputs   numeric f32 [B] (or [B, n]), NaN = missing; categorical i64 [B], the fingerprint of
//            the bytes (tern/base/fingerprint.h); image u8 [B, H, W, C]
//   per feature, in spec order:
//     numeric      where(x != x, default, x), then z_score: (x - mean) * (1 / std) (0 when std is
//                  0); scale_to_0_1: (x - min) * (1 / (max - min)) (0 when max == min); identity;
//                  bucketize: bucketize(x, boundaries) -> one_hot or the index as f32
//     vocabulary   vocab_lookup(x, keys, ranks) (keys: the vocabulary's fingerprints sorted, as a
//                  constant) -> one_hot(len + num_oov_buckets) or the index
//     hash         hash_bucket(x, hash_buckets) -> one_hot or the index
//     cross        hash_bucket(fingerprint_combine(x1, x2, ...), hash_buckets) -> one_hot / index
//     image        cast to f32, then z_score / scale_to_0_1 over all pixels (scalars)
//   output   x: f32 [B, D], the features reshaped to [B, width] and concatenated; a spec whose only
//            feature is an image keeps its shape: f32 [B, H, W, C]
// Every reshape writes the batch as -1, so the graph rebatches (tern/serve/rebatch.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tern/ir/graph.h"
#include "tern/transform/analysis.h"
#include "tern/transform/spec.h"

namespace tern::transform {

inline constexpr const char* kTransformOutput = "x";

// The graph at batch `batch`. FailedPrecondition if two vocabulary values share a fingerprint.
std::unique_ptr<ir::Graph> build_transform_graph(const TransformSpec& spec,
                                                 const TransformAnalysis& analysis,
                                                 int64_t batch = 1);

// Columns feature k contributes to x.
int64_t feature_width(const FeatureTransform& f, const FeatureAnalysis& a);
// x per example: [D], or [H, W, C] for a lone image feature.
std::vector<int64_t> transform_output_shape(const TransformSpec& spec,
                                            const TransformAnalysis& analysis);

}  // namespace tern::transform
