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

template <class Options>
struct StepCase {
  const char* label;
  Options o;
};

// The cases of optimizer step `op`: per labelled options, a [3, 5] parameter
// after `steps` steps of `Optimizer` (stepped) against as many steps of its
// f64 `Reference`, the inputs drawn from seeds seed, seed + 1, then on by 2.
template <class Optimizer, class Reference, class Options>
std::vector<OpCase> step_cases(const char* op, const std::vector<StepCase<Options>>& cs, std::uint64_t seed, int steps) {
  std::vector<OpCase> cases;
  for (const auto& c : cs) {
    const Options o = c.o;
    cases.push_back({c.label, {random_input({3, 5}, seed, -1, 1, false), random_input({3, 5}, seed + 1, -1, 1, false)},
                     [o, steps](const Inputs& x) { return stepped<Optimizer>(x, o, steps); },
                     [o, steps](const RefInputs& x) {
                       Reference r{o};
                       std::vector<double> p = x[0];
                       for (int s = 0; s < steps; ++s) r.step(p, x[1], o.lr);
                       return p;
                     },
                     kGradTolerance, step_trace(op, steps)});
    seed += 2;
  }
  return cases;
}

OA_OP_CASES(sgd_step, "oa::ml::optim::sgd_step") {
  const std::vector<StepCase<optim::SgdOptions>> cs = {{"plain", {0.1f}},
                                                       {"weight_decay", {0.1f, 0.0f, 0.0f, 0.01f}},
                                                       {"momentum", {0.1f, 0.9f, 0.1f, 0.01f}},
                                                       {"nesterov", {0.05f, 0.9f, 0.0f, 0.0f, true}}};
  return step_cases<optim::Sgd, oa::reference::SgdReference>("oa::ml::optim::sgd_step", cs, 701, 2);
}

// AdamW's cases, then Adam's (the same op with L2 decay).
OA_OP_CASES(adamw_step, "oa::ml::optim::adamw_step") {
  const std::vector<StepCase<optim::AdamWOptions>> cs = {
      {"default", {0.01f}}, {"no_decay", {0.01f, 0.8f, 0.99f, 1e-6f, 0.0f}}, {"amsgrad", {0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, true}}};
  auto cases = step_cases<optim::AdamW, oa::reference::AdamWReference>("oa::ml::optim::adamw_step", cs, 711, 3);
  const std::vector<StepCase<optim::AdamOptions>> l2 = {{"adam_l2", {0.01f, 0.9f, 0.999f, 1e-8f, 0.1f}},
                                                        {"adam_l2_amsgrad", {0.01f, 0.8f, 0.99f, 1e-6f, 0.05f, true}}};
  for (auto& c : step_cases<optim::Adam, oa::reference::AdamReference>("oa::ml::optim::adamw_step", l2, 717, 3)) cases.push_back(std::move(c));
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
