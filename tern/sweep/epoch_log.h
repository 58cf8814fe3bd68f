// A trial's per-epoch log ([callbacks.csv_logger]: "epoch" from 0, then every log key in sorted
// order) read as it grows: each poll returns the complete rows added since the last one. A file
// that shrinks or disappears (a trial restarted from scratch) is read again from its start.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tern::sweep {

struct EpochRow {
  int64_t epoch = 0;                     // 1-based: the number of epochs done
  std::map<std::string, double> values;  // loss, accuracy, val_loss, ...; an empty cell is absent
};

class EpochLog {
 public:
  explicit EpochLog(std::string path) : path_(std::move(path)) {}
  // New complete rows (a row without its newline waits for the next poll). Cells that are not
  // numbers ("nan" included) read as NaN.
  std::vector<EpochRow> poll();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint64_t offset_ = 0;  // bytes consumed
  std::vector<std::string> columns_;
};

// Every row of a finished log.
std::vector<EpochRow> read_epoch_log(const std::string& path);

}  // namespace tern::sweep
