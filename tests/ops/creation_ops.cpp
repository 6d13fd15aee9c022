// Op table cases of Matrix creation and dtype casts (oa/matrix/matrix.hpp,
// oa/matrix/cast.hpp).
#include "ops/op_table.hpp"
#include "reference/dtype.hpp"
#include "reference/nn.hpp"

namespace oa::test {
namespace {

// Matrix::uniform: element i is the seed's Philox stream word i, scaled to [low, high).
OA_OP_CASES(random, "oa::matrix::random") {
  std::vector<OpCase> cases;
  for (std::uint64_t seed : {std::uint64_t{3}, std::uint64_t{0x123456789abcull}})
    cases.push_back({label("uniform_seed", seed % 1000), {},
                     [seed](const Inputs&) { return Matrix::uniform({5, 7}, -2.0f, 3.0f, seed); },
                     [seed](const RefInputs&) {
                       std::vector<double> y(35);
                       for (std::size_t i = 0; i < y.size(); ++i) y[i] = -2.0 + 5.0 * reference::philox_uniform(i, seed);
                       return y;
                     }});
  return cases;
}

GradInput of(DType dtype, std::uint64_t seed) {
  GradInput in = random_input({3, 33}, seed, -3, 3, false);
  in.dtype = dtype;
  return in;
}

std::vector<double> rounded(const reference::Float16Format& f, const std::vector<double>& x) {
  const std::vector<float> r = reference::rounded(f, {x.begin(), x.end()});
  return {r.begin(), r.end()};
}

// Narrowing rounds to nearest even, widening is exact. Forward only: leaves
// are f32, and a rounding has no finite-difference gradient to compare with.
OA_OP_CASES(cast, "oa::matrix::cast") {
  std::vector<OpCase> cases;
  cases.push_back({"f32_to_f16", {of(DType::F32, 801)}, [](const Inputs& x) { return oa::matrix::cast(x[0], DType::F16); },
                   [](const RefInputs& x) { return rounded(reference::kF16, x[0]); }});
  cases.push_back({"f32_to_bf16", {of(DType::F32, 802)}, [](const Inputs& x) { return oa::matrix::cast(x[0], DType::BF16); },
                   [](const RefInputs& x) { return rounded(reference::kBF16, x[0]); }});
  cases.push_back({"f16_to_bf16", {of(DType::F16, 803)}, [](const Inputs& x) { return oa::matrix::cast(x[0], DType::BF16); },
                   [](const RefInputs& x) { return rounded(reference::kBF16, x[0]); }});
  cases.push_back({"f16_to_f32", {of(DType::F16, 804)}, [](const Inputs& x) { return oa::matrix::cast(x[0], DType::F32); },
                   [](const RefInputs& x) { return x[0]; }});
  cases.push_back({"bf16_to_f32", {of(DType::BF16, 805)}, [](const Inputs& x) { return oa::matrix::cast(x[0], DType::F32); },
                   [](const RefInputs& x) { return x[0]; }});
  return cases;
}

}  // namespace
}  // namespace oa::test
