// Callbacks: hooks fit() calls around epochs and steps (Keras semantics). Users extend Callback.
// Logs map names ("loss", "accuracy", "val_loss", "lr", ...) to values.
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tern/tensor/tensor.h"
#include "tern/train/monitor.h"

namespace tern::nn {
class Model;
}

namespace tern::train {

using Logs = std::map<std::string, double>;

class Callback {
 public:
  virtual ~Callback() = default;
  void set_model(nn::Model* model) { model_ = model; }
  nn::Model* model() const { return model_; }

  virtual void on_train_begin(Logs&) {}
  virtual void on_train_end(Logs&) {}
  virtual void on_epoch_begin(int /*epoch*/, Logs&) {}
  virtual void on_epoch_end(int /*epoch*/, Logs&) {}
  virtual void on_train_batch_begin(int64_t /*step*/, Logs&) {}
  virtual void on_train_batch_end(int64_t /*step*/, Logs&) {}
  // fit() stopped after a finished step at an interrupt request (tern/train/interrupt.h); the
  // training state is live (TrainingState::progress, the data iterator), so checkpoint callbacks
  // save here. on_epoch_end is not called for the cut-short epoch; on_train_end still is.
  virtual void on_train_interrupted(Logs&) {}

 private:
  nn::Model* model_ = nullptr;
};

using CallbackPtr = std::shared_ptr<Callback>;

// Per-epoch values of every log (fit() returns it; also usable as a callback).
struct History {
  std::vector<int> epoch;
  std::map<std::string, std::vector<double>> history;
  FitStats stats;  // the training monitor's figures for this fit
  // An interrupt stopped fit (tern/train/interrupt.h): its signal, and the checkpoint written at
  // that step ("" when no checkpoint callback is configured, or on workers other than rank 0).
  int interrupted_by = 0;
  std::string interrupt_checkpoint;
  // The values of `name`; NotFound naming the available keys.
  const std::vector<double>& at(const std::string& name) const;
};

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0;
  int patience = 0;
  std::string mode = "auto";  // "min", "max", or "auto" (max for accuracy-like names)
  bool restore_best_weights = false;
  std::optional<double> baseline;
  int start_from_epoch = 0;
};

// Stops training when `monitor` stops improving for `patience` epochs.
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});
  void on_train_begin(Logs&) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(Logs&) override;
  int stopped_epoch() const { return stopped_epoch_; }
  int best_epoch() const { return best_epoch_; }

 private:
  bool improved(double value) const;
  EarlyStoppingOptions options_;
  bool maximize_ = false;
  double best_ = 0;
  int wait_ = 0;
  int best_epoch_ = -1;
  int stopped_epoch_ = -1;
  std::map<std::string, Tensor> best_weights_;
};

// Sets the learning rate at the start of each epoch to schedule(epoch, current_lr).
class LearningRateScheduler : public Callback {
 public:
  using Fn = std::function<double(int epoch, double lr)>;
  explicit LearningRateScheduler(Fn schedule) : schedule_(std::move(schedule)) {}
  void on_epoch_begin(int epoch, Logs& logs) override;

 private:
  Fn schedule_;
};

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  std::string mode = "auto";
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0;
};

// Multiplies the learning rate by `factor` when `monitor` plateaus.
class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  void on_train_begin(Logs&) override;
  void on_epoch_end(int epoch, Logs& logs) override;

 private:
  ReduceLROnPlateauOptions options_;
  bool maximize_ = false;
  double best_ = 0;
  int wait_ = 0;
  int cooldown_counter_ = 0;
};

// Stops training as soon as a batch loss is NaN or infinite.
class TerminateOnNaN : public Callback {
 public:
  void on_train_batch_end(int64_t step, Logs& logs) override;
};

// Helpers shared by callbacks that change the optimizer's learning rate.
double current_learning_rate(const nn::Model& model);
void set_learning_rate(nn::Model& model, double lr);

}  // namespace tern::train
