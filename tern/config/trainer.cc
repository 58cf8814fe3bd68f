// config::Trainer.
#include "tern/config/trainer.h"

#include "tern/base/strings.h"
#include "tern/config/builders.h"
#include "tern/config/resume.h"
#include "tern/runtime/runtime.h"
#include "tern/train/checkpoint_lock.h"
#include "tern/train/training_state.h"

#include <algorithm>
#include <map>
#include <thread>

namespace tern::config {

namespace {

// Every worker must train under the same config: the first key whose value differs, by rank.
void check_same_config(dist::DataParallel& dp, const TrainConfig& cfg) {
  std::string mine;
  for (const auto& [key, value] : cfg.effective) {
    if (key.rfind("output.", 0) == 0) continue;
    mine += key + "=" + value + "\n";
  }
  std::vector<std::string> all = dp.comm().all_gather(mine);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    auto parse = [](const std::string& text) {
      std::map<std::string, std::string> kv;
      for (const std::string& line : split_lines(text)) {
        size_t eq = line.find('=');
        kv[line.substr(0, eq)] = eq == std::string::npos ? "" : line.substr(eq + 1);
      }
      return kv;
    };
    std::map<std::string, std::string> a = parse(all[0]), b = parse(all[r]);
    std::string key;
    for (const auto& [k, v] : a) {
      auto it = b.find(k);
      if (it == b.end() || it->second != v) {
        key = k;
        break;
      }
    }
    if (key.empty()) {
      for (const auto& [k, v] : b) {
        if (!a.count(k)) {
          key = k;
          break;
        }
      }
    }
    auto value_in = [&](const std::map<std::string, std::string>& m) {
      auto it = m.find(key);
      return it == m.end() ? std::string("(not set)") : it->second;
    };
    throw_error(ErrorCode::kInvalidArgument, cfg.path, ": the workers' configs differ: key '", key,
                "' is ", value_in(a), " on rank 0 but ", value_in(b), " on rank ", r,
                " (every worker must train the same config)");
  }
}

}  // namespace

Trainer::Trainer(TrainConfig config, bool with_train) : config_(std::move(config)) {
  std::shared_ptr<dist::Communicator> comm = with_train ? dist::world() : nullptr;
  int threads = config_.training.threads;
  if (comm) {
    data_parallel_ = std::make_shared<dist::DataParallel>(comm, config_.distribute.options);
    check_same_config(*data_parallel_, config_);
    // Default: the cores shared by the workers on this machine.
    if (threads == 0) {
      const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      threads = std::max(1, cores / comm->local_size());
    }
  }
  runtime::set_intra_op_threads(threads);
  // The checkpoint directories are this run's from now on (rank 0 writes them): a second run on
  // one fails here, before reading data or training (checkpoint_lock.h).
  if (with_train && is_chief()) {
    const CallbacksConfig& cb = config_.callbacks;
    if (cb.checkpoint) locks_.push_back(train::CheckpointDirLock::acquire(cb.checkpoint->dir));
    if (cb.backup_and_restore) {
      locks_.push_back(train::CheckpointDirLock::acquire(cb.backup_and_restore->backup_dir));
    }
  }
  data::WorkerShard shard;
  if (data_parallel_) shard = {data_parallel_->size(), data_parallel_->rank()};
  data_ = make_training_data(config_, with_train, shard);
  model_ = make_model(config_, data_.sample_shape);
  compile_model(*model_, config_, data_.steps_per_epoch);
  if (data_parallel_) train::enable_data_parallel(*model_, data_parallel_);
}

std::optional<std::string> Trainer::resume(bool ignore_config_change) {
  return resume_from_checkpoint(*model_, config_, ignore_config_change);
}

train::History Trainer::fit() {
  TERN_CHECK_ARG(data_.train != nullptr, config_.path,
                 ": this Trainer was made without the training split (with_train = false)");
  nn::FitOptions options = config_.training.fit;
  options.validation_data = data_.validation;
  for (auto& cb : make_callbacks(config_, is_chief())) options.callbacks.push_back(std::move(cb));
  return model_->fit(data_.train, options);
}

nn::EvaluateResult Trainer::evaluate() {
  return model_->evaluate(data_.test);
}

}  // namespace tern::config
