// Op table cases of GradScaler's ops (oa/ml/amp.hpp), which update their
// operands in place (no backward): the unscaled gradient and the found-inf
// flag, and the scale after an update.
#include <cmath>
#include <limits>

#include "ops/op_table.hpp"

namespace oa::test {
namespace {

using oa::ml::Parameter;
using oa::ml::amp::GradScaler;
namespace optim = oa::ml::optim;

const float kInf = std::numeric_limits<float>::infinity();

// The parameter x[0] given the gradient 4 * x[1] (the backward of an affine
// map by 4, exact), as scale(loss) with scale 4 gives it.
Parameter scaled_gradient(const Inputs& x) {
  const Parameter p("p", x[0]);
  oa::backward(oa::matrix::affine(p.value(), 4.0f, 0.0f), x[1]);
  return p;
}

const std::vector<std::string> kUnscaleTrace = {"oa::matrix::affine", "oa::matrix::affine backward", "oa::ml::amp::unscale_grads"};

OA_OP_CASES(unscale_grads, "oa::ml::amp::unscale_grads") {
  auto unscaled = [](const Inputs& x, bool flag) {
    const Parameter p = scaled_gradient(x);
    optim::Sgd sgd({p});
    GradScaler scaler({.init_scale = 4.0f});
    scaler.unscale_(sgd);
    return flag ? scaler.found_inf() : p.grad();
  };
  return {{"gradient", {random_input({3, 5}, 731, -1, 1, false), random_input({3, 5}, 732, -1, 1, false)},
           [unscaled](const Inputs& x) { return unscaled(x, false); }, [](const RefInputs& x) { return x[1]; }, kGradTolerance,
           kUnscaleTrace},
          {"finite_flag", {random_input({4}, 733, -1, 1, false), random_input({4}, 734, -1, 1, false)},
           [unscaled](const Inputs& x) { return unscaled(x, true); }, [](const RefInputs&) { return std::vector<double>{0.0}; },
           kGradTolerance, kUnscaleTrace},
          {"inf_flag", {random_input({4}, 735, -1, 1, false), {{4}, {1.0f, kInf, -2.0f, 0.5f}, false}},
           [unscaled](const Inputs& x) { return unscaled(x, true); }, [](const RefInputs&) { return std::vector<double>{1.0}; },
           kGradTolerance, kUnscaleTrace}};
}

// The scale after one scaled step and update: grown (growth_interval 1) after
// finite gradients, backed off after an inf.
OA_OP_CASES(update_scale, "oa::ml::amp::update_scale") {
  auto scale_after = [](const Inputs& x) {
    const Parameter p = scaled_gradient(x);
    optim::Sgd sgd({p});
    GradScaler scaler({.init_scale = 4.0f, .growth_interval = 1});
    scaler.step(sgd);
    scaler.update();
    return Matrix::full(Shape{}, scaler.get_scale());
  };
  const std::vector<std::string> trace = {"oa::matrix::affine", "oa::matrix::affine backward", "oa::ml::amp::unscale_grads",
                                          "oa::ml::optim::sgd_step", "oa::ml::amp::update_scale"};
  return {{"grow", {random_input({4}, 741, -1, 1, false), random_input({4}, 742, -1, 1, false)}, scale_after,
           [](const RefInputs&) { return std::vector<double>{8.0}; }, kGradTolerance, trace},
          {"back_off", {random_input({4}, 743, -1, 1, false), {{4}, {kInf, 1.0f, 1.0f, 1.0f}, false}}, scale_after,
           [](const RefInputs&) { return std::vector<double>{2.0}; }, kGradTolerance, trace}};
}

}  // namespace
}  // namespace oa::test
