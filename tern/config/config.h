// Training configuration: the TOML file `tern train CONFIG` reads, checked key by key. An unknown
// key, a wrong type, a key that does not apply to the chosen optimizer / schedule / loss /
// transform, or a missing file is an error naming the file, the line and the key, with the
// closest valid key suggested. Every key is documented in docs/config.md.
//
// The sections embed the library's own option structs (optim::AdamOptions,
// train::EarlyStoppingOptions, nn::FitOptions, ...) rather than mirroring their fields, so a new
// library option is one new key in the reader. A program trains from a config in a few lines
// (trainer.h):
//
//   config::TrainConfig cfg = config::load_config("examples/fashion_mnist.toml",
//   {"training.epochs=1"}); config::Trainer trainer(cfg); train::History history = trainer.fit();
//   trainer.model().save_weights(cfg.output.dir + "/weights.safetensors");
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tern/data/pipeline_spec.h"
#include "tern/dist/data_parallel.h"
#include "tern/nn/model.h"
#include "tern/ops/attrs.h"
#include "tern/optim/adam.h"
#include "tern/optim/loss_scale.h"
#include "tern/optim/optimizer.h"
#include "tern/optim/rmsprop.h"
#include "tern/optim/schedules.h"
#include "tern/optim/sgd.h"
#include "tern/train/callbacks.h"
#include "tern/train/csv_logger.h"
#include "tern/train/model_checkpoint.h"
#include "tern/train/profiler.h"
#include "tern/train/tensorboard.h"

namespace tern::config {

// [model]
struct ModelConfig {
  std::string name = "cnn";  // a zoo architecture (tern/models/zoo.h)
  ops::Attrs args;           // [model.args], checked against the zoo entry when the model is built
};

// [data]: in-memory tensors from IDX files (`dataset`), or an input pipeline (`source`).
struct DataConfig {
  std::string dataset = "fashion_mnist";  // fashion_mnist | mnist | idx
  std::string dir = "/usr/share/datasets/fashion-mnist";
  std::string train_images, train_labels, test_images, test_labels;  // dataset / source "idx"
  int64_t num_classes = 10;
  int64_t shuffle_buffer = 60000;  // `dataset` only
  double validation_split = 0;     // fraction of the training data held out for validation
  bool validate_on_test = false;   // per-epoch validation on the test split
  int64_t prefetch = -1;           // -1 = AUTOTUNE
  // --- data.source and [[data.transforms]] (read_pipeline.cc) ---
  std::string source;  // empty: the in-memory `dataset` path
  data::PipelineSpec pipeline;
  // Inputs per split (glob patterns, the IDX image + label files, or an image folder); empty
  // validation_inputs: none.
  std::vector<std::string> train_inputs, test_inputs, validation_inputs;
  bool validation_from_split = false;  // validation = the held-out data.validation_split
  bool uses_pipeline() const { return !source.empty(); }
};

// [loss]
struct LossConfig {
  std::string name = "sparse_categorical_crossentropy";
  bool from_logits = true;     // cross-entropies
  double label_smoothing = 0;  // categorical / binary cross-entropy
  std::vector<std::string> metrics = {"accuracy"};
};

// [optimizer]: `name` picks the options struct its other keys fill.
struct OptimizerConfig {
  std::string name = "adam";  // sgd | adam | adamw | rmsprop
  double learning_rate = 1e-3;
  optim::SGDOptions sgd;
  optim::AdamOptions adam{.weight_decay = 0};  // adam and adamw (weight_decay: adamw only)
  optim::RMSpropOptions rmsprop;
  optim::ClipOptions clip;  // clipnorm, global_clipnorm, clipvalue: any optimizer
};

// [schedule]: `name` picks the options struct its other keys fill.
struct ScheduleConfig {
  std::string name = "constant";  // constant | piecewise | exponential | cosine | cosine_restarts
  int64_t warmup_steps = 0;       // linear warmup in front of any schedule
  optim::PiecewiseConstantDecayOptions piecewise;
  optim::ExponentialDecayOptions exponential;
  // decay_steps is not a key: make_schedule decays over every training step (warmup excluded)
  // when their number is known, else over this default.
  optim::CosineDecayOptions cosine;
  optim::CosineDecayRestartsOptions cosine_restarts;  // first_decay_steps: key decay_steps
};

// [training]
struct TrainingConfig {
  // epochs, batch_size, seed, steps_per_epoch, gradient_accumulation_steps, memory_limit_bytes
  // (key memory_limit); the Trainer adds the validation data and the callbacks.
  nn::FitOptions fit;
  std::string precision = "float32";   // float32 | mixed_bfloat16 | mixed_float16
  optim::LossScaleOptions loss_scale;  // [training.loss_scale] (mixed_float16 only)
  int threads = 0;                     // intra-op threads, 0 = every core
  bool deterministic = false;          // also on when TERN_DETERMINISTIC=1
  bool check_numerics = false;
};

// [callbacks.*]: a table present = that callback enabled. Paths left empty in the file are
// resolved under output.dir when it is read; checkpoint and backup options carry the config's
// sha256, TensorBoard's hparams every effective key.
struct CallbacksConfig {
  bool terminate_on_nan = true;
  std::optional<train::EarlyStoppingOptions> early_stopping;
  std::optional<train::ReduceLROnPlateauOptions> reduce_lr_on_plateau;
  std::optional<train::TensorBoardOptions> tensorboard;
  std::optional<train::ModelCheckpointOptions> checkpoint;
  std::optional<train::BackupAndRestoreOptions> backup_and_restore;
  std::optional<train::CSVLoggerOptions> csv_logger;
  std::optional<train::ProfilerOptions> profiler;
};

// [distribute]: how a job of N workers (under mpirun, or `tern train --workers N`) trains. Read
// always, used only when the process runs under an MPI launcher.
struct DistributeConfig {
  std::string strategy = "mirrored";  // the only one: data parallel, replicated variables
  // deterministic = true: gradient sums in rank order (bitwise equal to one worker accumulating
  // N micro-batches); false: MPI_Allreduce's own order. Bucket caps in MiB; watchdog_timeout in
  // seconds (0: max(30 s, 10x the median step time)).
  dist::DataParallelOptions options;
};

// [output]
struct OutputConfig {
  std::string dir = "runs/default";  // weights.safetensors goes here
};

struct TrainConfig {
  std::string path;  // the config file
  ModelConfig model;
  DataConfig data;
  LossConfig loss;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  TrainingConfig training;
  CallbacksConfig callbacks;
  DistributeConfig distribute;
  OutputConfig output;
  // Every key the file and --set give, flattened ("optimizer.learning_rate" -> "0.01").
  std::map<std::string, std::string> effective;
  // SHA-256 of `effective` without [callbacks] and [output]: checkpoints record it, and resuming
  // under a config that trains differently is refused.
  std::string sha256;
};

// An error in what a config says: TOML syntax, an unknown key, a value of the wrong type or out
// of range, an unknown model / optimizer / schedule name or model argument, a bad --set flag, a
// config file that does not exist. The message names the file and line ("fashion.toml:12: unknown
// key 'training.batch_sise' ...") or, for a key set on the command line, the flag ("--set
// optimizer.learing_rate=0.1: unknown key ..."). `tern` exits 2 on it, as on any usage error.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Reads and checks `path` (a regular file of at most 16 MiB: a directory or a device is an
// error); `overrides` are "dotted.key=value" strings applied first (values parse as TOML; bare
// words become strings). A key component "name[i]" addresses the i-th table of an array of
// tables: "data.transforms[2].max_delta=0.1". Integer keys are range-checked against their field
// (an int field with 4294967298 is an error, not 2). Every error is a ConfigError.
TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The TOML text of `path` with `overrides` applied (comments dropped, keys unchecked: load_config
// checks them). `tern train` reads it back as the same config (what `tern sweep` writes as a
// trial's config.toml and best.toml).
std::string render_config(const std::string& path, const std::vector<std::string>& overrides = {});

// "512MiB", "2GiB", "500MB", "1.5GB", "4096" (bytes): units B, KB / MB / GB / TB (powers of 1000)
// and KiB / MiB / GiB / TiB (powers of 1024), case-insensitive, a space allowed before the unit.
// InvalidArgument naming `text` for anything else, a negative size or a fraction of a byte.
int64_t parse_memory_size(const std::string& text);

}  // namespace tern::config
