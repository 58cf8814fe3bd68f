// nn::Model's training API (compile, fit, evaluate, predict), implemented here so that tern_nn
// does not depend on the optimizer, data or callback modules.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>

#include "tern/base/row_error.h"
#include "tern/base/trace.h"
#include "tern/data/dataset.h"
#include "tern/data/iterator.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/nn/model.h"
#include "tern/runtime/runtime.h"
#include "tern/train/callbacks.h"
#include "tern/train/distributed.h"
#include "tern/train/interrupt.h"
#include "tern/train/progress.h"
#include "tern/train/training_state.h"

namespace tern::nn {
namespace {

using train::CompiledStep;
using train::StepKind;
using train::TrainingState;

TrainingState& state_of(const Model& m) {
  TrainingState* s = m.training_state();
  TERN_CHECK_ARG(s != nullptr, "model '", m.name(), "' is not compiled: call compile() first");
  return *s;
}

void split_batch(const data::Element& e, const Tensor** x, const Tensor** y, bool need_y,
                 const std::string& what) {
  if (e.empty() || (need_y && e.size() < 2)) {
    throw_error(ErrorCode::kInvalidArgument, what, ": dataset elements must be (x, y) pairs, got ",
                e.size(), " components (", data::element_signature(e), ")");
  }
  *x = &e[0];
  *y = e.size() >= 2 ? &e[1] : nullptr;
}

// Runs a compiled step on `batch`. An error about one row of an input that holds the batch (a label
// or an embedding id out of range: RowError) gets that row's source position (the file and
// record or line, data::Element::origin), and every error gets `context`.
void run_step(runtime::Executable& exe, const data::Element& batch, std::string_view context) {
  try {
    exe.run();
  } catch (const Error& err) {
    std::string where;
    const int64_t rows = batch.empty() || batch[0].rank() == 0 ? -1 : batch[0].shape().dim(0);
    const auto* row = dynamic_cast<const RowError*>(&err);
    if (row != nullptr && row->row() >= 0 && row->rows() == rows) {
      const std::string at = data::row_position(batch, row->row());
      where = str_cat(" (row ", row->row(), " of the batch", at.empty() ? "" : ": ", at, ")");
    }
    throw_error(err.code(), err.message(), where, context);
  }
}

// fit()'s memory limit on the device allocator (FitOptions::memory_limit_bytes; the previous
// limit comes back afterwards), and a fresh peak to report.
class DeviceMemoryScope {
 public:
  DeviceMemoryScope(Allocator& allocator, int64_t limit)
      : allocator_(allocator), previous_(allocator.stats().limit) {
    TERN_CHECK_ARG(limit >= 0, "memory_limit_bytes must be >= 0, got ", limit);
    if (limit > 0) allocator_.set_limit(static_cast<size_t>(limit));
    allocator_.reset_peak();
  }
  ~DeviceMemoryScope() { allocator_.set_limit(previous_); }

 private:
  Allocator& allocator_;
  size_t previous_;
};

// Builds a Sequential whose input shape is not known yet from the first batch.
void ensure_built(Model& m, const Tensor& x) {
  if (m.built()) return;
  std::vector<int64_t> sample(x.shape().dims().begin() + 1, x.shape().dims().end());
  if (auto* seq = dynamic_cast<Sequential*>(&m)) {
    seq->build(Shape(sample), x.dtype());
  } else {
    m.build();
  }
}

// Metric statistics of one run, flattened to doubles: metric i's are
// [begin[i], begin[i + 1]) of the result.
std::vector<double> metric_stats(const TrainingState& s, const CompiledStep& c,
                                 std::vector<size_t>& begin) {
  std::vector<double> stats;
  begin.clear();
  for (size_t i = 0; i < s.metrics.size(); ++i) {
    begin.push_back(stats.size());
    for (size_t o = c.metric_begin[i]; o < c.metric_begin[i + 1]; ++o) {
      const Tensor t = c.exe->output_host(o);
      for (int64_t k = 0; k < t.num_elements(); ++k) stats.push_back(t.get(k));
    }
  }
  begin.push_back(stats.size());
  return stats;
}

void update_metrics(TrainingState& s, const std::vector<double>& stats,
                    const std::vector<size_t>& begin) {
  for (size_t i = 0; i < s.metrics.size(); ++i) {
    s.metrics[i]->update(
        std::vector<double>(stats.begin() + static_cast<std::ptrdiff_t>(begin[i]),
                            stats.begin() + static_cast<std::ptrdiff_t>(begin[i + 1])));
  }
}

void update_metrics(TrainingState& s, const CompiledStep& c) {
  std::vector<size_t> begin;
  std::vector<double> stats = metric_stats(s, c, begin);
  update_metrics(s, stats, begin);
}

train::OrderedLogs current_logs(TrainingState& s, double loss_sum, int64_t samples,
                                const std::string& prefix = "") {
  train::OrderedLogs logs{
      {prefix + "loss", samples > 0 ? loss_sum / static_cast<double>(samples) : 0}};
  for (auto& m : s.metrics) logs.push_back({prefix + m->name(), m->result()});
  return logs;
}

struct EvalTotals {
  double loss_sum = 0;
  int64_t samples = 0;
};

EvalTotals run_eval(Model& m, TrainingState& s, const data::DatasetPtr& ds) {
  for (auto& metric : s.metrics) metric->reset();
  EvalTotals t;
  data::Iterator it = ds->make_iterator();
  while (auto e = it.next()) {
    const Tensor *x, *y;
    split_batch(*e, &x, &y, true, "evaluate");
    ensure_built(m, *x);
    TensorType yt = y->type();
    CompiledStep& c = s.get(m, StepKind::kEval, x->type(), &yt);
    c.exe->feed_at(c.x, *x);
    c.exe->feed_at(c.y, *y);
    run_step(*c.exe, *e, "");
    int64_t n = x->shape().dim(0);
    t.loss_sum +=
        c.exe->output_host(static_cast<size_t>(c.loss_output)).get(0) * static_cast<double>(n);
    t.samples += n;
    update_metrics(s, c);
  }
  return t;
}

data::DatasetPtr batched(const Tensor& x, const Tensor* y, int64_t batch_size) {
  TERN_CHECK_ARG(batch_size > 0, "batch_size must be positive, got ", batch_size);
  data::Element e{x};
  if (y) {
    TERN_CHECK_ARG(x.rank() > 0 && y->rank() > 0 && x.shape().dim(0) == y->shape().dim(0), "x has ",
                   x.rank() ? x.shape().dim(0) : 0, " samples but y has ",
                   y->rank() ? y->shape().dim(0) : 0);
    e.push_back(*y);
  }
  return data::from_tensor_slices(e)->batch(batch_size);
}

// A Sequential without an input shape is built from the first batch; data-parallel fit needs the
// variables before the first step (to compare and broadcast them).
void ensure_built_for_fit(Model& m, const data::DatasetPtr& ds) {
  if (m.built()) return;
  data::Iterator it = ds->make_iterator();
  std::optional<data::Element> e = it.next();
  TERN_CHECK_ARG(e && !e->empty(), "fit: the training data is empty");
  ensure_built(m, (*e)[0]);
}

}  // namespace

void Model::compile(std::shared_ptr<optim::Optimizer> optimizer, std::shared_ptr<Loss> loss,
                    std::vector<std::string> metrics) {
  TERN_CHECK_ARG(loss != nullptr, "compile: loss is null");
  std::vector<std::shared_ptr<Metric>> ms;
  bool binary = loss->name() == "binary_crossentropy";
  for (const auto& name : metrics)
    ms.push_back(metric_by_name(name, loss->sparse_labels(), binary, loss->from_logits()));
  compile(std::move(optimizer), std::move(loss), std::move(ms));
}

void Model::compile(std::shared_ptr<optim::Optimizer> optimizer, std::shared_ptr<Loss> loss,
                    std::vector<std::shared_ptr<Metric>> metrics) {
  TERN_CHECK_ARG(optimizer != nullptr, "compile: optimizer is null");
  TERN_CHECK_ARG(loss != nullptr, "compile: loss is null");
  auto s = std::make_shared<TrainingState>();
  // Determinism mode for every model of the process (DESIGN.md §4).
  if (const char* env = std::getenv("TERN_DETERMINISTIC"); env && std::string(env) == "1") {
    s->compile_options.deterministic = true;
  }
  s->optimizer = std::move(optimizer);
  s->loss = std::move(loss);
  s->metrics = std::move(metrics);
  training_ = std::move(s);
}

train::History Model::fit(const Tensor& x, const Tensor& y, const FitOptions& options) {
  TERN_CHECK_ARG(x.rank() > 0 && y.rank() > 0 && x.shape().dim(0) == y.shape().dim(0),
                 "fit: x has shape ", x.shape(), " but y has shape ", y.shape(),
                 " (sample counts differ)");
  int64_t n = x.shape().dim(0);
  FitOptions o = options;
  Tensor xt = x, yt = y;
  if (options.validation_split > 0) {
    TERN_CHECK_ARG(options.validation_split < 1, "fit: validation_split must be in [0, 1), got ",
                   options.validation_split);
    int64_t n_val =
        static_cast<int64_t>(std::floor(static_cast<double>(n) * options.validation_split));
    TERN_CHECK_ARG(n_val > 0 && n_val < n, "fit: validation_split ", options.validation_split,
                   " of ", n, " samples leaves an empty split");
    xt = x.slice_rows(0, n - n_val);
    yt = y.slice_rows(0, n - n_val);
    Tensor y_val = y.slice_rows(n - n_val, n);
    o.validation_data = batched(x.slice_rows(n - n_val, n), &y_val, options.batch_size);
    n -= n_val;
  }
  data::DatasetPtr ds = data::from_tensor_slices({xt, yt});
  if (options.shuffle) ds = ds->shuffle(n, options.seed, true);
  return fit(ds->batch(options.batch_size), o);
}

train::History Model::fit(std::shared_ptr<const data::Dataset> train_data,
                          const FitOptions& options) {
  TrainingState& s = state_of(*this);
  TERN_CHECK_ARG(train_data != nullptr, "fit: training data is null");
  TERN_CHECK_ARG(options.epochs > options.initial_epoch || options.epochs == 0, "fit: epochs (",
                 options.epochs, ") must exceed initial_epoch (", options.initial_epoch, ")");
  TERN_CHECK_ARG(options.gradient_accumulation_steps >= 1,
                 "fit: gradient_accumulation_steps must be >= 1");
  TERN_CHECK_ARG(options.steps_per_epoch == -1 || options.steps_per_epoch >= 1,
                 "fit: steps_per_epoch must be -1 (until the data is exhausted) or >= 1, got ",
                 options.steps_per_epoch);
  if (s.gradient_accumulation_steps != options.gradient_accumulation_steps) {
    s.gradient_accumulation_steps = options.gradient_accumulation_steps;
    s.steps.clear();
  }
  train::History history;
  stop_training = false;
  dist::DataParallel* dp = s.data_parallel.get();
  // Only rank 0 prints; every worker runs the callbacks (checkpoint callbacks gather the workers'
  // data positions and rank 0 writes them).
  const int verbose = dp && !dp->is_chief() ? 0 : options.verbose;
  if (dp) {
    dp->watchdog().resume();
    dp->watchdog().progress("fit start");
  }
  struct PauseWatchdog {
    dist::DataParallel* dp;
    ~PauseWatchdog() {
      if (dp) dp->watchdog().pause();
    }
  } pause_watchdog{dp};
  for (const auto& cb : options.callbacks) cb->set_model(this);
  train::Logs logs;
  for (const auto& cb : options.callbacks) cb->on_train_begin(logs);
  // A resume point (set before fit, or by a callback's on_train_begin) moves the start, possibly
  // into the middle of an epoch.
  std::optional<train::ResumePoint> resume = std::move(s.resume);
  s.resume.reset();
  if (dp) {
    ensure_built_for_fit(*this, train_data);
    train::agree_on_model(*this, s);
    if (resume && dist::is_packed_rank_blobs(resume->iterator_state)) {
      std::vector<std::string> states =
          dist::unpack_rank_blobs(resume->iterator_state, "the checkpoint's data positions");
      if (static_cast<int>(states.size()) != dp->size()) {
        throw_error(ErrorCode::kFailedPrecondition, "the checkpoint was written by ", states.size(),
                    " workers; resume it with the same number (this job has ", dp->size(), ")");
      }
      resume->iterator_state = states[static_cast<size_t>(dp->rank())];
    }
  }
  s.progress = {};
  int first_epoch = options.initial_epoch;
  if (resume) {
    first_epoch = resume->epoch + (resume->epoch_complete ? 1 : 0);
    s.progress.global_step = resume->global_step;
    // A resume point past the run's end, or past its epoch's last batch, is not this run's: a
    // checkpoint at epoch 50 of 2 trained nothing and "succeeded" (bad-input report F16).
    TERN_CHECK_ARG(first_epoch <= options.epochs, "fit: the resume point (epoch ",
                   resume->epoch + 1, resume->epoch_complete ? ", complete" : "",
                   ") is past the last epoch of this run (epochs = ", options.epochs, ")");
  }
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  train::FitStats& stats = history.stats;
  runtime::initialize();
  DeviceBackend& device = DeviceRegistry::global().get(s.compile_options.device);
  DeviceMemoryScope memory(device.allocator(), options.memory_limit_bytes);
  Clock::time_point fit_start = Clock::now();
  int64_t known_steps =
      options.steps_per_epoch > 0 ? options.steps_per_epoch : train_data->cardinality();
  // verbose 1: a bar redrawn in place on a terminal, else a line per epoch; 2: a line per epoch.
  bool interactive = verbose == 1 && train::ProgressBar::stdout_is_terminal();
  for (int epoch = first_epoch; epoch < options.epochs && !stop_training; ++epoch) {
    Clock::time_point epoch_start = Clock::now();
    train::Logs epoch_logs;
    for (const auto& cb : options.callbacks) cb->on_epoch_begin(epoch, epoch_logs);
    for (auto& m : s.metrics) m->reset();
    std::optional<train::ProgressBar> bar;
    if (verbose > 0) bar.emplace(std::cout, interactive, epoch, options.epochs, known_steps);
    // Data-parallel: every worker must take the same number of steps. Known counts are compared
    // once per epoch; only when some worker's count is unknown do the workers agree at each step
    // that all have a batch (a collective of its own).
    int64_t dp_batches = -1;
    bool dp_counts_known = false;
    if (dp) {
      dp_batches = train_data->cardinality();
      if (options.steps_per_epoch > 0 && dp_batches == data::kInfiniteCardinality)
        dp_batches = options.steps_per_epoch;
      else if (dp_batches >= 0 && options.steps_per_epoch > 0)
        dp_batches = std::min(dp_batches, options.steps_per_epoch);
      dp_counts_known = train::check_epoch_batches(*dp, dp_batches, epoch);
    }
    data::Iterator it = train_data->make_iterator(static_cast<uint64_t>(epoch));
    double loss_sum = 0;
    int64_t samples = 0, step = 0;
    if (resume && !resume->epoch_complete && resume->epoch == epoch) {
      TERN_CHECK_ARG(known_steps < 0 || resume->step_in_epoch <= known_steps,
                     "fit: the resume point is batch ", resume->step_in_epoch, " of epoch ",
                     epoch + 1, ", which has ", known_steps, " batches");
      it.restore_state(resume->iterator_state);
      step = resume->step_in_epoch;
      loss_sum = resume->epoch_loss_sum;
      samples = resume->epoch_samples;
    }
    resume.reset();
    s.progress.epoch = epoch;
    s.progress.epoch_complete = false;
    s.progress.iterator = &it;
    // Cleared before `it` dies, also when a step throws, so no callback sees a dangling pointer.
    struct ClearLive {
      train::FitProgress& p;
      ~ClearLive() { p.iterator = nullptr, p.batch = nullptr; }
    } clear_live{s.progress};
    while (!stop_training && (options.steps_per_epoch < 0 || step < options.steps_per_epoch)) {
      std::optional<data::Element> e;
      {
        TERN_TRACE_SCOPE("input_wait", "step");
        Clock::time_point wait_start = Clock::now();
        e = it.next();
        stats.input_wait_seconds += seconds_since(wait_start);
      }
      if (dp && !dp_counts_known) {
        if (!train::all_have_batch(*dp, e.has_value(), epoch, step)) break;
      } else if (!e) {
        if (dp && step < dp_batches) train::shard_ended_early(*dp, epoch, step, dp_batches);
        break;
      }
      s.progress.batch = &*e;
      const Tensor *x, *y;
      split_batch(*e, &x, &y, true, "fit");
      ensure_built(*this, *x);
      train::Logs batch_logs;
      for (const auto& cb : options.callbacks) cb->on_train_batch_begin(step, batch_logs);
      bool apply = (s.micro_step + 1) % s.gradient_accumulation_steps == 0;
      TensorType yt = y->type();
      CompiledStep& c =
          s.get(*this, apply ? StepKind::kTrain : StepKind::kAccumulate, x->type(), &yt);
      optim::Optimizer& opt = *s.optimizer;
      c.exe->feed_at(c.x, *x);
      c.exe->feed_at(c.y, *y);
      // Dropout's random stream: one offset per micro-batch; N workers take the offsets that one
      // worker accumulating N micro-batches would (rank r: micro-batch r).
      int64_t rng_offset = opt.iterations * s.gradient_accumulation_steps + s.micro_step;
      if (dp) rng_offset = rng_offset * dp->size() + dp->rank();
      c.exe->feed_at(c.rng, Tensor::scalar(DType::kI64, static_cast<double>(rng_offset)));
      if (apply) {
        c.exe->feed_at(c.lr, Tensor::scalar(DType::kF32, opt.learning_rate(opt.iterations)));
        c.exe->feed_at(c.step,
                       Tensor::scalar(DType::kI64, static_cast<double>(opt.iterations + 1)));
      }
      {
        TERN_TRACE_SCOPE("train_step", "step");
        Clock::time_point run_start = Clock::now();
        run_step(*c.exe, *e,
                 str_cat(" [training step ", s.progress.global_step, ": epoch ", epoch, ", batch ",
                         step, "]"));
        stats.compute_seconds += seconds_since(run_start);
      }
      if (apply) {
        // A step that dynamic loss scaling skipped (non-finite gradients) is no iteration: Adam's
        // bias correction and the learning-rate schedule see only applied updates.
        bool applied = c.finite_output < 0 ||
                       c.exe->output_host(static_cast<size_t>(c.finite_output)).get(0) != 0;
        if (applied) ++opt.iterations;
        s.micro_step = 0;
      } else {
        ++s.micro_step;
      }
      int64_t n = x->shape().dim(0);
      double batch_loss = c.exe->output_host(static_cast<size_t>(c.loss_output)).get(0);
      std::vector<size_t> metric_begin;
      std::vector<double> batch_stats = metric_stats(s, c, metric_begin);
      // An interrupt request stops fit after this step (interrupt.h); data-parallel workers
      // agree on it through the step's sums, so all stop after the same step.
      int interrupt = train::fit_interrupt_requested();
      if (dp) {
        // Global loss and metrics: sums over the workers; the last values count the workers
        // asked to stop, per signal. A worker that was not asked (the signal reached another one
        // before this step's sums) stops for the signal most workers got, and says which.
        batch_stats.push_back(batch_loss * static_cast<double>(n));
        batch_stats.push_back(static_cast<double>(n));
        // (Another request than these signals counts as SIGTERM, the generic stop.)
        constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGUSR1};
        const int own = interrupt == SIGINT ? 0 : interrupt == SIGUSR1 ? 2 : 1;
        for (int k = 0; k < static_cast<int>(std::size(kStopSignals)); ++k) {
          batch_stats.push_back(interrupt != 0 && k == own ? 1.0 : 0.0);
        }
        train::sum_over_workers(*dp, batch_stats);
        const size_t first = batch_stats.size() - std::size(kStopSignals);
        if (interrupt == 0) {
          double most = 0;
          for (size_t k = 0; k < std::size(kStopSignals); ++k) {
            if (batch_stats[first + k] > most)
              most = batch_stats[first + k], interrupt = kStopSignals[k];
          }
        }
        batch_stats.resize(first);
        n = static_cast<int64_t>(batch_stats.back());
        batch_loss = batch_stats[batch_stats.size() - 2] / static_cast<double>(n);
        dp->watchdog().progress("training step");
      }
      loss_sum += batch_loss * static_cast<double>(n);
      samples += n;
      update_metrics(s, batch_stats, metric_begin);
      ++step;
      ++stats.steps;
      stats.samples += n;
      s.progress.step_in_epoch = step;
      ++s.progress.global_step;
      s.progress.epoch_loss_sum = loss_sum;
      s.progress.epoch_samples = samples;
      batch_logs["loss"] = batch_loss;
      for (const auto& cb : options.callbacks) cb->on_train_batch_end(step - 1, batch_logs);
      s.progress.batch = nullptr;
      if (bar) bar->update(step, current_logs(s, loss_sum, samples));
      if (interrupt != 0) {
        s.progress.interrupted_by = interrupt;
        break;
      }
    }
    if (s.progress.interrupted_by != 0) {
      // Cut short after a finished step: the callbacks save while the iterator is live; the
      // rest of the epoch, validation and the epoch-end callbacks do not run.
      const train::OrderedLogs ordered = current_logs(s, loss_sum, samples);
      if (bar) bar->interrupted(step, ordered);
      train::Logs interrupt_logs(ordered.begin(), ordered.end());
      for (const auto& cb : options.callbacks) cb->on_train_interrupted(interrupt_logs);
      stats.epoch_seconds.push_back(seconds_since(epoch_start));
      break;
    }
    // An epoch without a step trained nothing: an empty training split (an empty file, a CSV
    // with only its header, repeat count 0) is an error, as an empty test split is, not a
    // "successful" fit that saves the untrained weights (bad-input report F8).
    if (step == 0 && !stop_training) {
      throw_error(ErrorCode::kInvalidArgument, "fit: the training data yielded no batch in epoch ",
                  epoch + 1, " (an empty training split?)");
    }
    if (dp) train::average_non_trainable(*this, s);
    train::OrderedLogs ordered = current_logs(s, loss_sum, samples);
    if (options.validation_data) {
      TERN_TRACE_SCOPE("validation", "step");
      Clock::time_point val_start = Clock::now();
      EvalTotals v = run_eval(*this, s, options.validation_data);
      stats.validation_seconds += seconds_since(val_start);
      if (dp) dp->watchdog().progress("validation");
      train::OrderedLogs vl = current_logs(s, v.loss_sum, v.samples, "val_");
      ordered.insert(ordered.end(), vl.begin(), vl.end());
    }
    if (bar) bar->finish(step, samples, ordered);
    for (const auto& [k, v] : ordered) epoch_logs[k] = v;
    epoch_logs["lr"] = s.optimizer->learning_rate(s.optimizer->iterations);
    s.progress.epoch_complete = true;
    for (const auto& cb : options.callbacks) cb->on_epoch_end(epoch, epoch_logs);
    s.progress.iterator = nullptr;
    history.epoch.push_back(epoch);
    for (const auto& [k, v] : epoch_logs) history.history[k].push_back(v);
    stats.epoch_seconds.push_back(seconds_since(epoch_start));
  }
  history.interrupted_by = s.progress.interrupted_by;
  history.interrupt_checkpoint = s.progress.interrupt_checkpoint;
  stats.train_seconds = seconds_since(fit_start);
  stats.device = device.device().to_string();
  stats.peak_device_bytes = device.allocator().stats().peak_bytes_in_use;
  stats.device_memory_limit = device.allocator().stats().limit;
  stats.variable_bytes = variables().bytes();
  for (const auto& cb : options.callbacks) cb->on_train_end(logs);
  if (verbose > 0 && stats.steps > 0) std::cout << stats.report() << std::flush;
  return history;
}

EvaluateResult Model::evaluate(std::shared_ptr<const data::Dataset> data, int verbose) {
  TrainingState& s = state_of(*this);
  TERN_CHECK_ARG(data != nullptr, "evaluate: data is null");
  EvalTotals t = run_eval(*this, s, data);
  EvaluateResult r;
  r.loss = t.samples > 0 ? t.loss_sum / static_cast<double>(t.samples) : 0;
  for (auto& m : s.metrics) r.metrics.push_back({m->name(), m->result()});
  if (verbose > 0)
    std::cout << "evaluate:"
              << train::ProgressBar::format_logs(current_logs(s, t.loss_sum, t.samples)) << "\n";
  return r;
}

EvaluateResult Model::evaluate(const Tensor& x, const Tensor& y, int64_t batch_size, int verbose) {
  return evaluate(batched(x, &y, batch_size), verbose);
}

Tensor Model::predict(std::shared_ptr<const data::Dataset> data) {
  TERN_CHECK_ARG(data != nullptr, "predict: data is null");
  if (!training_) training_ = std::make_shared<TrainingState>();
  TrainingState& s = *training_;
  std::vector<Tensor> parts;
  data::Iterator it = data->make_iterator();
  while (auto e = it.next()) {
    TERN_CHECK_ARG(!e->empty(), "predict: empty dataset element");
    const Tensor& x = (*e)[0];
    ensure_built(*this, x);
    CompiledStep& c = s.get(*this, StepKind::kPredict, x.type(), nullptr);
    c.exe->feed_at(c.x, x);
    run_step(*c.exe, *e, "");
    Tensor pred = c.exe->output_host(static_cast<size_t>(c.pred_output));
    // A host-accessible output is a view of the arena, rewritten by the next batch: keep a copy.
    parts.push_back(pred.storage() == c.exe->output(static_cast<size_t>(c.pred_output)).storage()
                        ? pred.clone()
                        : pred);
  }
  TERN_CHECK_ARG(!parts.empty(), "predict: the dataset is empty");
  int64_t rows = 0;
  for (const auto& p : parts) rows += p.shape().dim(0);
  std::vector<int64_t> dims = parts[0].shape().dims();
  dims[0] = rows;
  Tensor out(parts[0].dtype(), Shape(dims));
  size_t offset = 0;
  for (const auto& p : parts) {
    std::memcpy(static_cast<char*>(out.raw_data()) + offset, p.raw_data(), p.nbytes());
    offset += p.nbytes();
  }
  return out;
}

Tensor Model::predict(const Tensor& x, int64_t batch_size) {
  return predict(batched(x, nullptr, batch_size));
}

}  // namespace tern::nn
