#pragma once
// Benchmark cases: each has a name after the model layer it comes from, a
// family (the report's geomean groups), a kind and parameters that
// bench/torch_compare.py turns into the same computation in PyTorch, and a
// setup that returns the timed step.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oa/oa.hpp"

namespace oa_bench {

struct Case {
  std::string name;    // unique, e.g. "conv2d_resnet50_layer1_3x3"
  std::string family;  // e.g. "conv2d", "attention"
  std::string kind;    // the PyTorch twin in torch_compare.py, e.g. "conv2d"
  nlohmann::json params;
  double flops = 0;  // per step, for TFLOP/s (0 = report bandwidth instead)
  double bytes = 0;  // per step: the bytes a kernel must move at least, for GB/s
  // Builds inputs on the engine and returns the step to time.
  std::function<std::function<void()>(const oa::Engine&)> setup;
};

// A family's sweep: full-size cases, or tiny ones (`quick`, for lavapipe and
// CPU checks) under the same names.
using Sweep = std::function<std::vector<Case>(bool quick)>;
std::vector<Sweep>& registry();

struct Register {
  explicit Register(Sweep s) { registry().push_back(std::move(s)); }
};

// A uniform [-1, 1) input with the given seed, a leaf that requires gradients when `grad`.
inline oa::Matrix input(const oa::Shape& s, std::uint64_t seed, const oa::Engine& e, bool grad = false) {
  oa::Matrix m = oa::Matrix::uniform(s, -1, 1, seed, e);
  if (grad) oa::set_requires_grad(m);
  return m;
}

// The step of a forward, or of forward + backward with dY = ones (made once,
// here, as the PyTorch twin makes it) when `backward`. oa::backward starts
// from an f32 output: a 16-bit one is cast first (one more elementwise op
// than the twin, whose backward starts from the 16-bit output).
inline std::function<void()> step(std::function<oa::Matrix()> forward, bool backward, const oa::Engine& e) {
  if (!backward) return [forward] { (void)forward(); };
  const oa::Matrix dy = oa::Matrix::ones(forward().shape(), e);
  return [forward, dy] { oa::backward(oa::matrix::cast(forward(), oa::DType::F32), dy); };
}

// `forward` run under oa::AutocastGuard(dtype) when dtype is given (the
// 16-bit families: f32 leaves, as a mixed-precision training step sees them).
inline std::function<oa::Matrix()> autocast(std::function<oa::Matrix()> forward, std::optional<oa::DType> dtype) {
  if (!dtype) return forward;
  return [forward, d = *dtype] {
    const oa::AutocastGuard guard(d);
    return forward();
  };
}

inline std::string suffix(bool backward) { return backward ? "_fwd_bwd" : ""; }

}  // namespace oa_bench
