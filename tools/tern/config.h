// Training configuration: the TOML file `tern train CONFIG` reads, checked key by key. An unknown
// key, a wrong type or a missing file is an error naming the file, the line and the key, with the
// closest valid key suggested. Every key is documented in docs/config.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tern/data/pipeline_spec.h"
#include "tern/ops/attrs.h"
#include "tern/optim/loss_scale.h"

namespace tern::tools {

struct CallbackConfig {
  bool early_stopping = false;
  std::string es_monitor = "val_loss";
  int es_patience = 0;
  double es_min_delta = 0;
  bool es_restore_best_weights = false;
  bool reduce_lr = false;
  std::string rl_monitor = "val_loss";
  double rl_factor = 0.1;
  int rl_patience = 10;
  double rl_min_lr = 0;
  bool terminate_on_nan = true;
  // [callbacks.tensorboard] (present = enabled); empty dirs/paths default under output.dir
  bool tensorboard = false;
  std::string tb_log_dir;
  int64_t tb_update_freq = 0;  // 0 = "epoch"
  int tb_histogram_freq = 0;
  // [callbacks.checkpoint]
  bool checkpoint = false;
  std::string ckpt_dir;
  int64_t ckpt_save_freq = 0;  // 0 = "epoch"
  bool ckpt_save_best_only = false;
  std::string ckpt_monitor = "val_loss";
  std::string ckpt_mode = "auto";
  int ckpt_keep_last = 3;
  // [callbacks.backup_and_restore]
  bool backup = false;
  std::string backup_dir;
  int64_t backup_save_freq = 0;  // 0 = "epoch"
  // [callbacks.csv_logger]
  bool csv_logger = false;
  std::string csv_path;
  bool csv_append = true;
  // [callbacks.profiler]
  bool profiler = false;
  std::string profiler_trace;
  int64_t profiler_start_step = 1;
  int64_t profiler_steps = 5;
};

// [data] with `source`: an input pipeline (source + transforms) instead of in-memory tensors;
// read by pipeline_config.cc, documented in docs/config.md.
struct DataPipelineConfig {
  std::string source;  // empty: the in-memory `dataset` path
  data::PipelineSpec spec;
  // Inputs per split (glob patterns, the IDX image + label files, or an image folder); empty
  // validation: none.
  std::vector<std::string> train, test, validation;
  bool validation_from_split = false;  // image_dir: validation = the held-out data.validation_split
  bool enabled() const { return !source.empty(); }
};

struct TrainConfig {
  std::string path;  // the config file
  // [model]
  std::string model = "cnn";
  ops::Attrs model_args;  // [model.args], checked against the zoo entry
  // [data]
  std::string dataset = "fashion_mnist";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string train_images, train_labels, test_images, test_labels;  // dataset = "idx"
  int64_t num_classes = 10;
  int64_t shuffle_buffer = 60000;
  double validation_split = 0;    // fraction of training data held out for per-epoch validation
  bool validate_on_test = false;  // per-epoch validation on the test split
  int64_t prefetch = -1;          // -1 = AUTOTUNE
  DataPipelineConfig pipeline;    // data.source and [[data.transforms]]
  // [loss]
  std::string loss = "sparse_categorical_crossentropy";
  bool from_logits = true;
  double label_smoothing = 0;
  std::vector<std::string> metrics = {"accuracy"};
  // [optimizer]
  std::string optimizer = "adam";
  double learning_rate = 1e-3;
  double momentum = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-7, weight_decay = 0, rho = 0.9;
  bool amsgrad = false, centered = false;
  std::optional<double> clipnorm, global_clipnorm, clipvalue;
  // [schedule]
  std::string schedule = "constant";
  int64_t warmup_steps = 0;
  int64_t decay_steps = 1000;
  double decay_rate = 0.96;
  bool staircase = false;
  double alpha = 0;
  double t_mul = 2.0, m_mul = 1.0;
  std::vector<int64_t> boundaries;
  std::vector<double> values;
  // [training]
  int epochs = 1;
  int64_t batch_size = 32;
  int64_t seed = 42;
  std::string precision = "float32";
  optim::LossScaleOptions loss_scale;  // [training.loss_scale] (precision "mixed_float16" only)
  int threads = 0;
  int64_t steps_per_epoch = -1;
  int gradient_accumulation_steps = 1;
  bool deterministic = false;  // also on when TERN_DETERMINISTIC=1
  bool check_numerics = false;
  // [callbacks.*]
  CallbackConfig callbacks;
  // [output]
  std::string output_dir = "runs/default";
  // Every key the file and --set give, flattened ("optimizer.learning_rate" -> "0.01").
  std::map<std::string, std::string> effective;
  // SHA-256 of `effective` without [callbacks] and [output]: checkpoints record it, and resuming
  // under a config that trains differently is refused.
  std::string sha256;
};

// Reads and checks `path`; `overrides` are "dotted.key=value" strings applied first (values parse
// as TOML; bare words become strings).
TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace tern::tools
