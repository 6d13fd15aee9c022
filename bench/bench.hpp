#pragma once
// Benchmark cases: each registers a name, a kind and parameters that
// bench/torch_compare.py understands, and a setup that returns the timed step.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oa/oa.hpp"

namespace oa_bench {

struct Case {
  std::string name;    // unique, e.g. "conv2d_n32_c64_56x56_k3"
  std::string kind;    // the PyTorch twin in torch_compare.py, e.g. "conv2d"
  nlohmann::json params;
  double flops = 0;    // per step, for TFLOP/s (0 = report bandwidth instead)
  double bytes = 0;    // per step, for GB/s
  // Builds inputs on the engine and returns the step to time.
  std::function<std::function<void()>(const oa::Engine&)> setup;
};

std::vector<Case>& registry();

struct Register {
  explicit Register(Case c) { registry().push_back(std::move(c)); }
};

}  // namespace oa_bench
