// Where fit() is, for callbacks that save or restore training (ModelCheckpoint, BackupAndRestore,
// TensorBoard): fit() keeps TrainingState::progress current, and runs from
// TrainingState::resume (set before fit or in a callback's on_train_begin) when present, so a
// run can start in the middle of an epoch with the data iterator restored to the exact element.
#pragma once

#include <cstdint>
#include <string>

#include "tern/data/element.h"

namespace tern::data {
class Iterator;
}

namespace tern::train {

struct FitProgress {
  int epoch = 0;
  int64_t step_in_epoch = 0;  // batches finished in this epoch
  int64_t global_step = 0;    // batches finished in all epochs (restored runs included)
  bool epoch_complete = false;
  double epoch_loss_sum = 0;  // sum of batch loss x batch size over this epoch
  int64_t epoch_samples = 0;
  data::Iterator* iterator = nullptr;    // the live training iterator (null between epochs)
  const data::Element* batch = nullptr;  // the current batch (set during batch callbacks)
  // Set when an interrupt stops fit (interrupt.h): the signal, and the checkpoint a callback
  // wrote for it in on_train_interrupted.
  int interrupted_by = 0;
  std::string interrupt_checkpoint;
};

// A position to continue from: epoch `epoch` with `step_in_epoch` batches done (the iterator
// blob restores the data position), or the epoch after it if `epoch_complete`.
struct ResumePoint {
  int epoch = 0;
  int64_t step_in_epoch = 0;
  int64_t global_step = 0;
  bool epoch_complete = false;
  double epoch_loss_sum = 0;
  int64_t epoch_samples = 0;
  std::string iterator_state;  // data::Iterator::save_state(); empty when epoch_complete
};

}  // namespace tern::train
