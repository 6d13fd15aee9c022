#pragma once
// --profile of `oa train`: GPU time per semantic op over the training steps,
// from the engine's timestamps (Engine::set_profiling), leaving out the first
// steps of the run (pipelines built, memory reserved) and the work between
// steps (validation, evaluation). At the end rank 0 writes profile.json to the
// run directory and prints the table, per step.
#include <cstdint>
#include <filesystem>

#include "oa/runtime/engine.hpp"

namespace oa_cli {

class StepProfile {
 public:
  // The steps a profile leaves out at the start of a run (fewer when the run
  // has no more, so that at least its last step is profiled).
  static constexpr std::int64_t kWarmupSteps = 3;

  // Profiles when `on` and `writer` (rank 0) the run of `steps` steps about
  // to start on `engine`, writing to `out`.
  StepProfile(const oa::Engine& engine, bool on, bool writer, std::filesystem::path out, std::int64_t steps);
  // Before each training step: starts profiling past the warmup.
  void before_step();
  // Around work that is not a training step.
  void pause() const;
  void resume() const;
  // Writes profile.json and prints the table (nothing unless profiling ran).
  void report() const;

 private:
  oa::Engine engine_;
  bool on_;
  std::filesystem::path out_;
  std::int64_t skip_, seen_ = 0;
};

}  // namespace oa_cli
