// CSVLogger (Keras semantics): one row per epoch, "epoch" then every log key in sorted order.
// With append, an existing file is continued (its header kept), so a resumed run adds rows.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "tern/train/callbacks.h"

namespace tern::train {

struct CSVLoggerOptions {
  std::string path = "training.csv";
  char separator = ',';
  bool append = false;  // continue an existing file (its header kept)
};

class CSVLogger : public Callback {
 public:
  explicit CSVLogger(CSVLoggerOptions options);
  explicit CSVLogger(std::string path, char separator = ',', bool append = false)
      : CSVLogger(CSVLoggerOptions{std::move(path), separator, append}) {}
  void on_train_begin(Logs&) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(Logs&) override;

 private:
  CSVLoggerOptions options_;
  std::vector<std::string> columns_;  // fixed by the header
  std::ofstream out_;
};

}  // namespace tern::train
