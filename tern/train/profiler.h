// Profiler callback: traces training steps [start_step, start_step + num_steps) (global batch
// indices; step 0 includes compiling the step) into a Chrome-trace JSON file and keeps the
// analysis (ops ranked by time, input wait / compute / optimizer split).
#pragma once

#include <memory>
#include <string>

#include "tern/io/chrome_trace.h"
#include "tern/train/callbacks.h"
#include "tern/train/profile_report.h"

namespace tern::train {

struct ProfilerOptions {
  std::string trace_path = "trace.json";
  int64_t start_step = 1;
  int64_t num_steps = 5;
  bool print_report = true;  // print the ranking to stdout when the window closes
};

class Profiler : public Callback {
 public:
  explicit Profiler(ProfilerOptions options);
  ~Profiler() override;
  void on_train_begin(Logs&) override;
  void on_train_batch_end(int64_t step, Logs&) override;
  void on_train_end(Logs&) override;

  bool done() const { return done_; }
  const ProfileReport& report() const { return report_; }

 private:
  void start();
  void stop();
  ProfilerOptions options_;
  std::unique_ptr<io::ChromeTraceSink> sink_;
  TraceSink* previous_ = nullptr;
  bool done_ = false;
  ProfileReport report_;
};

}  // namespace tern::train
