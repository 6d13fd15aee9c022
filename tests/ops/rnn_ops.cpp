// Op table cases of the recurrent cells and layers (oa/ml/rnn.hpp).
#include "ops/op_table.hpp"
#include "oa/ml/rnn.hpp"
#include "reference/rnn.hpp"

#include <string>

namespace oa::test {
namespace {

// Gate pre-activations in [-3, 3] reach the saturating parts of sigmoid and tanh.
OA_OP_CASES(lstm_cell, "oa::ml::lstm_cell") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 901;
  for (const auto& [B, H] : {std::pair<std::int64_t, std::int64_t>{2, 3}, {3, 17}}) {
    const std::vector<GradInput> inputs = {random_input({B, 4 * H}, seed, -3, 3), random_input({B, 4 * H}, seed + 1, -3, 3),
                                           random_input({B, H}, seed + 2, -2, 2)};
    const std::int64_t h = H;
    cases.push_back({label("h_H", H), inputs, [](const Inputs& x) { return oa::ml::lstm_cell(x[0], x[1], x[2]).first; },
                     [h](const RefInputs& x) { return reference::lstm_cell(x[0], x[1], x[2], h).first; }});
    cases.push_back({label("c_H", H), inputs, [](const Inputs& x) { return oa::ml::lstm_cell(x[0], x[1], x[2]).second; },
                     [h](const RefInputs& x) { return reference::lstm_cell(x[0], x[1], x[2], h).second; }});
    seed += 3;
  }
  // One summed gates operand; then two steps, so that c's gradient flows into the first step's.
  const std::int64_t B = 2, H = 5;
  cases.push_back({"summed_gates", {random_input({B, 4 * H}, 911, -3, 3), random_input({B, H}, 912, -2, 2)},
                   [](const Inputs& x) { return oa::ml::lstm_cell(x[0], Matrix(), x[1]).first; },
                   [H = H](const RefInputs& x) { return reference::lstm_cell(x[0], {}, x[1], H).first; }});
  cases.push_back({"two_steps",
                   {random_input({B, 4 * H}, 913, -3, 3), random_input({B, 4 * H}, 914, -3, 3), random_input({B, H}, 915, -2, 2),
                    random_input({B, 4 * H}, 916, -3, 3)},
                   [](const Inputs& x) {
                     const auto [h1, c1] = oa::ml::lstm_cell(x[0], x[1], x[2]);
                     return oa::ml::lstm_cell(x[3], Matrix(), c1).first;
                   },
                   [H = H](const RefInputs& x) {
                     const auto first = reference::lstm_cell(x[0], x[1], x[2], H);
                     return reference::lstm_cell(x[3], {}, first.second, H).first;
                   },
                   kGradTolerance,
                   {"oa::ml::lstm_cell", "oa::ml::lstm_cell"}});
  return cases;
}

OA_OP_CASES(gru_cell, "oa::ml::gru_cell") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 921;
  for (const auto& [B, H] : {std::pair<std::int64_t, std::int64_t>{2, 3}, {3, 17}}) {
    const std::int64_t h = H;
    cases.push_back({label("H", H),
                     {random_input({B, 3 * H}, seed, -3, 3), random_input({B, 3 * H}, seed + 1, -3, 3), random_input({B, H}, seed + 2, -2, 2)},
                     [](const Inputs& x) { return oa::ml::gru_cell(x[0], x[1], x[2]); },
                     [h](const RefInputs& x) { return reference::gru_cell(x[0], x[1], x[2], h); }});
    seed += 3;
  }
  // h_prev feeds both the recurrent gates and the blend: only h_prev and gx need gradients.
  const std::int64_t B = 2, H = 4;
  cases.push_back({"detached_gh",
                   {random_input({B, 3 * H}, 931, -3, 3), random_input({B, 3 * H}, 932, -3, 3, false), random_input({B, H}, 933, -2, 2)},
                   [](const Inputs& x) { return oa::ml::gru_cell(x[0], x[1], x[2]); },
                   [H = H](const RefInputs& x) { return reference::gru_cell(x[0], x[1], x[2], H); }});
  return cases;
}

// A layer case's steps, batch, hidden size and whether it has a recurrent bias.
struct LayerShape {
  std::int64_t T, B, H;
  bool bias;
};

// "T3_B2_H3", "_nobias" appended without a bias.
std::string shape_tag(std::int64_t T, std::int64_t B, std::int64_t H, bool bias) {
  return label("T", T) + label("_B", B) + label("_H", H) + (bias ? "" : "_nobias");
}

// A layer case's operands from consecutive seeds: gates_x [T, B, G H],
// weight_hh [G H, H], bias_hh [G H] (left out without a bias; its seed stays
// taken) and `states` initial states [B, H].
std::vector<GradInput> layer_inputs(const LayerShape& s, std::int64_t G, int states, std::uint64_t seed) {
  std::vector<GradInput> in = {random_input({s.T, s.B, G * s.H}, seed, -2, 2), random_input({G * s.H, s.H}, seed + 1, -0.7, 0.7)};
  if (s.bias) in.push_back(random_input({G * s.H}, seed + 2, -0.5, 0.5));
  for (int k = 0; k < states; ++k) in.push_back(random_input({s.B, s.H}, seed + 3 + static_cast<std::uint64_t>(k), -1, 1));
  return in;
}

// Layers over a sequence: T = 1 and several steps; B = 17 (past the skinny GEMM's 16 rows) and 65; H = 4 (vec4
// operands); no bias; the gradient of every operand, weight_hh's summed over the steps.
OA_OP_CASES(lstm_layer, "oa::ml::lstm_layer") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 941;
  for (const LayerShape& shape : {LayerShape{3, 2, 3, true}, {1, 2, 2, true}, {2, 17, 2, false}, {2, 3, 4, true}, {2, 65, 2, true}}) {
    const std::int64_t T = shape.T, B = shape.B, H = shape.H;
    const bool bias = shape.bias;
    const std::vector<GradInput> inputs = layer_inputs(shape, 4, 2, seed);
    seed += 5;
    const std::string tag = shape_tag(T, B, H, bias);
    for (const bool cell : {false, true}) {
      cases.push_back({(cell ? "c_" : "out_") + tag, inputs,
                       [bias, cell](const Inputs& x) {
                         const auto r = bias ? oa::ml::lstm_layer(x[0], x[1], x[2], x[3], x[4]) : oa::ml::lstm_layer(x[0], x[1], Matrix(), x[2], x[3]);
                         return cell ? r.second : r.first;
                       },
                       [=](const RefInputs& x) {
                         const std::size_t s = bias ? 3 : 2;
                         const auto r = reference::recurrence(true, x[0], x[1], bias ? x[2] : std::vector<double>{}, x[s], x[s + 1], T, B, H);
                         return cell ? r[2] : r[0];
                       }});
    }
  }
  // Only some operands need gradients: weight_hh and h0 are constants.
  cases.push_back({"constant_weight_and_h0",
                   {random_input({2, 3, 8}, 991, -2, 2), random_input({8, 2}, 992, -0.7, 0.7, false), random_input({8}, 993, -0.5, 0.5),
                    random_input({3, 2}, 994, -1, 1, false), random_input({3, 2}, 995, -1, 1)},
                   [](const Inputs& x) { return oa::ml::lstm_layer(x[0], x[1], x[2], x[3], x[4]).first; },
                   [](const RefInputs& x) { return reference::recurrence(true, x[0], x[1], x[2], x[3], x[4], 2, 3, 2)[0]; }});
  return cases;
}

OA_OP_CASES(gru_layer, "oa::ml::gru_layer") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 961;
  for (const LayerShape& shape : {LayerShape{3, 2, 3, true}, {1, 3, 2, true}, {2, 17, 2, false}, {2, 3, 4, true}, {2, 65, 2, true}}) {
    const std::int64_t T = shape.T, B = shape.B, H = shape.H;
    const bool bias = shape.bias;
    const std::vector<GradInput> inputs = layer_inputs(shape, 3, 1, seed);
    seed += 4;
    cases.push_back({shape_tag(T, B, H, bias), inputs,
                     [bias](const Inputs& x) {
                       return bias ? oa::ml::gru_layer(x[0], x[1], x[2], x[3]) : oa::ml::gru_layer(x[0], x[1], Matrix(), x[2]);
                     },
                     [=](const RefInputs& x) {
                       return reference::recurrence(false, x[0], x[1], bias ? x[2] : std::vector<double>{}, x[bias ? 3 : 2], {}, T, B, H)[0];
                     }});
  }
  // gates_x is a constant: only the recurrent operands need gradients.
  cases.push_back({"constant_gates_x",
                   {random_input({2, 3, 6}, 981, -2, 2, false), random_input({6, 2}, 982, -0.7, 0.7), random_input({6}, 983, -0.5, 0.5),
                    random_input({3, 2}, 984, -1, 1)},
                   [](const Inputs& x) { return oa::ml::gru_layer(x[0], x[1], x[2], x[3]); },
                   [](const RefInputs& x) { return reference::recurrence(false, x[0], x[1], x[2], x[3], {}, 2, 3, 2)[0]; }});
  return cases;
}

}  // namespace
}  // namespace oa::test
