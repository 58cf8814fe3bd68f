// [[data.transforms]] -> data::TransformSpec, checked key by key (read_sections.h).
#include <algorithm>
#include <cmath>
#include <tuple>

#include "tern/base/thread_pool.h"
#include "tern/config/config_readers.h"
#include "tern/config/read_sections.h"
#include "tern/data/element_fns.h"

namespace tern::config {
namespace {

using data::ElementFnKind;
using data::TransformKind;

const std::vector<std::string> kOps = {"shuffle", "parse", "map",   "batch", "unbatch", "repeat",
                                       "take",    "skip",  "shard", "cache", "prefetch"};
const std::vector<TransformKind> kOpKinds = {
    TransformKind::kShuffle, TransformKind::kParse,  TransformKind::kMap,     TransformKind::kBatch,
    TransformKind::kUnbatch, TransformKind::kRepeat, TransformKind::kTake,    TransformKind::kSkip,
    TransformKind::kShard,   TransformKind::kCache,  TransformKind::kPrefetch};

// The keys of each op (besides op and apply_to) and of each map fn (besides the map's own).
const KeysByName kOpKeys = {
    {"shuffle", {"buffer", "seed", "reshuffle_each_iteration"}},
    {"parse", {"parallel", "deterministic"}},
    {"map", {"fn", "component", "parallel", "deterministic", "seed"}},
    {"batch", {"size", "drop_remainder"}},
    {"unbatch", {}},
    {"repeat", {"count"}},
    {"take", {"count"}},
    {"skip", {"count"}},
    {"shard", {"num_shards", "index"}},
    {"cache", {}},
    {"prefetch", {"buffer"}},
};
const KeysByName kFnKeys = {
    {"scale", {"factor"}},
    {"cast", {"dtype"}},
    {"normalize", {"mean", "std"}},
    {"reshape", {"shape"}},
    {"resize", {"size", "method"}},
    {"center_crop", {"size"}},
    {"random_crop", {"size"}},
    {"random_flip", {}},
    {"random_brightness", {"max_delta"}},
    {"random_contrast", {"lower", "upper"}},
    {"one_hot", {"depth"}},
    {"decode_image", {"channels"}},
    {"read_image", {"channels"}},
};

data::ElementFnSpec read_fn(Section& t, const TrainConfig& cfg) {
  data::ElementFnSpec f;
  const std::string fn = read_choice(t, "fn", data::element_fn_names(), "");
  reject_keys_of_other_names(t, "fn", fn, {"op", "fn"}, kFnKeys,
                             {"component", "parallel", "deterministic", "seed", "apply_to"});
  f.kind = data::element_fn_from_name(fn);
  if (f.kind == ElementFnKind::kOneHot) f.component = 1;
  t.read("component", f.component);
  switch (f.kind) {
    case ElementFnKind::kScale:
      t.read("factor", f.factor);
      if (!std::isfinite(f.factor)) {
        t.error("factor", str_cat("key '", t.full("factor"), "' must be finite, got ", f.factor));
      }
      break;
    case ElementFnKind::kCast:
      f.dtype = read_dtype(t, "dtype");
      break;
    case ElementFnKind::kNormalize: {
      std::vector<double> mean = {0}, stddev = {1};
      t.read_numbers("mean", mean);
      t.read_numbers("std", stddev);
      f.mean = to_floats(mean);
      f.stddev = to_floats(stddev);
      break;
    }
    case ElementFnKind::kReshape:
      f.shape = read_required<std::vector<int64_t>>(t, "shape");
      break;
    case ElementFnKind::kResize:
      std::tie(f.height, f.width) = read_size(t, "size");
      f.method = read_choice(t, "method", {"bilinear", "nearest"}, "bilinear") == "nearest"
                     ? data::ResizeMethod::kNearest
                     : data::ResizeMethod::kBilinear;
      break;
    case ElementFnKind::kCenterCrop:
    case ElementFnKind::kRandomCrop:
      std::tie(f.height, f.width) = read_size(t, "size");
      break;
    case ElementFnKind::kRandomFlip:
      break;
    case ElementFnKind::kRandomBrightness:
      f.max_delta = static_cast<float>(read_required<double>(t, "max_delta"));
      break;
    case ElementFnKind::kRandomContrast:
      f.lower = static_cast<float>(read_required<double>(t, "lower"));
      f.upper = static_cast<float>(read_required<double>(t, "upper"));
      break;
    case ElementFnKind::kOneHot:
      f.depth = cfg.data.num_classes;
      t.read("depth", f.depth);
      break;
    case ElementFnKind::kDecodeImage:
    case ElementFnKind::kReadImage:
      t.read("channels", f.channels);
      break;
  }
  try {
    data::validate_element_fn(f, str_cat("map fn = \"", data::element_fn_name(f.kind), "\""));
  } catch (const Error& e) {
    t.error("fn", str_cat(t.path(), ": ", e.message()));
  }
  return f;
}

data::TransformSpec read_transform(Section& t, size_t index, const TrainConfig& cfg) {
  std::string op = read_choice(t, "op", kOps, "");
  if (op != "map") reject_keys_of_other_names(t, "op", op, {"op"}, kOpKeys, {"apply_to"});
  data::TransformSpec s;
  s.kind = kOpKinds[static_cast<size_t>(std::find(kOps.begin(), kOps.end(), op) - kOps.begin())];
  s.origin = origin_of(t);
  const bool train_only = s.kind == TransformKind::kShuffle || s.kind == TransformKind::kRepeat;
  std::string apply_to =
      read_choice(t, "apply_to", {"all", "train", "eval"}, train_only ? "train" : "all");
  s.apply_to = apply_to == "all"     ? data::ApplyTo::kAll
               : apply_to == "train" ? data::ApplyTo::kTrain
                                     : data::ApplyTo::kEval;
  auto positive = [&](const char* key, int64_t v) {
    if (v <= 0) t.error(key, str_cat("key '", t.full(key), "' must be positive, got ", v));
  };
  switch (s.kind) {
    case TransformKind::kShuffle:
      s.size = read_required<int64_t>(t, "buffer");
      positive("buffer", s.size);
      s.seed = cfg.training.fit.seed;
      t.read("seed", s.seed);
      t.read("reshuffle_each_iteration", s.reshuffle_each_iteration);
      break;
    case TransformKind::kMap:
      s.fns = {read_fn(t, cfg)};
      s.seed = cfg.training.fit.seed + index;
      t.read("seed", s.seed);
      [[fallthrough]];
    case TransformKind::kParse:
      // Parsing is heavy: AUTOTUNE threads. Element functions run on the thread that asks for the
      // element (tf.data's default; no hand-off), unless `parallel` says otherwise.
      s.num_parallel_calls = s.kind == TransformKind::kParse ? data::kAutotune : 0;
      t.read("parallel", s.num_parallel_calls);
      if (s.num_parallel_calls != 0) {
        if (std::string why = thread_count_problem(s.num_parallel_calls, false, true);
            !why.empty()) {
          t.error("parallel", str_cat("key '", t.full("parallel"), "' ", why,
                                      " (0: on the consumer's thread)"));
        }
      }
      t.read("deterministic", s.deterministic);
      break;
    case TransformKind::kBatch:
      s.size = cfg.training.fit.batch_size;
      t.read("size", s.size);
      positive("size", s.size);
      t.read("drop_remainder", s.drop_remainder);
      break;
    case TransformKind::kRepeat:
      s.size = -1;
      t.read("count", s.size);
      break;
    case TransformKind::kTake:
    case TransformKind::kSkip:
      s.size = read_required<int64_t>(t, "count");
      break;
    case TransformKind::kShard:
      s.num_shards = read_required<int64_t>(t, "num_shards");
      positive("num_shards", s.num_shards);
      s.index = read_required<int64_t>(t, "index");
      if (s.index < 0 || s.index >= s.num_shards)
        t.error("index", "key 'index' must be in [0, num_shards)");
      break;
    case TransformKind::kPrefetch:
      s.size = cfg.data.prefetch;
      t.read("buffer", s.size);
      if (s.size == 0 || s.size < -1)
        t.error("buffer", "key 'buffer' must be -1 (AUTOTUNE) or positive");
      break;
    case TransformKind::kUnbatch:
    case TransformKind::kCache:
      break;
  }
  t.finish();
  return s;
}

bool applies(const data::TransformSpec& t, data::PipelineMode mode) {
  return t.apply_to == data::ApplyTo::kAll ||
         (t.apply_to == data::ApplyTo::kTrain) == (mode == data::PipelineMode::kTrain);
}

// Parse exactly once (tfrecord) and before batching; an endless repeat needs steps_per_epoch; a
// batch (training.batch_size) and a final prefetch are added where missing.
void check_and_complete(std::vector<Section>& tables, data::PipelineSpec& spec,
                        const TrainConfig& cfg, const std::string& source, Section& data) {
  auto& ts = spec.transforms;
  int parses = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const auto& t = ts[i];
    if (t.kind == TransformKind::kParse) {
      if (source != "tfrecord")
        tables[i].error("op", str_cat(tables[i].path(),
                                      ": op \"parse\" reads tf.train.Example records; source is \"",
                                      source, "\""));
      if (t.apply_to != data::ApplyTo::kAll)
        tables[i].error("apply_to", "op \"parse\" must apply to all splits");
      ++parses;
      // Right after a batch it parses whole batches (one call per batch); otherwise records.
      const bool after_batch = i > 0 && ts[i - 1].kind == TransformKind::kBatch &&
                               ts[i - 1].apply_to == data::ApplyTo::kAll;
      for (size_t j = 0; j + (after_batch ? 1 : 0) < i; ++j) {
        if (ts[j].kind == TransformKind::kBatch || ts[j].kind == TransformKind::kUnbatch) {
          tables[i].error("op",
                          str_cat(tables[i].path(), ": op \"parse\" must come before the batch in ",
                                  tables[j].path(), " or right after it"));
        }
      }
    }
    if (t.kind == TransformKind::kRepeat && t.size < 0 && applies(t, data::PipelineMode::kTrain) &&
        cfg.training.fit.steps_per_epoch <= 0) {
      tables[i].error(
          "op", str_cat(tables[i].path(), ": an endless repeat needs training.steps_per_epoch"));
    }
  }
  if (source == "tfrecord" && parses != 1) {
    data.error(
        parses ? "transforms" : "source",
        parses
            ? "source = \"tfrecord\" takes one op = \"parse\" transform"
            : "source = \"tfrecord\" needs a [[data.transforms]] with op = \"parse\" (decodes the "
              "tf.train.Example records with [data.features])");
  }
  for (auto mode : {data::PipelineMode::kTrain, data::PipelineMode::kEval}) {
    bool batched = std::any_of(ts.begin(), ts.end(), [&](const auto& t) {
      return t.kind == TransformKind::kBatch && applies(t, mode);
    });
    if (batched) continue;
    data::TransformSpec b = data::batch_transform(cfg.training.fit.batch_size);
    b.apply_to = mode == data::PipelineMode::kTrain ? data::ApplyTo::kTrain : data::ApplyTo::kEval;
    b.origin = str_cat(cfg.path, ": batch (training.batch_size, added)");
    ts.push_back(b);
  }
  if (ts.back().kind != TransformKind::kPrefetch) {
    data::TransformSpec p = data::prefetch_transform(cfg.data.prefetch);
    p.origin = str_cat(cfg.path, ": prefetch (data.prefetch, added)");
    ts.push_back(p);
  }
}

}  // namespace

void read_pipeline_transforms(Section& data, TrainConfig& cfg) {
  std::vector<Section> tables = data.tables("transforms");
  for (size_t i = 0; i < tables.size(); ++i) {
    cfg.data.pipeline.transforms.push_back(read_transform(tables[i], i, cfg));
  }
  check_and_complete(tables, cfg.data.pipeline, cfg, cfg.data.source, data);
}

}  // namespace tern::config
