// Op table cases of the recurrent cells (oa/ml/rnn.hpp).
#include "ops/op_table.hpp"
#include "oa/ml/rnn.hpp"
#include "reference/rnn.hpp"

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

}  // namespace
}  // namespace oa::test
