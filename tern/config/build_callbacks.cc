// make_callbacks: the tern/train callbacks [callbacks] enables, built from the options the config
// embeds.
#include "tern/config/builders.h"
#include "tern/train/csv_logger.h"
#include "tern/train/model_checkpoint.h"
#include "tern/train/profiler.h"
#include "tern/train/tensorboard.h"

namespace tern::config {

std::vector<std::shared_ptr<train::Callback>> make_callbacks(const TrainConfig& c) {
  const CallbacksConfig& k = c.callbacks;
  std::vector<std::shared_ptr<train::Callback>> cbs;
  if (k.terminate_on_nan) cbs.push_back(std::make_shared<train::TerminateOnNaN>());
  if (k.early_stopping) cbs.push_back(std::make_shared<train::EarlyStopping>(*k.early_stopping));
  if (k.reduce_lr_on_plateau)
    cbs.push_back(std::make_shared<train::ReduceLROnPlateau>(*k.reduce_lr_on_plateau));
  if (k.backup_and_restore)
    cbs.push_back(std::make_shared<train::BackupAndRestore>(*k.backup_and_restore));
  if (k.tensorboard) cbs.push_back(std::make_shared<train::TensorBoard>(*k.tensorboard));
  if (k.checkpoint) cbs.push_back(std::make_shared<train::ModelCheckpoint>(*k.checkpoint));
  if (k.csv_logger) cbs.push_back(std::make_shared<train::CSVLogger>(*k.csv_logger));
  if (k.profiler) cbs.push_back(std::make_shared<train::Profiler>(*k.profiler));
  return cbs;
}

}  // namespace tern::config
