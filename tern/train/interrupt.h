// Graceful interrupts of fit(). Anything -- a signal handler, another thread -- may request one;
// fit() finishes the step it is in, tells the callbacks (Callback::on_train_interrupted: the
// checkpoint callbacks save a checkpoint at that exact step, data position included), skips the
// rest of the epoch, validation and later epochs, and returns with History::interrupted_by set.
// `tern train --resume` (or BackupAndRestore) then continues exactly where it stopped.
//
// Data-parallel fit (TrainingState::data_parallel): a signal may reach the workers at different
// steps, so a worker's request is folded into the step's collective sum of the loss and metrics
// (train::sum_over_workers): every worker learns at the same step that some worker was asked to
// stop, and all stop after that step (rank 0 writes the checkpoint for all).
//
// GracefulInterrupts installs the handlers `tern train` uses: the first SIGINT or SIGTERM (or
// SIGUSR1, which Open MPI's mpirun forwards to every rank) requests the interrupt and prints a
// note; a second SIGINT ends the process at once (exit status 130).
#pragma once

#include <csignal>

namespace tern::train {

// Requests an interrupt (the first request's signal wins). Async-signal-safe.
void request_fit_interrupt(int signal);
// The signal of the pending request; 0 when there is none.
int fit_interrupt_requested();
void clear_fit_interrupt();

// The exit status of a process stopped by `signal`, as a shell reports it: 128 + signal (130 for
// SIGINT, 143 for SIGTERM).
constexpr int interrupted_exit_status(int signal) {
  return 128 + signal;
}

// Signal handlers for the lifetime of the object (the previous ones come back after it), or for
// the rest of the process after keep().
class GracefulInterrupts {
 public:
  GracefulInterrupts();
  ~GracefulInterrupts();
  GracefulInterrupts(const GracefulInterrupts&) = delete;
  GracefulInterrupts& operator=(const GracefulInterrupts&) = delete;

  // The handlers stay after the object: `tern train` keeps them past fit, so that a request
  // arriving after the last step (while rank 0 evaluates and saves, or a worker finalizes MPI) is
  // noted and the finished run completes, where the default action of SIGUSR1 killed a finished
  // worker and mpirun failed the job.
  void keep() { keep_ = true; }

 private:
  struct sigaction old_int_, old_term_, old_usr1_;
  bool keep_ = false;
};

}  // namespace tern::train
