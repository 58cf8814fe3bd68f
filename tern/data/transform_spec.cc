// TransformSpec helpers: kind names, constructors, and what transforms do to element counts.
#include <algorithm>

#include "tern/data/pipeline_spec.h"

namespace tern::data {
namespace {

bool applies(const TransformSpec& t, PipelineMode mode) {
  if (t.apply_to == ApplyTo::kAll) return true;
  return (t.apply_to == ApplyTo::kTrain) == (mode == PipelineMode::kTrain);
}

TransformSpec transform(TransformKind kind) {
  TransformSpec t;
  t.kind = kind;
  t.origin = transform_kind_name(kind);
  return t;
}

}  // namespace

std::string transform_kind_name(TransformKind kind) {
  switch (kind) {
    case TransformKind::kShuffle:
      return "shuffle";
    case TransformKind::kParse:
      return "parse";
    case TransformKind::kMap:
      return "map";
    case TransformKind::kBatch:
      return "batch";
    case TransformKind::kUnbatch:
      return "unbatch";
    case TransformKind::kRepeat:
      return "repeat";
    case TransformKind::kTake:
      return "take";
    case TransformKind::kSkip:
      return "skip";
    case TransformKind::kShard:
      return "shard";
    case TransformKind::kCache:
      return "cache";
    case TransformKind::kPrefetch:
      return "prefetch";
  }
  return "?";
}

TransformSpec shuffle_transform(int64_t buffer, uint64_t seed) {
  TransformSpec t = transform(TransformKind::kShuffle);
  t.apply_to = ApplyTo::kTrain;
  t.size = buffer;
  t.seed = seed;
  return t;
}

TransformSpec parse_transform(int64_t num_parallel_calls) {
  TransformSpec t = transform(TransformKind::kParse);
  t.num_parallel_calls = num_parallel_calls;
  return t;
}

TransformSpec map_transform(ElementFnSpec fn, int64_t num_parallel_calls) {
  TransformSpec t = transform(TransformKind::kMap);
  t.fns = {std::move(fn)};
  t.num_parallel_calls = num_parallel_calls;
  return t;
}

TransformSpec batch_transform(int64_t size, bool drop_remainder) {
  TransformSpec t = transform(TransformKind::kBatch);
  t.size = size;
  t.drop_remainder = drop_remainder;
  return t;
}

TransformSpec prefetch_transform(int64_t buffer) {
  TransformSpec t = transform(TransformKind::kPrefetch);
  t.size = buffer;
  return t;
}

int64_t transformed_cardinality(int64_t n, const PipelineSpec& spec, PipelineMode mode) {
  for (const auto& t : spec.transforms) {
    if (!applies(t, mode) || n == kUnknownCardinality) continue;
    const bool infinite = n == kInfiniteCardinality;
    switch (t.kind) {
      case TransformKind::kBatch:
        if (!infinite) n = t.drop_remainder ? n / t.size : (n + t.size - 1) / t.size;
        break;
      case TransformKind::kUnbatch:
        n = kUnknownCardinality;
        break;
      case TransformKind::kRepeat:
        if (t.size < 0) {
          n = n == 0 ? 0 : kInfiniteCardinality;
        } else if (!infinite) {
          n *= t.size;
        }
        break;
      case TransformKind::kTake:
        if (t.size >= 0) n = infinite ? t.size : std::min(n, t.size);
        break;
      case TransformKind::kSkip:
        if (!infinite) n = t.size < 0 ? 0 : std::max<int64_t>(0, n - t.size);
        break;
      case TransformKind::kShard:
        if (!infinite) n = n > t.index ? (n - t.index + t.num_shards - 1) / t.num_shards : 0;
        break;
      default:
        break;
    }
  }
  return n;
}

bool yields_batches(const PipelineSpec& spec, PipelineMode mode) {
  bool batched = false;
  for (const auto& t : spec.transforms) {
    if (!applies(t, mode)) continue;
    if (t.kind == TransformKind::kBatch) batched = true;
    if (t.kind == TransformKind::kUnbatch) batched = false;
  }
  return batched;
}

}  // namespace tern::data
