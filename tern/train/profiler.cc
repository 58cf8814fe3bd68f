// Profiler callback: installs a ChromeTraceSink for a window of training steps.
#include "tern/train/profiler.h"

#include <iostream>

#include "tern/base/logging.h"
#include "tern/nn/model.h"
#include "tern/train/training_state.h"

namespace tern::train {

Profiler::Profiler(ProfilerOptions options) : options_(std::move(options)) {
  TERN_CHECK_ARG(options_.start_step >= 0, "Profiler: start_step must be >= 0, got ",
                 options_.start_step);
  TERN_CHECK_ARG(options_.num_steps >= 1, "Profiler: num_steps must be >= 1, got ",
                 options_.num_steps);
  TERN_CHECK_ARG(!options_.trace_path.empty(), "Profiler: trace_path is empty");
}

Profiler::~Profiler() {
  if (sink_ && trace_sink() == sink_.get()) set_trace_sink(previous_);
}

void Profiler::start() {
  sink_ = std::make_unique<io::ChromeTraceSink>();
  previous_ = trace_sink();
  set_trace_sink(sink_.get());
}

void Profiler::stop() {
  if (!sink_ || done_) return;
  if (trace_sink() == sink_.get()) set_trace_sink(previous_);
  done_ = true;
  std::map<std::string, runtime::StepInfo> nodes = compiled_nodes(*model());
  sink_->write(options_.trace_path, op_trace_args(nodes));
  report_ = analyze_profile(sink_->events(), nodes);
  if (options_.print_report) {
    std::cout << "profile of " << report_.steps << " steps written to " << options_.trace_path
              << "\n"
              << report_.format() << std::flush;
  }
}

void Profiler::on_train_begin(Logs&) {
  done_ = false;
  // The first profiled batch's input wait happens before its batch callbacks: start at the end of
  // the batch before (or now, for a window starting at the beginning).
  TrainingState* s = model()->training_state();
  int64_t at = s && s->resume ? s->resume->global_step : 0;
  if (options_.start_step <= at) start();
}

void Profiler::on_train_batch_end(int64_t, Logs&) {
  int64_t done_steps = model()->training_state()->progress.global_step;
  if (!sink_ && done_steps == options_.start_step) {
    start();
  } else if (sink_ && !done_ && done_steps >= options_.start_step + options_.num_steps) {
    stop();
  }
}

void Profiler::on_train_end(Logs&) {
  stop();
}

}  // namespace tern::train
