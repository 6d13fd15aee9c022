#include "interrupt.hpp"

#include <unistd.h>

namespace oa_cli {

volatile std::sig_atomic_t g_interrupted = 0;

void on_sigint(int signal) {
  // Only async-signal-safe calls here (write, signal).
  static constexpr char kInterrupted[] = "\noa: interrupted; saving a checkpoint after this step (Ctrl-C again quits without saving)\n";
  static constexpr char kTerminated[] = "\noa: terminated; saving a checkpoint after this step\n";
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  g_interrupted = signal;
  const bool terminated = signal == SIGTERM;
  if (write(STDERR_FILENO, terminated ? kTerminated : kInterrupted, (terminated ? sizeof kTerminated : sizeof kInterrupted) - 1) < 0) {
    // Nothing to do: stderr is gone.
  }
}

void install_interrupt_handler() {
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
}

}  // namespace oa_cli
