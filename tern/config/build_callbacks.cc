// make_callbacks: the tern/train callbacks [callbacks] enables, built from the options the config
// embeds.
#include "tern/config/builders.h"
#include "tern/train/csv_logger.h"
#include "tern/train/model_checkpoint.h"
#include "tern/train/profiler.h"
#include "tern/train/tensorboard.h"

namespace tern::config {

std::vector<std::shared_ptr<train::Callback>> make_callbacks(const TrainConfig& cfg, bool chief) {
  const CallbacksConfig& callbacks = cfg.callbacks;
  std::vector<std::shared_ptr<train::Callback>> cbs;
  if (callbacks.terminate_on_nan) cbs.push_back(std::make_shared<train::TerminateOnNaN>());
  if (callbacks.early_stopping)
    cbs.push_back(std::make_shared<train::EarlyStopping>(*callbacks.early_stopping));
  if (callbacks.reduce_lr_on_plateau)
    cbs.push_back(std::make_shared<train::ReduceLROnPlateau>(*callbacks.reduce_lr_on_plateau));
  if (callbacks.backup_and_restore)
    cbs.push_back(std::make_shared<train::BackupAndRestore>(*callbacks.backup_and_restore));
  // Callbacks that decide (stop, change the rate, checkpoint) run on every data-parallel worker
  // on the same global logs; those that only write files run on rank 0.
  if (callbacks.tensorboard && chief)
    cbs.push_back(std::make_shared<train::TensorBoard>(*callbacks.tensorboard));
  if (callbacks.checkpoint)
    cbs.push_back(std::make_shared<train::ModelCheckpoint>(*callbacks.checkpoint));
  if (callbacks.csv_logger && chief)
    cbs.push_back(std::make_shared<train::CSVLogger>(*callbacks.csv_logger));
  if (callbacks.profiler && chief)
    cbs.push_back(std::make_shared<train::Profiler>(*callbacks.profiler));
  return cbs;
}

}  // namespace tern::config
