#pragma once
// Forcing one variant of a tuning point (oa/runtime/tuning.hpp) on the
// default engine for a test's scope.
#include <string>
#include <vector>

#include "oa/oa.hpp"
#include "oa/runtime/tuning.hpp"

namespace oa_test {

// Forces `variant` of `point` on the default engine while it lives.
class Forced {
 public:
  Forced(const std::string& point, const std::string& variant)
      : engine_(oa::Engine::default_engine()), saved_(*oa::tuning_of(engine_)) {
    std::vector<oa::TuningTable> layers{oa::TuningTable::parse(
        R"({"oa_tuning": 1, "points": {")" + point + R"(": [{"use": ")" + variant + R"("}]}})", "forced.json")};
    layers.insert(layers.end(), saved_.layers().begin(), saved_.layers().end());
    oa::set_tuning(engine_, oa::Tuning(std::move(layers)));
  }
  ~Forced() { oa::set_tuning(engine_, saved_); }
  Forced(const Forced&) = delete;
  Forced& operator=(const Forced&) = delete;

 private:
  oa::Engine engine_;
  oa::Tuning saved_;
};

}  // namespace oa_test
