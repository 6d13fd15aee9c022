#pragma once
// Gradient checks through a whole module: its input and every parameter.
//
// module_gradcheck(module, input, ref) overwrites each parameter of `module`
// (in named_parameters() order) with deterministic values in [-1, 1) (unless
// told to keep them), runs module.forward(input) on the GPU and backpropagates
// L = sum(output * W) for fixed pseudo-random W (as gradcheck() in
// support/gradcheck.hpp, whose tolerances and helpers it shares). It compares
//   - the output with ref(args), args[0] = the input's host values and
//     args[1 + i] = parameter i's values, all in f64, and
//   - the gradient of the input (when it requires one) and of every parameter
//     with central finite differences of L on the f64 reference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "oa/ml/nn/module.hpp"
#include "support/gradcheck.hpp"

namespace oa::test {

struct ModuleCheckOptions {
  bool randomize_parameters = true;
  std::uint64_t seed = 11;
  GradTolerance tol = kGradTolerance;
};

// `input` is given as a GPU Matrix plus its host values (so that integer
// inputs, such as Embedding's indices, work too); its gradient is checked when
// `input_grad` (it is then marked as requiring one).
inline Matrix module_gradcheck(ml::nn::Module& module, const Matrix& input, const std::vector<double>& input_host, bool input_grad,
                               const ReferenceForward& ref, const ModuleCheckOptions& options = {}) {
  const GradTolerance& tol = options.tol;
  const auto params = module.named_parameters();
  std::vector<std::vector<double>> args{input_host};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ml::Parameter& p = params[i].second;
    if (options.randomize_parameters) p.write(test_values(p.value().numel(), options.seed + 100 * i));
    const std::vector<float> v = p.value().to_vector();
    args.emplace_back(v.begin(), v.end());
  }
  if (input_grad) set_requires_grad(input);
  module.zero_grad();
  Matrix out = module.forward(input);
  const std::vector<double> ref_out = ref(args);
  EXPECT_TRUE(oa_test::near(out.to_vector(), ref_out, tol.forward_atol * std::max(1.0, max_abs(ref_out)), tol.forward_rtol))
      << module.type_name() << " forward output";
  const std::vector<float> w = test_values(out.numel(), options.seed);
  backward(out, Matrix::from_vector(out.shape(), w, out.engine()));

  auto loss = [&](const std::vector<std::vector<double>>& x) {
    const std::vector<double> y = ref(x);
    double l = 0;
    for (std::size_t k = 0; k < y.size(); ++k) l += y[k] * w[k];
    return l;
  };
  for (std::size_t a = input_grad ? 0 : 1; a < args.size(); ++a) {
    const std::string what = a == 0 ? std::string("input") : "parameter " + params[a - 1].first;
    const std::vector<double> fd = central_differences(args, a, loss, tol);
    const Matrix g = a == 0 ? grad(input) : params[a - 1].second.grad();
    EXPECT_TRUE(g.defined()) << module.type_name() << ": no gradient for the " << what;
    if (!g.defined()) continue;
    EXPECT_TRUE(oa_test::near(g.to_vector(), fd, tol.grad_atol * std::max(1.0, max_abs(fd)), tol.grad_rtol))
        << module.type_name() << ": gradient of the " << what;
  }
  return out;
}

// The same for an f32 input given by shape and values.
inline Matrix module_gradcheck(ml::nn::Module& module, const GradInput& input, const ReferenceForward& ref,
                               const ModuleCheckOptions& options = {}) {
  const Matrix x = Matrix::from_vector(input.shape, input.values);
  return module_gradcheck(module, x, std::vector<double>(input.values.begin(), input.values.end()), input.requires_grad, ref,
                          options);
}

// The names of named_parameters(), named_buffers(), named_modules() and the
// like, in their order.
template <typename Named>
std::vector<std::string> names_of(const Named& named) {
  std::vector<std::string> out;
  for (const auto& entry : named) out.push_back(entry.first);
  return out;
}

// The names the module tests write unqualified: `using namespace
// oa::test::module_names;` brings them in, with the nn modules.
namespace module_names {
using oa::Matrix;
using oa::Shape;
using namespace oa::ml::nn;
using Args = std::vector<std::vector<double>>;
using oa::test::names_of;
}  // namespace module_names

}  // namespace oa::test
