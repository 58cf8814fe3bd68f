// The interrupt request flag and the signal handlers of `tern train`.
#include "tern/train/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace tern::train {
namespace {

std::atomic<int> g_requested{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

void write_stderr(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void on_signal(int sig) {
  int none = 0;
  if (g_requested.compare_exchange_strong(none, sig)) {
    write_stderr(sig == SIGINT
                     ? "\ntern: SIGINT: stopping after this step and saving (Ctrl-C again quits at "
                       "once)\n"
                 : sig == SIGTERM ? "\ntern: SIGTERM: stopping after this step and saving\n"
                                  : "\ntern: SIGUSR1: stopping after this step and saving\n");
    return;
  }
  // Already stopping. A second Ctrl-C means now; other signals (mpirun's SIGTERM after the
  // terminal's SIGINT reached every rank) change nothing.
  if (sig == SIGINT) {
    write_stderr("\ntern: second SIGINT: quitting without saving\n");
    ::_exit(interrupted_exit_status(SIGINT));
  }
}

}  // namespace

void request_fit_interrupt(int signal) {
  int none = 0;
  g_requested.compare_exchange_strong(none, signal);
}

int fit_interrupt_requested() {
  return g_requested.load(std::memory_order_relaxed);
}

void clear_fit_interrupt() {
  g_requested.store(0);
}

GracefulInterrupts::GracefulInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  sigaction(SIGUSR1, &sa, &old_usr1_);
}

GracefulInterrupts::~GracefulInterrupts() {
  if (keep_) return;
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGUSR1, &old_usr1_, nullptr);
}

}  // namespace tern::train
