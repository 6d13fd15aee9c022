#pragma once
// Gradient checks for every differentiable op family.
//
// gradcheck(inputs, gpu, ref) builds the inputs on the default engine, runs
// the GPU forward `gpu`, and backpropagates the loss L = sum(output * W) for
// fixed pseudo-random weights W in [-1, 1) (backward(output, W)). It then
// compares
//   - the GPU output with the f64 reference output ref(inputs), and
//   - every GPU input gradient with central finite differences of
//     L_ref(x) = sum_k ref(x)_k * W_k, computed in f64 on the reference:
//     (L_ref(x + h e_j) - L_ref(x - h e_j)) / (2 h).
// Because the differences run on the f64 reference, h can be tiny and the
// check measures the GPU's f32 error, not the difference quotient's. Inputs
// must keep away from kinks (relu at 0, ties of maximum, clamp bounds) by more
// than h. The tolerances live in kGradTolerance, in this one place.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "oa/oa.hpp"
#include "support/expect.hpp"

namespace oa::test {

struct GradTolerance {
  double step = 1e-6;          // finite-difference step, relative to max(1, |x_j|)
  double forward_rtol = 1e-4;  // GPU output vs f64 reference
  double forward_atol = 1e-5;  // ... times max(1, max |reference output|)
  double grad_rtol = 2e-3;     // GPU gradient vs f64 finite differences
  double grad_atol = 2e-4;     // ... times max(1, max |finite difference|) over the input
};
inline constexpr GradTolerance kGradTolerance{};

// One input: its shape and host values (converted to f64 for the reference),
// whether its gradient is checked (requires_grad on the GPU) and its dtype:
// F16 and BF16 values are rounded on the host (the reference sees the rounded
// values), I32 and Bool values are integers held as floats.
struct GradInput {
  Shape shape;
  std::vector<float> values;
  bool requires_grad = true;
  DType dtype = DType::F32;
};

// The values `in` holds on the GPU.
inline std::vector<float> stored_values(const GradInput& in) {
  std::vector<float> v = in.values;
  if (in.dtype == DType::F16)
    for (auto& x : v) x = float_from_f16(f16_from_float(x));
  if (in.dtype == DType::BF16)
    for (auto& x : v) x = float_from_bf16(bf16_from_float(x));
  return v;
}

inline Matrix make_input(const GradInput& in) {
  if (in.dtype == DType::I32) {
    const std::vector<std::int32_t> ints(in.values.begin(), in.values.end());
    return Matrix::from_i32(in.shape, ints);
  }
  if (in.dtype == DType::Bool) {
    std::vector<std::uint8_t> bytes;
    for (float x : in.values) bytes.push_back(x != 0);
    return Matrix::from_bool(in.shape, bytes);
  }
  return Matrix::from_vector(in.shape, in.values, in.dtype);
}

// A Matrix's elements as floats, whatever its dtype.
inline std::vector<float> host_values(const Matrix& m) {
  if (m.dtype() == DType::I32) {
    const std::vector<std::int32_t> ints = m.to_i32();
    return {ints.begin(), ints.end()};
  }
  if (m.dtype() == DType::Bool) {
    const std::vector<std::uint8_t> bytes = m.to_bool();
    return {bytes.begin(), bytes.end()};
  }
  return m.to_vector();
}

using GpuForward = std::function<Matrix(const std::vector<Matrix>& inputs)>;
using ReferenceForward = std::function<std::vector<double>(const std::vector<std::vector<double>>& inputs)>;

// Deterministic values in [low, high) (SplitMix64; the same on every platform).
inline std::vector<float> test_values(std::int64_t n, std::uint64_t seed, double low = -1.0, double high = 1.0) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (auto& x : v) {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const double u = static_cast<double>(z >> 11) * 0x1.0p-53;
    x = static_cast<float>(low + (high - low) * u);
  }
  return v;
}

inline GradInput random_input(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0,
                              bool requires_grad = true) {
  return {shape, test_values(shape.numel(), seed, low, high), requires_grad};
}

inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// Central finite differences of `loss` with respect to args[a], each step
// h = tol.step * max(1, |x_j|); args[a] is restored.
template <typename Loss>
std::vector<double> central_differences(std::vector<std::vector<double>>& args, std::size_t a, const Loss& loss,
                                        const GradTolerance& tol = kGradTolerance) {
  std::vector<double> fd(args[a].size());
  for (std::size_t j = 0; j < fd.size(); ++j) {
    const double x0 = args[a][j], h = tol.step * std::max(1.0, std::abs(x0));
    args[a][j] = x0 + h;
    const double up = loss(args);
    args[a][j] = x0 - h;
    const double down = loss(args);
    args[a][j] = x0;
    fd[j] = (up - down) / (2 * h);
  }
  return fd;
}

// Checks `gpu` against `ref` (see the top of this file). Returns the GPU
// output for further assertions.
inline Matrix gradcheck(const std::vector<GradInput>& inputs, const GpuForward& gpu, const ReferenceForward& ref,
                        std::uint64_t seed = 7, const GradTolerance& tol = kGradTolerance) {
  std::vector<Matrix> xs;
  std::vector<std::vector<double>> ref_xs;
  for (const auto& in : inputs) {
    xs.push_back(make_input(in));
    if (in.requires_grad) set_requires_grad(xs.back());
    const std::vector<float> stored = stored_values(in);
    ref_xs.emplace_back(stored.begin(), stored.end());
  }
  Matrix out = gpu(xs);
  const std::vector<float> w = test_values(out.numel(), seed);
  const std::vector<double> ref_out = ref(ref_xs);
  EXPECT_TRUE(oa_test::near(host_values(out), ref_out, tol.forward_atol * std::max(1.0, max_abs(ref_out)), tol.forward_rtol))
      << "forward output";

  bool any = false;
  for (const auto& in : inputs) any = any || in.requires_grad;
  if (!any) return out;
  EXPECT_TRUE(requires_grad(out)) << "the output of a function of inputs that require grad has no history";
  backward(out, Matrix::from_vector(out.shape(), w));

  auto loss = [&](const std::vector<std::vector<double>>& x) {
    const std::vector<double> y = ref(x);
    double l = 0;
    for (std::size_t k = 0; k < y.size(); ++k) l += y[k] * w[k];
    return l;
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad) continue;
    const std::vector<double> fd = central_differences(ref_xs, i, loss, tol);
    const Matrix g = grad(xs[i]);
    const std::vector<float> got = g.defined() ? g.to_vector() : std::vector<float>(fd.size(), 0.0f);
    if (g.defined()) {
      EXPECT_TRUE(g.shape() == inputs[i].shape)
          << "gradient of input " << i << " has shape " << g.shape().to_string() << ", expected " << inputs[i].shape.to_string();
    }
    EXPECT_TRUE(oa_test::near(got, fd, tol.grad_atol * std::max(1.0, max_abs(fd)), tol.grad_rtol)) << "gradient of input " << i;
  }
  return out;
}

// The names the gradient tests write unqualified: `using namespace
// oa::test::gradcheck_names;` brings them in.
namespace gradcheck_names {
using oa::Matrix;
using oa::Shape;
using oa::test::gradcheck;
using oa::test::random_input;
using Vec = std::vector<double>;
using Inputs = std::vector<std::vector<double>>;
}  // namespace gradcheck_names

}  // namespace oa::test
