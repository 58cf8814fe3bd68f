// TensorBoard callback: scalars, histograms and hyperparameters as event files.
#include "tern/train/tensorboard.h"

#include "tern/base/logging.h"
#include "tern/nn/model.h"
#include "tern/train/training_state.h"

namespace tern::train {
namespace {

std::string hparams_markdown(const std::map<std::string, std::string>& hp) {
  std::string out = "| hyperparameter | value |\n|---|---|\n";
  for (const auto& [k, v] : hp) out += "| " + k + " | " + v + " |\n";
  return out;
}

}  // namespace

TensorBoard::TensorBoard(TensorBoardOptions options) : options_(std::move(options)) {
  TERN_CHECK_ARG(!options_.log_dir.empty(), "TensorBoard: log_dir is empty");
  TERN_CHECK_ARG(options_.update_freq >= 0, "TensorBoard: update_freq must be >= 0, got ",
                 options_.update_freq);
  TERN_CHECK_ARG(options_.histogram_freq >= 0, "TensorBoard: histogram_freq must be >= 0, got ",
                 options_.histogram_freq);
}

std::vector<std::string> TensorBoard::files() const {
  return files_;
}

io::EventFileWriter& TensorBoard::validation_writer() {
  if (!validation_) {
    validation_ = std::make_unique<io::EventFileWriter>(options_.log_dir + "/validation");
    files_.push_back(validation_->path());
  }
  return *validation_;
}

void TensorBoard::on_train_begin(Logs&) {
  train_ = std::make_unique<io::EventFileWriter>(options_.log_dir + "/train");
  files_.push_back(train_->path());
  if (!options_.hparams.empty())
    train_->add_text("hyperparameters", hparams_markdown(options_.hparams), 0);
  train_->flush();
}

void TensorBoard::on_epoch_begin(int, Logs&) {
  epoch_start_ = std::chrono::steady_clock::now();
  epoch_samples_ = 0;
  epoch_steps_ = 0;
  last_batch_.clear();
}

void TensorBoard::on_train_batch_end(int64_t, Logs& logs) {
  TrainingState* s = model()->training_state();
  const FitProgress& p = s->progress;
  if (p.batch && !p.batch->empty() && (*p.batch)[0].rank() > 0) {
    epoch_samples_ += (*p.batch)[0].shape().dim(0);  // samples seen this epoch (by this run)
    ++epoch_steps_;
    if (options_.histogram_freq > 0 && options_.write_gradients && p.batch->size() >= 2)
      last_batch_ = *p.batch;
  }
  if (options_.update_freq > 0 && p.global_step % options_.update_freq == 0) {
    auto it = logs.find("loss");
    if (it != logs.end()) train_->add_scalar("batch_loss", it->second, p.global_step);
    train_->add_scalar("batch_learning_rate", current_learning_rate(*model()), p.global_step);
  }
}

void TensorBoard::on_epoch_end(int epoch, Logs& logs) {
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start_).count();
  for (const auto& [key, value] : logs) {
    if (key.rfind("val_", 0) == 0) {
      validation_writer().add_scalar("epoch_" + key.substr(4), value, epoch);
    } else if (key == "lr") {
      train_->add_scalar("epoch_learning_rate", value, epoch);
    } else {
      train_->add_scalar("epoch_" + key, value, epoch);
    }
  }
  if (seconds > 0 && epoch_steps_ > 0) {
    train_->add_scalar("epoch_samples_per_second", static_cast<double>(epoch_samples_) / seconds,
                       epoch);
    train_->add_scalar("epoch_steps_per_second", static_cast<double>(epoch_steps_) / seconds,
                       epoch);
  }
  if (options_.histogram_freq > 0 && epoch % options_.histogram_freq == 0) write_histograms(epoch);
  train_->flush();
  if (validation_) validation_->flush();
}

void TensorBoard::write_histograms(int epoch) {
  const runtime::VariableStore& store = model()->variables();
  for (const auto& w : model()->weights())
    train_->add_histogram(w.name, io::make_histogram(store.get(w.name)), epoch);
  if (!options_.write_gradients || last_batch_.size() < 2) return;
  try {
    for (const auto& [name, g] : probe_.compute(*model(), last_batch_[0], last_batch_[1])) {
      train_->add_histogram(name + "/gradient", io::make_histogram(g), epoch);
    }
  } catch (const Error& e) {
    log_warning("TensorBoard: gradient histograms skipped: ", e.message());
  }
  last_batch_.clear();
}

void TensorBoard::on_train_end(Logs&) {
  train_.reset();
  validation_.reset();
}

}  // namespace tern::train
