// TensorBoard callback (Keras semantics): event files under <log_dir>/train and
// <log_dir>/validation with
//   epoch_<metric> for loss and every metric (validation values without the "val_" prefix),
//   epoch_learning_rate, epoch_samples_per_second, epoch_steps_per_second   (step = epoch)
//   batch_loss, batch_learning_rate every update_freq batches               (step = global batch)
//   a histogram of every weight and of its gradient every histogram_freq epochs
//   the hyperparameters as a markdown table (text plugin) at the start
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "tern/data/element.h"
#include "tern/io/event_file.h"
#include "tern/train/callbacks.h"
#include "tern/train/gradient_probe.h"

namespace tern::train {

struct TensorBoardOptions {
  std::string log_dir = "logs";
  int64_t update_freq = 0;  // 0: per epoch only; N: also batch scalars every N batches
  int histogram_freq = 0;   // 0: none; N: weight and gradient histograms every N epochs
  bool write_gradients = true;
  std::map<std::string, std::string> hparams;  // written as text once
};

class TensorBoard : public Callback {
 public:
  explicit TensorBoard(TensorBoardOptions options);
  explicit TensorBoard(const std::string& log_dir)
      : TensorBoard(TensorBoardOptions{.log_dir = log_dir}) {}

  void on_train_begin(Logs&) override;
  void on_epoch_begin(int epoch, Logs&) override;
  void on_train_batch_end(int64_t step, Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(Logs&) override;

  // The event files written so far (train first).
  std::vector<std::string> files() const;

 private:
  void write_histograms(int epoch);
  io::EventFileWriter& validation_writer();

  TensorBoardOptions options_;
  std::unique_ptr<io::EventFileWriter> train_, validation_;
  std::vector<std::string> files_;
  std::chrono::steady_clock::time_point epoch_start_;
  int64_t epoch_samples_ = 0, epoch_steps_ = 0;
  data::Element last_batch_;  // shares the batch's buffers
  GradientProbe probe_;
};

}  // namespace tern::train
