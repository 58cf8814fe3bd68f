// data.dataset: the IDX files as in-memory tensors, and the pipelines over them.
#include <algorithm>
#include <filesystem>

#include "tern/config/training_data.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/idx_images.h"
#include "tern/data/tensor_slice_dataset.h"

namespace tern::config {
namespace {

std::string require_file(const std::string& path, const TrainConfig& cfg, const char* key) {
  if (std::filesystem::exists(path)) return path;
  if (cfg.data.dataset == "fashion_mnist") {
    throw_error(ErrorCode::kNotFound, "Fashion-MNIST file '", path,
                "' is missing: install Debian's package dataset-fashion-mnist "
                "(scripts/install-deps.sh does), "
                "or set data.dir in ",
                cfg.path);
  }
  throw_error(ErrorCode::kNotFound, cfg.path, ": data.", key, " = '", path, "' does not exist");
}

Tensor read_labels(const std::string& path, const TrainConfig& cfg) {
  try {
    return data::idx_labels_to_i64(data::read_idx(path), cfg.data.num_classes, path);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) throw;
    throw_error(e.code(), e.message(), " (data.num_classes in ", cfg.path, ")");
  }
}

}  // namespace

ClassificationData load_data(const TrainConfig& cfg) {
  const DataConfig& data_config = cfg.data;
  std::string ti, tl, vi, vl;
  if (data_config.dataset == "fashion_mnist" || data_config.dataset == "mnist") {
    ti = data_config.dir + "/train-images-idx3-ubyte.gz";
    tl = data_config.dir + "/train-labels-idx1-ubyte.gz";
    vi = data_config.dir + "/t10k-images-idx3-ubyte.gz";
    vl = data_config.dir + "/t10k-labels-idx1-ubyte.gz";
  } else if (data_config.dataset == "idx") {
    ti = data_config.train_images;
    tl = data_config.train_labels;
    vi = data_config.test_images;
    vl = data_config.test_labels;
  } else {
    throw_error(ErrorCode::kInvalidArgument, cfg.path, ": key 'data.dataset' = '",
                data_config.dataset, "' is not one of fashion_mnist, mnist, idx");
  }
  ClassificationData out;
  out.train_x = data::idx_images_to_f32(data::read_idx(require_file(ti, cfg, "train_images")), ti);
  out.train_y = read_labels(require_file(tl, cfg, "train_labels"), cfg);
  out.test_x = data::idx_images_to_f32(data::read_idx(require_file(vi, cfg, "test_images")), vi);
  out.test_y = read_labels(require_file(vl, cfg, "test_labels"), cfg);
  TERN_CHECK_ARG(out.train_x.shape()[0] == out.train_y.shape()[0], ti, " has ",
                 out.train_x.shape()[0], " images but ", tl, " has ", out.train_y.shape()[0],
                 " labels");
  TERN_CHECK_ARG(out.test_x.shape()[0] == out.test_y.shape()[0], vi, " has ", out.test_x.shape()[0],
                 " images but ", vl, " has ", out.test_y.shape()[0], " labels");
  const auto& dims = out.train_x.shape().dims();
  out.sample_shape = Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
  return out;
}

data::DatasetPtr training_pipeline(const TrainConfig& cfg, const Tensor& x, const Tensor& y,
                                   data::WorkerShard shard) {
  const int64_t batch = local_train_batch(cfg, shard);
  data::DatasetPtr ds =
      data::from_tensor_slices({data::worker_rows(x, shard), data::worker_rows(y, shard)});
  if (cfg.data.shuffle_buffer > 1)
    ds =
        ds->shuffle(cfg.data.shuffle_buffer, data::worker_seed(cfg.training.fit.seed, shard), true);
  return ds->batch(batch)->prefetch(cfg.data.prefetch);
}

int64_t local_train_batch(const TrainConfig& cfg, data::WorkerShard shard) {
  try {
    return data::local_batch_size(cfg.training.fit.batch_size, shard, "training.batch_size");
  } catch (const Error& e) {
    throw_error(e.code(), cfg.path, ": ", e.message());
  }
}

data::DatasetPtr eval_pipeline(const TrainConfig& cfg, const Tensor& x, const Tensor& y) {
  return data::from_tensor_slices({x, y})
      ->batch(std::max<int64_t>(cfg.training.fit.batch_size, 256))
      ->prefetch(cfg.data.prefetch);
}

}  // namespace tern::config
