#include "step_profile.hpp"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "oa/core/error.hpp"

namespace oa_cli {

StepProfile::StepProfile(const oa::Engine& engine, bool on, bool writer, std::filesystem::path out, std::int64_t steps)
    : engine_(engine), on_(on && writer), out_(std::move(out)), skip_(std::clamp<std::int64_t>(steps - 1, 0, kWarmupSteps)) {
  if (on_ && !engine.device().timestamps)
    oa::fail(oa::ErrorKind::Unsupported, "--profile: {} has no timestamp queries, so GPU time cannot be measured", engine.device().name);
}

void StepProfile::before_step() {
  if (on_ && seen_++ == skip_) engine_.set_profiling(true);
}

void StepProfile::pause() const {
  if (on_) engine_.set_profiling(false);
}

void StepProfile::resume() const {
  if (on_ && seen_ > skip_) engine_.set_profiling(true);
}

void StepProfile::report() const {
  if (!on_ || seen_ <= skip_) return;
  const oa::Profile profile = engine_.profile();
  engine_.set_profiling(false);
  const auto steps = static_cast<std::uint64_t>(seen_ - skip_);
  double total = 0;
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& e : profile.entries) {
    total += e.gpu_ms;
    ops.push_back({{"op", e.op}, {"calls", e.calls}, {"dispatches", e.dispatches}, {"gpu_ms", e.gpu_ms},
                   {"gpu_ms_per_step", e.gpu_ms / static_cast<double>(steps)}});
  }
  const nlohmann::json doc = {{"device", engine_.device().name}, {"steps", steps},       {"after_steps", skip_},
                              {"gpu_ms", total},                 {"gpu_ms_per_step", total / static_cast<double>(steps)},
                              {"ops", ops}};
  const auto file = out_ / "profile.json";
  std::ofstream f(file);
  f << doc.dump(1) << "\n";
  if (!f.flush()) oa::fail(oa::ErrorKind::InvalidArgument, "--profile: cannot write {}", file.string());
  fmt::print("GPU time per op over {} training step(s) after the first {}, per step ({}):\n{}", steps, skip_, file.string(),
             profile.to_table(steps));
}

}  // namespace oa_cli
