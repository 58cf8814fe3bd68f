// [callbacks] and its tables, each read into the options struct of its tern/train callback. A
// table present enables the callback; paths left out default to places under output.dir.
#include "tern/config/config_readers.h"
#include "tern/config/read_sections.h"

namespace tern::config {
namespace {

void check(const Section& s, bool ok, const std::string& key, const std::string& msg) {
  if (!ok) s.error(key, str_cat("key '", s.full(key), "' ", msg));
}

// A path key; absent or empty keeps `path` (its default under output.dir).
void read_path(Section& s, const std::string& key, std::string& path) {
  std::string v;
  s.read(key, v);
  if (!v.empty()) path = v;
}

// "min", "max" or "auto".
void read_mode(Section& s, std::string& mode) {
  mode = read_choice(s, "mode", {"auto", "min", "max"}, mode);
}

void read_early_stopping(Section& cbs, CallbacksConfig& k) {
  Section s = cbs.sub("early_stopping");
  if (!s.present()) return;
  train::EarlyStoppingOptions o;
  s.read("monitor", o.monitor);
  s.read("patience", o.patience);
  s.read("min_delta", o.min_delta);
  read_mode(s, o.mode);
  s.read("restore_best_weights", o.restore_best_weights);
  s.read_optional("baseline", o.baseline);
  s.read("start_from_epoch", o.start_from_epoch);
  check(s, o.patience >= 0, "patience", "must be >= 0");
  s.finish();
  k.early_stopping = o;
}

void read_reduce_lr(Section& cbs, CallbacksConfig& k) {
  Section s = cbs.sub("reduce_lr_on_plateau");
  if (!s.present()) return;
  train::ReduceLROnPlateauOptions o;
  s.read("monitor", o.monitor);
  s.read("factor", o.factor);
  s.read("patience", o.patience);
  read_mode(s, o.mode);
  s.read("min_delta", o.min_delta);
  s.read("cooldown", o.cooldown);
  s.read("min_lr", o.min_lr);
  check(s, o.factor > 0 && o.factor < 1, "factor", "must be in (0, 1)");
  check(s, o.patience >= 0, "patience", "must be >= 0");
  s.finish();
  k.reduce_lr_on_plateau = o;
}

void read_observers(Section& cbs, CallbacksConfig& k, const std::string& out) {
  if (Section s = cbs.sub("tensorboard"); s.present()) {
    train::TensorBoardOptions o{.log_dir = out + "/logs"};
    read_path(s, "log_dir", o.log_dir);
    s.read_freq("update_freq", o.update_freq);
    s.read("histogram_freq", o.histogram_freq);
    s.read("write_gradients", o.write_gradients);
    check(s, o.histogram_freq >= 0, "histogram_freq", "must be >= 0");
    s.finish();
    k.tensorboard = o;
  }
  if (Section s = cbs.sub("csv_logger"); s.present()) {
    train::CSVLoggerOptions o{.path = out + "/training.csv", .append = true};
    read_path(s, "path", o.path);
    s.read("append", o.append);
    s.finish();
    k.csv_logger = o;
  }
  if (Section s = cbs.sub("profiler"); s.present()) {
    train::ProfilerOptions o{.trace_path = out + "/trace.json"};
    read_path(s, "trace", o.trace_path);
    s.read("start_step", o.start_step);
    s.read("steps", o.num_steps);
    check(s, o.start_step >= 0, "start_step", "must be >= 0");
    check(s, o.num_steps >= 1, "steps", "must be >= 1");
    s.finish();
    k.profiler = o;
  }
}

void read_checkpoints(Section& cbs, CallbacksConfig& k, const std::string& out) {
  if (Section s = cbs.sub("checkpoint"); s.present()) {
    train::ModelCheckpointOptions o{.dir = out + "/checkpoints", .keep_last = 3};
    read_path(s, "dir", o.dir);
    s.read_freq("save_freq", o.save_freq);
    s.read("save_best_only", o.save_best_only);
    s.read("monitor", o.monitor);
    read_mode(s, o.mode);
    s.read("keep_last", o.keep_last);
    check(s, o.keep_last >= 0, "keep_last", "must be >= 0 (0 keeps all)");
    s.finish();
    k.checkpoint = o;
  }
  if (Section s = cbs.sub("backup_and_restore"); s.present()) {
    train::BackupAndRestoreOptions o{.backup_dir = out + "/backup"};
    read_path(s, "dir", o.backup_dir);
    s.read_freq("save_freq", o.save_freq);
    s.finish();
    k.backup_and_restore = o;
  }
}

}  // namespace

void read_callbacks(Section& top, TrainConfig& c) {
  Section cbs = top.sub("callbacks");
  CallbacksConfig& k = c.callbacks;
  cbs.read("terminate_on_nan", k.terminate_on_nan);
  read_early_stopping(cbs, k);
  read_reduce_lr(cbs, k);
  read_observers(cbs, k, c.output.dir);
  read_checkpoints(cbs, k, c.output.dir);
  cbs.finish();
}

}  // namespace tern::config
