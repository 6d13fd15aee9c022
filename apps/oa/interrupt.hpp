#pragma once
// Ctrl-C during `oa train`: the training loops install on_sigint and poll
// g_interrupted between steps; once it is set they finish the step, save a
// checkpoint and exit with 130. The first SIGINT only sets the flag; a second
// one ends the process at once (the default action).
#include <csignal>

namespace oa_cli {

extern volatile std::sig_atomic_t g_interrupted;
// The SIGINT handler: sets g_interrupted and restores the default action.
void on_sigint(int);

}  // namespace oa_cli
