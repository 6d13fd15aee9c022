// Op table cases of the optimizer steps and gradient clipping
// (oa/ml/optim.hpp), which update their operands in place (no backward).
#include <cmath>

#include "ops/op_table.hpp"
#include "reference/optim.hpp"

namespace oa::test {
namespace {

using oa::ml::Parameter;
namespace optim = oa::ml::optim;

// The parameter (x[0]) after `steps` steps of `Optimizer` with gradient x[1]
// each step. The gradient is set as the one of sum(p * g) through an
// identity affine map (its backward gives exactly g), and is recorded so.
template <class Optimizer, class Options>
Matrix stepped(const Inputs& x, const Options& o, int steps) {
  const Parameter p("p", x[0]);
  Optimizer opt({p}, o);
  for (int s = 0; s < steps; ++s) {
    p.zero_grad();
    oa::backward(oa::matrix::affine(p.value(), 1.0f, 0.0f), x[1]);
    opt.step();
  }
  return p.value();
}

// What one step records: the gradient's affine map and its backward, then the update.
std::vector<std::string> step_trace(const char* op, int steps) {
  std::vector<std::string> labels;
  for (int s = 0; s < steps; ++s) labels.insert(labels.end(), {"oa::matrix::affine", "oa::matrix::affine backward", op});
  return labels;
}

OA_OP_CASES(sgd_step, "oa::ml::optim::sgd_step") {
  struct Case {
    const char* label;
    optim::SgdOptions o;
  };
  const std::vector<Case> cs = {{"plain", {0.1f}},
                                {"weight_decay", {0.1f, 0.0f, 0.0f, 0.01f}},
                                {"momentum", {0.1f, 0.9f, 0.1f, 0.01f}},
                                {"nesterov", {0.05f, 0.9f, 0.0f, 0.0f, true}}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 701;
  for (const auto& c : cs) {
    const optim::SgdOptions o = c.o;
    cases.push_back({c.label, {random_input({3, 5}, seed, -1, 1, false), random_input({3, 5}, seed + 1, -1, 1, false)},
                     [o](const Inputs& x) { return stepped<optim::Sgd>(x, o, 2); },
                     [o](const RefInputs& x) {
                       oa::reference::SgdReference r{o};
                       std::vector<double> p = x[0];
                       for (int s = 0; s < 2; ++s) r.step(p, x[1], o.lr);
                       return p;
                     },
                     kGradTolerance, step_trace("oa::ml::optim::sgd_step", 2)});
    seed += 2;
  }
  return cases;
}

OA_OP_CASES(adamw_step, "oa::ml::optim::adamw_step") {
  struct Case {
    const char* label;
    optim::AdamWOptions o;
  };
  const std::vector<Case> cs = {{"default", {0.01f}}, {"no_decay", {0.01f, 0.8f, 0.99f, 1e-6f, 0.0f}}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 711;
  for (const auto& c : cs) {
    const optim::AdamWOptions o = c.o;
    cases.push_back({c.label, {random_input({3, 5}, seed, -1, 1, false), random_input({3, 5}, seed + 1, -1, 1, false)},
                     [o](const Inputs& x) { return stepped<optim::AdamW>(x, o, 3); },
                     [o](const RefInputs& x) {
                       oa::reference::AdamWReference r{o};
                       std::vector<double> p = x[0];
                       for (int s = 0; s < 3; ++s) r.step(p, x[1], o.lr);
                       return p;
                     },
                     kGradTolerance, step_trace("oa::ml::optim::adamw_step", 3)});
    seed += 2;
  }
  return cases;
}

// The total L2 norm of the gradients (the op's result) and a gradient after
// clipping (scaled in place when the norm passes max_norm).
OA_OP_CASES(clip_grad_norm, "oa::ml::optim::clip_grad_norm") {
  auto total = [](const RefInputs& x) {
    double s = 0;
    for (const auto& g : x)
      for (double v : g) s += v * v;
    return std::sqrt(s);
  };
  std::vector<OpCase> cases;
  for (float max_norm : {0.5f, 100.0f}) {
    const std::string label = max_norm < 1 ? "clipped" : "unclipped";
    cases.push_back({label + "_norm", {random_input({3, 5}, 721, -1, 1, false), random_input({7}, 722, -1, 1, false)},
                     [max_norm](const Inputs& x) { return optim::clip_grad_norm(x, max_norm); },
                     [total](const RefInputs& x) { return std::vector<double>{total(x)}; }});
    cases.push_back({label + "_gradient", {random_input({3, 5}, 723, -1, 1, false), random_input({7}, 724, -1, 1, false)},
                     [max_norm](const Inputs& x) {
                       optim::clip_grad_norm(x, max_norm);
                       return x[1];
                     },
                     [total, max_norm](const RefInputs& x) {
                       const double scale = std::min(max_norm / (total(x) + 1e-6), 1.0);
                       std::vector<double> g = x[1];
                       for (auto& v : g) v *= scale;
                       return g;
                     }});
  }
  return cases;
}

}  // namespace
}  // namespace oa::test
