// GracefulInterrupts: a signal becomes a request that fit() reads, and the handlers go with the
// object unless kept (`tern train` keeps them, so that a late request cannot kill a finished run).
#include "tern/train/interrupt.h"

#include <gtest/gtest.h>

#include <csignal>

namespace tern::train {
namespace {

// The handler SIGUSR1 has now.
void (*usr1_handler())(int) {
  struct sigaction now {};
  sigaction(SIGUSR1, nullptr, &now);
  return now.sa_handler;
}

TEST(GracefulInterrupts, ASignalBecomesARequestAndTheHandlersGoWithTheObject) {
  auto* before = usr1_handler();
  clear_fit_interrupt();
  {
    GracefulInterrupts interrupts;
    EXPECT_NE(usr1_handler(), before);
    std::raise(SIGUSR1);
    EXPECT_EQ(fit_interrupt_requested(), SIGUSR1);
    std::raise(SIGTERM);  // the first request's signal wins
    EXPECT_EQ(fit_interrupt_requested(), SIGUSR1);
  }
  EXPECT_EQ(usr1_handler(), before);
  clear_fit_interrupt();
  EXPECT_EQ(fit_interrupt_requested(), 0);
}

TEST(GracefulInterrupts, KeptHandlersOutliveTheObject) {
  struct sigaction old_int {
  }, old_term{}, old_usr1{};
  sigaction(SIGINT, nullptr, &old_int);
  sigaction(SIGTERM, nullptr, &old_term);
  sigaction(SIGUSR1, nullptr, &old_usr1);
  clear_fit_interrupt();
  {
    GracefulInterrupts interrupts;
    interrupts.keep();
  }
  // The default action of SIGUSR1 would end this process here.
  std::raise(SIGUSR1);
  EXPECT_EQ(fit_interrupt_requested(), SIGUSR1);
  clear_fit_interrupt();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGUSR1, &old_usr1, nullptr);
}

}  // namespace
}  // namespace tern::train
