// Autocast (oa/matrix/autocast.hpp): the dtype each policy gives inside and
// outside a scope, nesting and disabling, the cast cache, gradients through
// the inserted casts by finite differences at 16-bit tolerance, and the table
// naming only registered ops.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::AutocastGuard;
using oa::AutocastPolicy;
using oa::DType;
using oa::Matrix;
using oa::Shape;
namespace mx = oa::matrix;
namespace ml = oa::ml;

Matrix values(const Shape& shape, std::uint32_t seed, DType dtype = DType::F32) {
  return Matrix::from_vector(shape, oa_test::random_values(shape.numel(), seed), dtype);
}

TEST(MatrixAutocast, TableNamesRegisteredOpsAndDefaultsToPromote) {
  for (const auto& [name, policy] : oa::autocast_table()) {
    EXPECT_NO_THROW(oa::contract(name)) << name;
    EXPECT_EQ(oa::autocast_policy(name), policy) << name;
  }
  EXPECT_EQ(oa::autocast_policy("oa::ml::linear"), AutocastPolicy::Lower);
  EXPECT_EQ(oa::autocast_policy("oa::ml::layer_norm"), AutocastPolicy::F32);
  EXPECT_EQ(oa::autocast_policy("oa::matrix::add"), AutocastPolicy::Promote);
  EXPECT_EQ(oa::autocast_policy("oa::matrix::cast"), AutocastPolicy::Keep);
}

TEST(MatrixAutocast, EachPolicyGivesItsDtypeInsideTheScopeOnly) {
  const Matrix x = values({4, 8}, 1), w = values({6, 8}, 2), b = values({6}, 3), gamma = Matrix::ones({8}), beta = Matrix::zeros({8});
  const Matrix h = values({4, 8}, 4, DType::F16);
  EXPECT_EQ(ml::linear(x, w, b).dtype(), DType::F32);
  EXPECT_EQ(oa::autocast_dtype(), std::nullopt);
  for (DType low : {DType::F16, DType::BF16}) {
    AutocastGuard guard(low);
    EXPECT_EQ(oa::autocast_dtype(), low);
    EXPECT_EQ(ml::linear(x, w, b).dtype(), low);  // Lower
    EXPECT_EQ(mx::matmul(x, mx::transpose(w)).dtype(), low);
    EXPECT_EQ(ml::bmm_nt(x.reshape({1, 4, 8}), w.reshape({1, 6, 8})).dtype(), low);
    EXPECT_EQ(ml::layer_norm(h, gamma, beta).dtype(), DType::F32);  // F32
    EXPECT_EQ(mx::sum(h).dtype(), DType::F32);
    EXPECT_EQ(mx::add(h, x).dtype(), DType::F32);  // Promote: widest
    EXPECT_EQ(mx::gelu(h).dtype(), DType::F16);    // Promote: a 16-bit lowering keeps the dtype
    EXPECT_EQ(ml::split_heads(h, 2, 2, 2).dtype(), DType::F16);
    EXPECT_EQ(mx::transpose(h).dtype(), DType::F16);  // Promote: a 16-bit lowering keeps the dtype
    EXPECT_EQ(mx::cast(x, DType::F16).dtype(), DType::F16);  // Keep
    const Matrix targets = Matrix::from_i32({4}, std::vector<std::int32_t>{0, 1, 2, 3});
    EXPECT_EQ(ml::cross_entropy(ml::linear(x, w, b), targets).dtype(), DType::F32);  // i32 targets untouched
  }
  EXPECT_EQ(oa::autocast_dtype(), std::nullopt);
  EXPECT_EQ(ml::linear(x, w, b).dtype(), DType::F32);
}

TEST(MatrixAutocast, ScopesNestAndDisable) {
  const Matrix x = values({2, 3}, 5), w = values({3, 3}, 6);
  AutocastGuard outer(DType::F16);
  {
    AutocastGuard inner(DType::BF16);
    EXPECT_EQ(mx::matmul(x, w).dtype(), DType::BF16);
    {
      AutocastGuard off(DType::F16, false);
      EXPECT_EQ(oa::autocast_dtype(), std::nullopt);
      EXPECT_EQ(mx::matmul(x, w).dtype(), DType::F32);
    }
    EXPECT_EQ(mx::matmul(x, w).dtype(), DType::BF16);
  }
  EXPECT_EQ(mx::matmul(x, w).dtype(), DType::F16);
  EXPECT_TRUE(oa_test::throws([] { AutocastGuard bad(DType::I32); }, oa::ErrorKind::InvalidArgument, {"oa::AutocastGuard", "i32"}));
}

TEST(MatrixAutocast, MatchesExplicitCastsBitForBit) {
  const Matrix x = values({5, 7}, 7), w = values({3, 7}, 8), b = values({3}, 9);
  const Matrix want = ml::linear(mx::cast(x, DType::F16), mx::cast(w, DType::F16), b);  // the bias stays f32
  AutocastGuard guard(DType::F16);
  EXPECT_EQ(ml::linear(x, w, b).to_vector(), want.to_vector());
}

TEST(MatrixAutocast, CachesTheCastOfALeafPerScopeAndVersion) {
  const Matrix x = values({2, 4}, 10);
  const Matrix w = values({4, 4}, 11);
  oa::set_requires_grad(w);
  auto casts = [&](const std::function<void()>& f) {
    oa::TraceCapture trace(x.engine());
    f();
    return oa_test::count_label(trace.ops(), "oa::matrix::cast");
  };
  {
    AutocastGuard guard(DType::F16);
    // x (no gradient: not cached) twice, w once.
    EXPECT_EQ(casts([&] {
      mx::matmul(x, w);
      mx::matmul(x, w);
    }), 3u);
    EXPECT_EQ(casts([&] { mx::matmul(x, w); }), 1u);
    {
      AutocastGuard nested(DType::BF16);
      EXPECT_EQ(casts([&] {
      mx::matmul(x, w);
      mx::matmul(x, w);
    }), 3u);  // a cache per dtype
    }
    w.storage()->bump_version();  // as an optimizer step does
    EXPECT_EQ(casts([&] { mx::matmul(x, w); }), 2u);
  }
  AutocastGuard again(DType::F16);
  EXPECT_EQ(casts([&] { mx::matmul(x, w); }), 2u);  // the scope that cached it has ended
}

TEST(MatrixAutocast, GradientsFlowThroughTheCastsInTheLeafDtype) {
  using namespace oa::test::gradcheck_names;
  const oa::test::GradTolerance tol{.forward_rtol = 1e-2, .forward_atol = 4e-3, .grad_rtol = 2e-2, .grad_atol = 4e-3};
  for (DType low : {DType::F16, DType::BF16}) {
    const double scale = low == DType::F16 ? 1.0 : 8.0;  // bf16 keeps 8 significant bits to f16's 11
    oa::test::GradTolerance t = tol;
    t.forward_rtol *= scale, t.forward_atol *= scale, t.grad_rtol *= scale, t.grad_atol *= scale;
    // tanh(x W^T + b) summed over a layer norm: Lower (linear), Promote (a 16-bit tanh), F32 (layer_norm).
    const Matrix out = gradcheck(
        {random_input({3, 6}, 1), random_input({4, 6}, 2), random_input({4}, 3)},
        [low](const std::vector<Matrix>& in) {
          AutocastGuard guard(low);
          const Matrix y = mx::tanh(ml::linear(in[0], in[1], in[2]));
          EXPECT_EQ(y.dtype(), low);
          return ml::layer_norm(y, Matrix(), Matrix());
        },
        [](const Inputs& in) {
          Vec y(12);
          for (int r = 0; r < 3; ++r) {
            double mean = 0, var = 0;
            for (int o = 0; o < 4; ++o) {
              double s = in[2][o];
              for (int k = 0; k < 6; ++k) s += in[0][r * 6 + k] * in[1][o * 6 + k];
              y[r * 4 + o] = std::tanh(s);
              mean += y[r * 4 + o] / 4;
            }
            for (int o = 0; o < 4; ++o) var += (y[r * 4 + o] - mean) * (y[r * 4 + o] - mean) / 4;
            for (int o = 0; o < 4; ++o) y[r * 4 + o] = (y[r * 4 + o] - mean) / std::sqrt(var + 1e-5);
          }
          return y;
        },
        7, t);
    EXPECT_EQ(out.dtype(), DType::F32);
  }
}

TEST(MatrixAutocast, BackwardRunsOutsideTheScopeAndLeavesGetF32Gradients) {
  const Matrix x = values({3, 5}, 12), w = values({2, 5}, 13);
  oa::set_requires_grad(w);
  AutocastGuard guard(DType::BF16);
  const Matrix loss = mx::sum_all(ml::linear(x, w));
  EXPECT_EQ(loss.dtype(), DType::F32);
  std::optional<DType> during = DType::F16;
  oa::register_grad_ready_hook(w, [&](const Matrix&) { during = oa::autocast_dtype(); });
  oa::backward(loss);
  EXPECT_EQ(during, std::nullopt);
  EXPECT_EQ(oa::grad(w).dtype(), DType::F32);
  EXPECT_EQ(oa::autocast_dtype(), DType::BF16);
}

}  // namespace
