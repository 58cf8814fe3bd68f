// data.dataset: the IDX files as in-memory tensors, and the pipelines over them.
#include <algorithm>
#include <filesystem>

#include "tern/config/training_data.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/idx_images.h"
#include "tern/data/tensor_slice_dataset.h"

namespace tern::config {
namespace {

std::string require_file(const std::string& path, const TrainConfig& c, const char* key) {
  if (std::filesystem::exists(path)) return path;
  if (c.data.dataset == "fashion_mnist") {
    throw_error(ErrorCode::kNotFound, "Fashion-MNIST file '", path,
                "' is missing: install Debian's package dataset-fashion-mnist "
                "(scripts/install-deps.sh does), "
                "or set data.dir in ",
                c.path);
  }
  throw_error(ErrorCode::kNotFound, c.path, ": data.", key, " = '", path, "' does not exist");
}

Tensor read_labels(const std::string& path, const TrainConfig& c) {
  try {
    return data::idx_labels_to_i64(data::read_idx(path), c.data.num_classes, path);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) throw;
    throw_error(e.code(), e.message(), " (data.num_classes in ", c.path, ")");
  }
}

}  // namespace

ClassificationData load_data(const TrainConfig& c) {
  const DataConfig& d = c.data;
  std::string ti, tl, vi, vl;
  if (d.dataset == "fashion_mnist" || d.dataset == "mnist") {
    ti = d.dir + "/train-images-idx3-ubyte.gz";
    tl = d.dir + "/train-labels-idx1-ubyte.gz";
    vi = d.dir + "/t10k-images-idx3-ubyte.gz";
    vl = d.dir + "/t10k-labels-idx1-ubyte.gz";
  } else if (d.dataset == "idx") {
    ti = d.train_images;
    tl = d.train_labels;
    vi = d.test_images;
    vl = d.test_labels;
  } else {
    throw_error(ErrorCode::kInvalidArgument, c.path, ": key 'data.dataset' = '", d.dataset,
                "' is not one of fashion_mnist, mnist, idx");
  }
  ClassificationData out;
  out.train_x = data::idx_images_to_f32(data::read_idx(require_file(ti, c, "train_images")), ti);
  out.train_y = read_labels(require_file(tl, c, "train_labels"), c);
  out.test_x = data::idx_images_to_f32(data::read_idx(require_file(vi, c, "test_images")), vi);
  out.test_y = read_labels(require_file(vl, c, "test_labels"), c);
  TERN_CHECK_ARG(out.train_x.shape()[0] == out.train_y.shape()[0], ti, " has ",
                 out.train_x.shape()[0], " images but ", tl, " has ", out.train_y.shape()[0],
                 " labels");
  TERN_CHECK_ARG(out.test_x.shape()[0] == out.test_y.shape()[0], vi, " has ", out.test_x.shape()[0],
                 " images but ", vl, " has ", out.test_y.shape()[0], " labels");
  const auto& dims = out.train_x.shape().dims();
  out.sample_shape = Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
  return out;
}

data::DatasetPtr training_pipeline(const TrainConfig& c, const Tensor& x, const Tensor& y) {
  data::DatasetPtr ds = data::from_tensor_slices({x, y});
  if (c.data.shuffle_buffer > 1) ds = ds->shuffle(c.data.shuffle_buffer, c.training.fit.seed, true);
  return ds->batch(c.training.fit.batch_size)->prefetch(c.data.prefetch);
}

data::DatasetPtr eval_pipeline(const TrainConfig& c, const Tensor& x, const Tensor& y) {
  return data::from_tensor_slices({x, y})
      ->batch(std::max<int64_t>(c.training.fit.batch_size, 256))
      ->prefetch(c.data.prefetch);
}

}  // namespace tern::config
