// Building the transforms of pipeline specs, each in its training or evaluation form, with
// consecutive maps fused into one stage and a batch + parse fused into one batched parse (the
// sources are in pipeline_sources.cc).
#include "tern/data/pipeline_spec.h"

#include <algorithm>

#include "tern/base/error.h"
#include "tern/data/example_dataset.h"
#include "tern/data/image_augment.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

bool applies(const TransformSpec& t, PipelineMode mode) {
  if (t.apply_to == ApplyTo::kAll) return true;
  return (t.apply_to == ApplyTo::kTrain) == (mode == PipelineMode::kTrain);
}

// --- planning: which transforms run as one stage ---

// A transform alone, a batch with the parse right after it, or a run of consecutive maps (equal
// `deterministic`) fused into one map.
struct Stage {
  std::vector<const TransformSpec*> transforms;
  bool batch_then_parse = false;
  bool is_map() const { return transforms.front()->kind == TransformKind::kMap; }
};

std::vector<Stage> plan_stages(const PipelineSpec& spec, PipelineMode mode) {
  std::vector<const TransformSpec*> ts;
  for (const auto& t : spec.transforms) {
    if (applies(t, mode)) ts.push_back(&t);
  }
  std::vector<Stage> stages;
  for (size_t i = 0; i < ts.size(); ++i) {
    const TransformSpec* t = ts[i];
    if (t->kind == TransformKind::kBatch && i + 1 < ts.size() &&
        ts[i + 1]->kind == TransformKind::kParse) {
      stages.push_back({{t, ts[++i]}, true});
    } else if (t->kind == TransformKind::kMap && !stages.empty() && stages.back().is_map() &&
               stages.back().transforms.back()->deterministic == t->deterministic) {
      stages.back().transforms.push_back(t);
    } else {
      stages.push_back({{t}, false});
    }
  }
  return stages;
}

// The functions a map runs in `mode` (evaluation drops the random ones whose inference form is
// the identity).
std::vector<ElementFnSpec> active_fns(const TransformSpec& t, PipelineMode mode) {
  std::vector<ElementFnSpec> fns;
  for (const auto& f : t.fns) {
    if (mode == PipelineMode::kEval && element_fn_is_identity_in_eval(f.kind)) continue;
    fns.push_back(f);
  }
  return fns;
}

// AUTOTUNE if either asks for it, else the larger thread count.
int64_t widest_parallelism(int64_t a, int64_t b) {
  if (a == kAutotune || b == kAutotune) return kAutotune;
  return std::max(a, b);
}

// --- building ---

// One transform of a fused map: its functions, seed and origin.
struct MapStep {
  std::vector<ElementFnSpec> fns;
  uint64_t seed = 0;
  std::string origin;
};

// Consecutive maps as one map stage. Random functions take one key per element (mixed from the
// epoch and the element's position, then from their transform's seed and their index in it), so
// their draws depend neither on the number of map threads nor on the fusion.
DatasetPtr add_fused_map(DatasetPtr ds, const std::vector<const TransformSpec*>& maps,
                         PipelineMode mode) {
  const bool training = mode == PipelineMode::kTrain;
  std::vector<MapStep> steps;
  bool random = false;
  int64_t parallel = 0;
  for (const TransformSpec* t : maps) {
    for (const auto& f : t->fns) validate_element_fn(f, t->origin);
    std::vector<ElementFnSpec> fns = active_fns(*t, mode);
    if (fns.empty()) continue;
    for (const auto& f : fns) random = random || (training && element_fn_is_random(f.kind));
    parallel =
        steps.empty() ? t->num_parallel_calls : widest_parallelism(parallel, t->num_parallel_calls);
    steps.push_back({std::move(fns), t->seed, t->origin});
  }
  if (steps.empty()) return ds;
  if (random) ds = with_random_keys(ds, 0);
  return ds->map(
      [steps, random, training](Element e) {
        uint64_t key = 0;
        if (random) {
          key = static_cast<uint64_t>(*e.back().data<int64_t>());
          e.pop_back();
        }
        for (const MapStep& s : steps) {
          const uint64_t step_key = mix_seed(key, s.seed);
          for (size_t i = 0; i < s.fns.size(); ++i) {
            try {
              e = apply_element_fn(s.fns[i], std::move(e), mix_seed(step_key, i), training);
            } catch (const Error& err) {
              throw_error(err.code(), s.origin, ": ", err.message());
            }
          }
        }
        return e;
      },
      {.num_parallel_calls = parallel, .deterministic = maps.front()->deterministic});
}

DatasetPtr add_transform(DatasetPtr ds, const TransformSpec& t, const SourceSpec& source) {
  switch (t.kind) {
    case TransformKind::kShuffle:
      return ds->shuffle(t.size, t.seed, t.reshuffle_each_iteration);
    case TransformKind::kParse:
      TERN_CHECK_ARG(source.kind == SourceKind::kTFRecord,
                     "parse reads tf.train.Example records: it needs a "
                     "tfrecord source");
      return parse_example(
          ds, source.features,
          {.num_parallel_calls = t.num_parallel_calls, .deterministic = t.deterministic});
    case TransformKind::kBatch:
      return ds->batch(t.size, t.drop_remainder);
    case TransformKind::kUnbatch:
      return ds->unbatch();
    case TransformKind::kRepeat:
      return ds->repeat(t.size);
    case TransformKind::kTake:
      return ds->take(t.size);
    case TransformKind::kSkip:
      return ds->skip(t.size);
    case TransformKind::kShard:
      return ds->shard(t.num_shards, t.index);
    case TransformKind::kCache:
      return ds->cache();
    case TransformKind::kPrefetch:
      return ds->prefetch(t.size);
    case TransformKind::kMap:
      break;  // add_fused_map
  }
  return ds;
}

DatasetPtr add_stage(DatasetPtr ds, const Stage& stage, const SourceSpec& source,
                     PipelineMode mode) {
  if (stage.is_map()) return add_fused_map(std::move(ds), stage.transforms, mode);
  const TransformSpec& t = *stage.transforms.front();
  if (!stage.batch_then_parse) return add_transform(std::move(ds), t, source);
  // Batch, then parse the batch in one call: one map element per batch instead of per record.
  const TransformSpec& p = *stage.transforms.back();
  TERN_CHECK_ARG(source.kind == SourceKind::kTFRecord,
                 "parse reads tf.train.Example records: it needs a tfrecord source");
  return parse_example_batched(
      ds, t.size, source.features, t.drop_remainder,
      {.num_parallel_calls = p.num_parallel_calls, .deterministic = p.deterministic});
}

std::string describe_stage(const Stage& stage, PipelineMode mode) {
  const TransformSpec& t = *stage.transforms.front();
  if (stage.batch_then_parse) return str_cat("batch(", t.size, ")+parse");
  if (stage.is_map()) {
    std::string fns;
    for (const TransformSpec* m : stage.transforms) {
      for (const auto& f : active_fns(*m, mode))
        fns += (fns.empty() ? "" : "+") + element_fn_name(f.kind);
    }
    return fns.empty() ? "" : "map(" + fns + ")";
  }
  const std::string name = transform_kind_name(t.kind);
  switch (t.kind) {
    case TransformKind::kShuffle:
    case TransformKind::kBatch:
    case TransformKind::kTake:
    case TransformKind::kSkip:
      return str_cat(name, "(", t.size, ")");
    case TransformKind::kRepeat:
      return t.size < 0 ? name : str_cat(name, "(", t.size, ")");
    case TransformKind::kPrefetch:
      return t.size == kAutotune ? name + "(autotune)" : str_cat(name, "(", t.size, ")");
    case TransformKind::kShard:
      return str_cat(name, "(", t.index, "/", t.num_shards, ")");
    default:
      return name;
  }
}

}  // namespace

DatasetPtr apply_transforms(DatasetPtr input, const PipelineSpec& spec, PipelineMode mode) {
  DatasetPtr ds = std::move(input);
  for (const Stage& stage : plan_stages(spec, mode)) {
    try {
      ds = add_stage(ds, stage, spec.source, mode);
    } catch (const Error& e) {
      const std::string& origin = stage.transforms.front()->origin;
      if (e.message().rfind(origin, 0) == 0 || stage.is_map()) throw;
      throw_error(e.code(), origin, ": ", e.message());
    }
  }
  return ds;
}

std::vector<std::string> describe_pipeline(const PipelineSpec& spec, PipelineMode mode) {
  std::vector<std::string> out = {source_kind_name(spec.source.kind)};
  for (const Stage& stage : plan_stages(spec, mode)) {
    std::string d = describe_stage(stage, mode);
    if (!d.empty()) out.push_back(std::move(d));
  }
  return out;
}

DatasetPtr build_input_pipeline(const PipelineSpec& spec, const std::vector<std::string>& inputs,
                                PipelineMode mode) {
  return apply_transforms(build_source(spec.source, inputs, mode), spec, mode);
}

}  // namespace tern::data
