#pragma once
// Ctrl-C (SIGINT) or SIGTERM during `oa train`: TrainingRun::start calls
// install_interrupt_handler() and the training loops poll g_interrupted (as
// TrainingRun::interrupted) every step; once it is set they finish the step,
// save a checkpoint and exit with 128 + the signal number (130 for Ctrl-C). The first signal prints a line on stderr at once and
// sets the flag; a second one ends the process (the default action).
#include <csignal>

namespace oa_cli {

// 0, or the number of the first SIGINT or SIGTERM received.
extern volatile std::sig_atomic_t g_interrupted;
// The handler for SIGINT and SIGTERM: writes a line to stderr, records the
// signal in g_interrupted and restores the default action of both signals.
void on_sigint(int signal);
// Installs on_sigint for SIGINT and SIGTERM.
void install_interrupt_handler();

}  // namespace oa_cli
