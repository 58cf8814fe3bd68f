// The datasets of a config (training_data.h): in-memory tensors for data.dataset, or the input
// pipeline data.source and [[data.transforms]] describe.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "tern/config/training_data.h"
#include "tern/data/image_folder.h"
#include "tern/data/iterator.h"
#include "tern/data/pipeline_spec.h"

namespace tern::config {
namespace {

using data::DatasetPtr;
using data::PipelineMode;

TrainingData tensor_data(const TrainConfig& cfg, bool with_train, data::WorkerShard shard) {
  ClassificationData d = load_data(cfg);
  TrainingData t;
  t.sample_shape = d.sample_shape;
  t.test = eval_pipeline(cfg, d.test_x, d.test_y);
  if (!with_train) return t;
  Tensor train_x = d.train_x, train_y = d.train_y;
  if (cfg.data.validation_split > 0) {
    int64_t n = train_x.shape()[0];
    auto n_val = static_cast<int64_t>(static_cast<double>(n) * cfg.data.validation_split);
    t.validation =
        eval_pipeline(cfg, train_x.slice_rows(n - n_val, n), train_y.slice_rows(n - n_val, n));
    train_x = train_x.slice_rows(0, n - n_val);
    train_y = train_y.slice_rows(0, n - n_val);
  } else if (cfg.data.validate_on_test) {
    t.validation = t.test;
  }
  // The validation rows are held out of the whole set; the worker's rows come from the rest.
  t.train = training_pipeline(cfg, train_x, train_y, shard);
  t.train_samples = data::worker_elements(train_x.shape()[0], shard);
  t.steps_per_epoch =
      data::worker_batches(train_x.shape()[0], shard, local_train_batch(cfg, shard), false);
  t.shard_description = data::describe_worker_shard(
      shard.num_workers == 1 ? data::ShardPolicy::kNone : data::ShardPolicy::kElement, shard, 0, 0);
  if (cfg.training.fit.steps_per_epoch > 0)
    t.steps_per_epoch = std::min(t.steps_per_epoch, cfg.training.fit.steps_per_epoch);
  return t;
}

// With a sparse loss, integer labels outside [0, num_classes) are an error naming the row and
// where it came from (the in-memory path checks the label files up front).
DatasetPtr check_labels(const TrainConfig& cfg, DatasetPtr ds) {
  if (cfg.loss.name != "sparse_categorical_crossentropy") return ds;
  const int64_t classes = cfg.data.num_classes;
  const std::string path = cfg.path;
  return ds->map([classes, path](data::Element e) {
    if (e.size() < 2 || !is_integer(e[1].dtype())) return e;
    const Tensor& y = e[1];
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      const double v = y.get(i);
      if (v < 0 || v >= static_cast<double>(classes)) {
        // The exact integer (int64 labels near 2^63 do not fit a double's cast back: UBSan).
        const std::string label = y.dtype() == DType::kI64
                                      ? std::to_string(y.data<int64_t>()[i])
                                      : std::to_string(static_cast<int64_t>(v));
        // The row's file and record (or line), also after shuffling (the element's origin).
        const int64_t rows = y.rank() >= 1 ? y.shape().dim(0) : 1;
        const int64_t row = rows > 0 ? i / (y.num_elements() / rows) : i;
        const std::string where = data::row_position(e, row);
        throw_error(ErrorCode::kInvalidArgument, path, ": [data]: label ", label,
                    where.empty() ? "" : " at ", where, " (row ", row,
                    " of a batch) is outside [0, ", classes, ") (data.num_classes)");
      }
    }
    return e;
  });
}

void check_idx_files(const TrainConfig& cfg, const std::vector<std::string>& files) {
  for (const auto& f : files) {
    if (std::filesystem::exists(f)) continue;
    if (cfg.data.source == "fashion_mnist") {
      throw_error(ErrorCode::kNotFound, "Fashion-MNIST file '", f,
                  "' is missing: install Debian's package dataset-fashion-mnist "
                  "(scripts/install-deps.sh does), "
                  "or set data.dir in ",
                  cfg.path);
    }
    throw_error(ErrorCode::kNotFound, cfg.path, ": [data]: file '", f, "' does not exist");
  }
}

// Runs `build`, naming the config in errors that do not already.
template <typename Fn>
auto in_config(const TrainConfig& cfg, Fn&& build) {
  try {
    return build();
  } catch (const Error& e) {
    if (e.message().rfind(cfg.path, 0) == 0) throw;
    throw_error(e.code(), cfg.path, ": [data]: ", e.message());
  }
}

// The input shape and a dtype check, from the first test batch (no shuffle buffer to fill).
Shape peek_sample_shape(const TrainConfig& cfg, const DatasetPtr& test) {
  data::Iterator it = test->make_iterator();
  std::optional<data::Element> e = in_config(cfg, [&] { return it.next(); });
  if (!e) throw_error(ErrorCode::kInvalidArgument, cfg.path, ": [data]: the test split is empty");
  if (e->size() < 2) {
    throw_error(ErrorCode::kInvalidArgument, cfg.path,
                ": [data]: elements must be (input, label) after the "
                "transforms, got ",
                data::element_signature(*e));
  }
  const Tensor& x = (*e)[0];
  if (!is_floating(x.dtype())) {
    throw_error(
        ErrorCode::kInvalidArgument, cfg.path, ": [data]: the model input is ",
        dtype_name(x.dtype()), x.shape(),
        " after the transforms; add a [[data.transforms]] op = \"map\" with fn = \"scale\", "
        "\"normalize\" or \"cast\" to make it floating");
  }
  const auto& dims = x.shape().dims();
  return Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
}

}  // namespace

TrainBatch train_batch(const TrainConfig& cfg) {
  TrainBatch b{cfg.training.fit.batch_size, "training.batch_size"};
  if (!cfg.data.uses_pipeline()) return b;
  const auto& ts = cfg.data.pipeline.transforms;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].kind != data::TransformKind::kBatch || ts[i].apply_to == data::ApplyTo::kEval)
      continue;
    // The batch load_config adds (when the pipeline has none) is the last transform but one.
    const bool added = ts[i].origin.find("(training.batch_size, added)") != std::string::npos;
    b = {ts[i].size, added ? "training.batch_size" : str_cat("data.transforms[", i, "]")};
  }
  return b;
}

namespace {

// The worker's training form of the pipeline; a batch of training.batch_size that the workers do
// not divide is an error naming that key.
data::PipelineSpec worker_spec(const TrainConfig& cfg, data::WorkerShard shard) {
  const data::PipelineSpec& spec = cfg.data.pipeline;
  for (const auto& t : spec.transforms) {
    if (t.kind == data::TransformKind::kBatch && t.apply_to != data::ApplyTo::kEval &&
        t.size == cfg.training.fit.batch_size)
      local_train_batch(cfg, shard);
  }
  return in_config(cfg, [&] { return data::worker_pipeline(spec, shard); });
}

TrainingData pipeline_data(const TrainConfig& cfg, bool with_train, data::WorkerShard shard) {
  if (cfg.data.pipeline.source.kind == data::SourceKind::kImageDir &&
      cfg.data.pipeline.source.class_names.empty() && !cfg.data.train_inputs.empty()) {
    // One class map for every split: the training folder's subfolders (each split's own listing
    // shifted labels when a test folder had a class more or less: bad-input report F6).
    TrainConfig resolved = cfg;
    resolved.data.pipeline.source.class_names =
        in_config(cfg, [&] { return data::image_folder_classes(cfg.data.train_inputs[0]); });
    return pipeline_data(resolved, with_train, shard);
  }
  const DataConfig& data_config = cfg.data;
  const data::PipelineSpec& spec = data_config.pipeline;
  const bool idx = spec.source.kind == data::SourceKind::kIdx;
  if (idx) {
    check_idx_files(cfg, data_config.test_inputs);
    if (with_train) check_idx_files(cfg, data_config.train_inputs);
  }
  auto finish = [&](DatasetPtr source, PipelineMode mode, const data::PipelineSpec& form) {
    return check_labels(cfg,
                        in_config(cfg, [&] { return data::apply_transforms(source, form, mode); }));
  };
  auto source = [&](const std::vector<std::string>& inputs, PipelineMode mode) {
    return in_config(cfg, [&] { return data::build_source(spec.source, inputs, mode); });
  };
  TrainingData t;
  const auto eval = PipelineMode::kEval;
  t.test = finish(source(data_config.test_inputs, eval), eval, spec);
  t.sample_shape = peek_sample_shape(cfg, t.test);
  if (!with_train) return t;

  const data::PipelineSpec train_spec = worker_spec(cfg, shard);
  data::ShardedSource part;
  if (data_config.validation_from_split && idx) {
    // The last fraction of the (unshuffled) IDX rows, as the in-memory path holds out; the
    // workers shard the rest.
    DatasetPtr all = source(data_config.train_inputs, PipelineMode::kTrain);
    const int64_t n = all->cardinality();
    const auto n_val = static_cast<int64_t>(static_cast<double>(n) * cfg.data.validation_split);
    if (n_val <= 0 || n_val >= n) {
      throw_error(ErrorCode::kInvalidArgument, cfg.path, ": data.validation_split ",
                  cfg.data.validation_split, " of ", n, " samples leaves an empty split");
    }
    t.validation = finish(all->skip(n - n_val), eval, spec);
    part = data::shard_elements(all->take(n - n_val), shard);
  } else {
    part = in_config(cfg, [&] {
      return data::build_sharded_source(spec.source, data_config.train_inputs, shard);
    });
    if (data_config.validation_from_split) {
      t.validation = finish(source(data_config.train_inputs, eval), eval, spec);  // held out
    } else if (!data_config.validation_inputs.empty()) {
      t.validation = finish(source(data_config.validation_inputs, eval), eval, spec);
    } else if (cfg.data.validate_on_test) {
      t.validation = t.test;
    }
  }
  t.shard_description = part.description;
  t.train_samples = part.dataset->cardinality() >= 0 ? part.dataset->cardinality() : -1;
  t.train = finish(part.dataset, PipelineMode::kTrain, train_spec);
  int64_t steps = t.train->cardinality();
  if (steps < 0 && steps != data::kInfiniteCardinality && cfg.training.fit.steps_per_epoch <= 0 &&
      (cfg.schedule.name == "cosine" || shard.num_workers > 1)) {
    // The cosine schedule decays over every step, and workers must agree on their steps: count
    // the worker's records once (no parsing).
    int64_t n = in_config(cfg, [&] {
      return data::count_worker_elements(spec.source, data_config.train_inputs, shard);
    });
    steps = data::transformed_cardinality(n, train_spec, PipelineMode::kTrain);
  }
  t.steps_per_epoch = steps >= 0 ? steps : -1;
  if (cfg.training.fit.steps_per_epoch > 0) {
    t.steps_per_epoch = t.steps_per_epoch < 0
                            ? cfg.training.fit.steps_per_epoch
                            : std::min(t.steps_per_epoch, cfg.training.fit.steps_per_epoch);
  }
  return t;
}

}  // namespace

TrainingData make_training_data(const TrainConfig& cfg, bool with_train, data::WorkerShard shard) {
  data::validate_worker_shard(shard);
  return cfg.data.uses_pipeline() ? pipeline_data(cfg, with_train, shard)
                                  : tensor_data(cfg, with_train, shard);
}

data::Element first_rows(const DatasetPtr& batched, int64_t limit) {
  std::vector<data::Element> rows;
  data::Iterator it = batched->make_iterator();
  while (limit < 0 || static_cast<int64_t>(rows.size()) < limit) {
    std::optional<data::Element> b = it.next();
    if (!b) break;
    const int64_t n = data::leading_dim(*b, "batch");
    for (int64_t r = 0; r < n && (limit < 0 || static_cast<int64_t>(rows.size()) < limit); ++r) {
      rows.push_back(data::element_row(*b, r));
    }
  }
  TERN_CHECK_ARG(!rows.empty(), "no rows to take (limit ", limit, ")");
  return data::stack_elements(rows, "rows");
}

}  // namespace tern::config
