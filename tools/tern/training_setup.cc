// Building data, model, optimizer and callbacks from a TrainConfig.
#include "tools/tern/training_setup.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tern/base/sha256.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/io/safetensors.h"
#include "tern/models/zoo.h"
#include "tern/nn/losses.h"
#include "tern/optim/adam.h"
#include "tern/optim/rmsprop.h"
#include "tern/optim/sgd.h"
#include "tern/train/mixed_precision.h"
#include "tern/train/training_state.h"

namespace tern::tools {
namespace {

std::string require_file(const std::string& path, const TrainConfig& c, const char* key) {
  if (std::filesystem::exists(path)) return path;
  if (c.dataset == "fashion_mnist") {
    throw_error(ErrorCode::kNotFound, "Fashion-MNIST file '", path,
                "' is missing: install Debian's package dataset-fashion-mnist "
                "(scripts/install-deps.sh does), "
                "or set data.dir in ",
                c.path);
  }
  throw_error(ErrorCode::kNotFound, c.path, ": data.", key, " = '", path, "' does not exist");
}

// u8 images [N, H, W] (or [N, H, W, C]) -> f32 [N, H, W, C] in [0, 1].
Tensor images_to_f32(const Tensor& raw, const std::string& path) {
  TERN_CHECK_ARG(raw.rank() == 3 || raw.rank() == 4, "image file '", path, "' has shape ",
                 raw.shape(), "; expected [N, H, W] or [N, H, W, C]");
  Tensor f = raw.cast(DType::kF32);
  float* p = f.data<float>();
  float scale = raw.dtype() == DType::kU8 ? 1.0f / 255.0f : 1.0f;
  for (int64_t i = 0; i < f.num_elements(); ++i) p[i] *= scale;
  if (raw.rank() == 3) return f.reshape({raw.shape()[0], raw.shape()[1], raw.shape()[2], 1});
  return f;
}

Tensor labels_to_i64(const Tensor& raw, int64_t num_classes, const std::string& path) {
  TERN_CHECK_ARG(raw.rank() == 1, "label file '", path, "' has shape ", raw.shape(),
                 "; expected [N]");
  TERN_CHECK_ARG(is_integer(raw.dtype()), "label file '", path, "' holds ", dtype_name(raw.dtype()),
                 ", not integers");
  Tensor y = raw.cast(DType::kI64);
  const int64_t* p = y.data<int64_t>();
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    if (p[i] < 0 || p[i] >= num_classes) {
      throw_error(ErrorCode::kInvalidArgument, "label file '", path, "': label ", p[i],
                  " at index ", i, " is outside [0, ", num_classes, ") (data.num_classes)");
    }
  }
  return y;
}

optim::SchedulePtr make_schedule(const TrainConfig& c, int64_t steps_per_epoch) {
  optim::SchedulePtr s;
  const std::string& n = c.schedule;
  int64_t total = steps_per_epoch > 0 ? steps_per_epoch * c.epochs : c.decay_steps;
  if (n == "constant") {
    s = std::make_shared<optim::ConstantSchedule>(c.learning_rate);
  } else if (n == "piecewise") {
    s = std::make_shared<optim::PiecewiseConstantDecay>(
        optim::PiecewiseConstantDecayOptions{c.boundaries, c.values});
  } else if (n == "exponential") {
    s = std::make_shared<optim::ExponentialDecay>(
        c.learning_rate, optim::ExponentialDecayOptions{c.decay_steps, c.decay_rate, c.staircase});
  } else if (n == "cosine") {
    s = std::make_shared<optim::CosineDecay>(
        c.learning_rate,
        optim::CosineDecayOptions{std::max<int64_t>(1, total - c.warmup_steps), c.alpha});
  } else if (n == "cosine_restarts") {
    s = std::make_shared<optim::CosineDecayRestarts>(
        c.learning_rate,
        optim::CosineDecayRestartsOptions{c.decay_steps, c.t_mul, c.m_mul, c.alpha});
  } else {
    throw_error(ErrorCode::kInvalidArgument, c.path, ": key 'schedule.name' = '", n,
                "' is not one of constant, piecewise, exponential, cosine, cosine_restarts");
  }
  if (c.warmup_steps > 0) s = std::make_shared<optim::LinearWarmup>(c.warmup_steps, s);
  return s;
}

}  // namespace

ClassificationData load_data(const TrainConfig& c) {
  std::string ti, tl, vi, vl;
  if (c.dataset == "fashion_mnist" || c.dataset == "mnist") {
    ti = c.data_dir + "/train-images-idx3-ubyte.gz";
    tl = c.data_dir + "/train-labels-idx1-ubyte.gz";
    vi = c.data_dir + "/t10k-images-idx3-ubyte.gz";
    vl = c.data_dir + "/t10k-labels-idx1-ubyte.gz";
  } else if (c.dataset == "idx") {
    ti = c.train_images;
    tl = c.train_labels;
    vi = c.test_images;
    vl = c.test_labels;
  } else {
    throw_error(ErrorCode::kInvalidArgument, c.path, ": key 'data.dataset' = '", c.dataset,
                "' is not one of fashion_mnist, mnist, idx");
  }
  ClassificationData d;
  d.train_x = images_to_f32(data::read_idx(require_file(ti, c, "train_images")), ti);
  d.train_y = labels_to_i64(data::read_idx(require_file(tl, c, "train_labels")), c.num_classes, tl);
  d.test_x = images_to_f32(data::read_idx(require_file(vi, c, "test_images")), vi);
  d.test_y = labels_to_i64(data::read_idx(require_file(vl, c, "test_labels")), c.num_classes, vl);
  TERN_CHECK_ARG(d.train_x.shape()[0] == d.train_y.shape()[0], ti, " has ", d.train_x.shape()[0],
                 " images but ", tl, " has ", d.train_y.shape()[0], " labels");
  TERN_CHECK_ARG(d.test_x.shape()[0] == d.test_y.shape()[0], vi, " has ", d.test_x.shape()[0],
                 " images but ", vl, " has ", d.test_y.shape()[0], " labels");
  const auto& dims = d.train_x.shape().dims();
  d.sample_shape = Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
  return d;
}

data::DatasetPtr training_pipeline(const TrainConfig& c, const Tensor& x, const Tensor& y) {
  data::DatasetPtr ds = data::from_tensor_slices({x, y});
  if (c.shuffle_buffer > 1) ds = ds->shuffle(c.shuffle_buffer, static_cast<uint64_t>(c.seed), true);
  return ds->batch(c.batch_size)->prefetch(c.prefetch);
}

data::DatasetPtr eval_pipeline(const TrainConfig& c, const Tensor& x, const Tensor& y) {
  return data::from_tensor_slices({x, y})
      ->batch(std::max<int64_t>(c.batch_size, 256))
      ->prefetch(c.prefetch);
}

std::shared_ptr<nn::Model> make_model(const TrainConfig& c, const Shape& sample_shape) {
  std::shared_ptr<nn::Model> m;
  try {
    m = models::build_model(c.model, sample_shape, c.num_classes, c.model_args);
  } catch (const Error& e) {
    throw_error(e.code(), c.path, ": [model]: ", e.message());
  }
  m->set_seed(static_cast<uint64_t>(c.seed));
  m->build();
  return m;
}

std::shared_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, int64_t steps_per_epoch) {
  optim::SchedulePtr s = make_schedule(c, steps_per_epoch);
  std::shared_ptr<optim::Optimizer> o;
  if (c.optimizer == "sgd") {
    o = std::make_shared<optim::SGD>(s, optim::SGDOptions{c.momentum, c.nesterov, c.weight_decay});
  } else if (c.optimizer == "adam" || c.optimizer == "adamw") {
    optim::AdamOptions a{c.beta1, c.beta2, c.epsilon, c.amsgrad, c.weight_decay};
    if (c.optimizer == "adamw") {
      o = std::make_shared<optim::AdamW>(s, a);
    } else {
      TERN_CHECK_ARG(c.weight_decay == 0, c.path,
                     ": key 'optimizer.weight_decay' needs optimizer \"adamw\" or \"sgd\"");
      o = std::make_shared<optim::Adam>(s, a);
    }
  } else if (c.optimizer == "rmsprop") {
    o = std::make_shared<optim::RMSprop>(
        s, optim::RMSpropOptions{c.rho, c.momentum, c.epsilon, c.centered});
  } else {
    throw_error(ErrorCode::kInvalidArgument, c.path, ": key 'optimizer.name' = '", c.optimizer,
                "' is not one of sgd, adam, adamw, rmsprop");
  }
  o->clip.clipnorm = c.clipnorm;
  o->clip.global_clipnorm = c.global_clipnorm;
  o->clip.clipvalue = c.clipvalue;
  return o;
}

std::vector<std::shared_ptr<train::Callback>> make_callbacks(const TrainConfig& c) {
  std::vector<std::shared_ptr<train::Callback>> cbs;
  const CallbackConfig& k = c.callbacks;
  if (k.terminate_on_nan) cbs.push_back(std::make_shared<train::TerminateOnNaN>());
  if (k.early_stopping) {
    train::EarlyStoppingOptions o;
    o.monitor = k.es_monitor;
    o.patience = k.es_patience;
    o.min_delta = k.es_min_delta;
    o.restore_best_weights = k.es_restore_best_weights;
    cbs.push_back(std::make_shared<train::EarlyStopping>(o));
  }
  if (k.reduce_lr) {
    train::ReduceLROnPlateauOptions o;
    o.monitor = k.rl_monitor;
    o.factor = k.rl_factor;
    o.patience = k.rl_patience;
    o.min_lr = k.rl_min_lr;
    cbs.push_back(std::make_shared<train::ReduceLROnPlateau>(o));
  }
  return cbs;
}

void compile_model(nn::Model& model, const TrainConfig& c, int64_t steps_per_epoch) {
  std::shared_ptr<nn::Loss> loss;
  try {
    loss = nn::loss_by_name(c.loss, c.from_logits, c.label_smoothing);
    model.compile(make_optimizer(c, steps_per_epoch), loss, c.metrics);
  } catch (const Error& e) {
    if (e.message().rfind(c.path, 0) == 0) throw;
    throw_error(e.code(), c.path, ": ", e.message());
  }
  model.training_state()->compile_options.deterministic = c.deterministic;
  model.training_state()->compile_options.check_numerics = c.check_numerics;
  if (c.precision == "mixed_float16") {
    train::set_precision_policy(model, c.precision, c.loss_scale);
  } else {
    train::set_precision_policy(model, c.precision);
  }
}

std::string weights_sha256(const nn::Model& model) {
  // In layer order, without names: auto-generated layer names depend on how many layers the
  // process created before, and two runs must compare equal by their values alone.
  Sha256 h;
  for (const auto& w : model.weights()) {
    const Tensor& t = model.variables().get(w.name);
    h.update(t.type().to_string());
    h.update(t.raw_data(), t.nbytes());
  }
  return h.hex_digest();
}

std::string save_weights(const nn::Model& model, const std::string& dir) {
  std::filesystem::create_directories(dir);
  io::NamedTensors tensors;
  nlohmann::json order = nlohmann::json::array();
  for (const auto& w : model.weights()) {
    tensors.push_back({w.name, model.variables().get(w.name)});
    order.push_back(w.name);
  }
  std::string path = dir + "/weights.safetensors";
  io::save_safetensors(
      path, tensors, {{"model", model.name()}, {"format", "tern"}, {"weight_order", order.dump()}});
  return path;
}

void load_weights(nn::Model& model, const std::string& path) {
  io::SafetensorsFile f = io::load_safetensors(path);
  std::map<std::string, Tensor> by_name(f.tensors.begin(), f.tensors.end());
  std::vector<nn::WeightSpec> weights = model.weights();
  bool all_named = true;
  for (const auto& w : weights) all_named = all_named && by_name.count(w.name);
  // Auto-generated layer names depend on what a process built before; then the saved model order
  // (metadata "weight_order") pairs weights by position.
  std::vector<std::string> source;
  if (all_named) {
    for (const auto& w : weights) source.push_back(w.name);
  } else {
    auto it = f.metadata.find("weight_order");
    nlohmann::json order;
    if (it != f.metadata.end()) order = nlohmann::json::parse(it->second, nullptr, false);
    if (!order.is_array() || order.size() != weights.size()) {
      std::string missing;
      for (const auto& w : weights) {
        if (!by_name.count(w.name)) missing = w.name;
      }
      throw_error(ErrorCode::kInvalidArgument, "weights file '", path, "' has no tensor '", missing,
                  "' and no matching weight order (was it saved from a different model?)");
    }
    for (const auto& n : order) source.push_back(n.is_string() ? n.get<std::string>() : "");
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    const nn::WeightSpec& w = weights[i];
    auto it = by_name.find(source[i]);
    if (it == by_name.end()) {
      throw_error(ErrorCode::kDataLoss, "weights file '", path, "': weight_order names '",
                  source[i], "' but the file has no such tensor");
    }
    if (it->second.type() != w.type) {
      throw_error(ErrorCode::kInvalidArgument, "weights file '", path, "': tensor '", source[i],
                  "' is ", it->second.type().to_string(), " but the model's weight '", w.name,
                  "' is ", w.type.to_string());
    }
    model.variables().assign(w.name, it->second);
  }
}

}  // namespace tern::tools
