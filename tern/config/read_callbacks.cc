// [callbacks] and its tables, each read into the options struct of its tern/train callback. A
// table present enables the callback; paths left out default to places under output.dir.
#include "tern/config/config_readers.h"
#include "tern/config/read_sections.h"

namespace tern::config {
namespace {

void check(const Section& table, bool ok, const std::string& key, const std::string& msg) {
  if (!ok) table.error(key, str_cat("key '", table.full(key), "' ", msg));
}

// A path key; absent or empty keeps `path` (its default under output.dir).
void read_path(Section& table, const std::string& key, std::string& path) {
  std::string v;
  table.read(key, v);
  if (!v.empty()) path = v;
}

// "min", "max" or "auto".
void read_mode(Section& table, std::string& mode) {
  mode = read_choice(table, "mode", {"auto", "min", "max"}, mode);
}

void read_early_stopping(Section& cbs, CallbacksConfig& callbacks) {
  Section table = cbs.sub("early_stopping");
  if (!table.present()) return;
  train::EarlyStoppingOptions options;
  table.read("monitor", options.monitor);
  table.read("patience", options.patience);
  table.read("min_delta", options.min_delta);
  read_mode(table, options.mode);
  table.read("restore_best_weights", options.restore_best_weights);
  table.read_optional("baseline", options.baseline);
  table.read("start_from_epoch", options.start_from_epoch);
  check(table, options.patience >= 0, "patience", "must be >= 0");
  table.finish();
  callbacks.early_stopping = options;
}

void read_reduce_lr(Section& cbs, CallbacksConfig& callbacks) {
  Section table = cbs.sub("reduce_lr_on_plateau");
  if (!table.present()) return;
  train::ReduceLROnPlateauOptions options;
  table.read("monitor", options.monitor);
  table.read("factor", options.factor);
  table.read("patience", options.patience);
  read_mode(table, options.mode);
  table.read("min_delta", options.min_delta);
  table.read("cooldown", options.cooldown);
  table.read("min_lr", options.min_lr);
  check(table, options.factor > 0 && options.factor < 1, "factor", "must be in (0, 1)");
  check(table, options.patience >= 0, "patience", "must be >= 0");
  table.finish();
  callbacks.reduce_lr_on_plateau = options;
}

void read_observers(Section& cbs, CallbacksConfig& callbacks, const std::string& out) {
  if (Section table = cbs.sub("tensorboard"); table.present()) {
    train::TensorBoardOptions options{.log_dir = out + "/logs"};
    read_path(table, "log_dir", options.log_dir);
    table.read_freq("update_freq", options.update_freq);
    table.read("histogram_freq", options.histogram_freq);
    table.read("write_gradients", options.write_gradients);
    check(table, options.histogram_freq >= 0, "histogram_freq", "must be >= 0");
    table.finish();
    callbacks.tensorboard = options;
  }
  if (Section table = cbs.sub("csv_logger"); table.present()) {
    train::CSVLoggerOptions options{.path = out + "/training.csv", .append = true};
    read_path(table, "path", options.path);
    table.read("append", options.append);
    table.finish();
    callbacks.csv_logger = options;
  }
  if (Section table = cbs.sub("profiler"); table.present()) {
    train::ProfilerOptions options{.trace_path = out + "/trace.json"};
    read_path(table, "trace", options.trace_path);
    table.read("start_step", options.start_step);
    table.read("steps", options.num_steps);
    check(table, options.start_step >= 0, "start_step", "must be >= 0");
    check(table, options.num_steps >= 1, "steps", "must be >= 1");
    table.finish();
    callbacks.profiler = options;
  }
}

void read_checkpoints(Section& cbs, CallbacksConfig& callbacks, const std::string& out) {
  if (Section table = cbs.sub("checkpoint"); table.present()) {
    train::ModelCheckpointOptions options{.dir = out + "/checkpoints", .keep_last = 3};
    read_path(table, "dir", options.dir);
    table.read_freq("save_freq", options.save_freq);
    table.read("save_best_only", options.save_best_only);
    table.read("monitor", options.monitor);
    read_mode(table, options.mode);
    table.read("keep_last", options.keep_last);
    check(table, options.keep_last >= 0, "keep_last", "must be >= 0 (0 keeps all)");
    table.finish();
    callbacks.checkpoint = options;
  }
  if (Section table = cbs.sub("backup_and_restore"); table.present()) {
    train::BackupAndRestoreOptions options{.backup_dir = out + "/backup"};
    read_path(table, "dir", options.backup_dir);
    table.read_freq("save_freq", options.save_freq);
    table.finish();
    callbacks.backup_and_restore = options;
  }
}

}  // namespace

void read_callbacks(Section& top, TrainConfig& cfg) {
  Section cbs = top.sub("callbacks");
  CallbacksConfig& callbacks = cfg.callbacks;
  cbs.read("terminate_on_nan", callbacks.terminate_on_nan);
  read_early_stopping(cbs, callbacks);
  read_reduce_lr(cbs, callbacks);
  read_observers(cbs, callbacks, cfg.output.dir);
  read_checkpoints(cbs, callbacks, cfg.output.dir);
  cbs.finish();
}

}  // namespace tern::config
