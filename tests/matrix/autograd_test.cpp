// The autograd tape: graph shapes, accumulation, release, guards, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>

#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::ErrorKind;
using namespace oa::test::gradcheck_names;

using oa_test::count_label;

TEST(AutogradTape, SharedSubexpression) {
  // y = exp(x) feeds both operands of y * y and the final add.
  gradcheck(
      {random_input({6, 5}, 1)},
      [](const std::vector<Matrix>& x) {
        auto y = oa::matrix::exp(x[0]);
        return y * y + y;
      },
      [](const Inputs& x) {
        Vec r(x[0].size());
        for (std::size_t i = 0; i < r.size(); ++i) {
          const double y = std::exp(x[0][i]);
          r[i] = y * y + y;
        }
        return r;
      });
}

// The hook sees a leaf's complete gradient of this backward as soon as the
// last Node feeding it has run, before the Nodes nearer the inputs.
TEST(AutogradTape, GradReadyHooksFireWhenALeafIsComplete) {
  Matrix x = oa::set_requires_grad(Matrix::from_vector({3}, std::vector<float>{1, 2, 3}));
  Matrix w = oa::set_requires_grad(Matrix::from_vector({3}, std::vector<float>{4, 5, 6}));
  Matrix v = oa::set_requires_grad(Matrix::from_vector({3}, std::vector<float>{-1, 1, 2}));
  std::vector<std::string> seen;
  std::vector<float> w_grad;
  const auto hw = oa::register_grad_ready_hook(w, [&](const Matrix& g) {
    seen.push_back("w");
    w_grad = g.to_vector();
    EXPECT_FALSE(oa::grad(w).defined());  // added into grad(w) at the end of backward
  });
  oa::register_grad_ready_hook(x, [&](const Matrix&) { seen.push_back("x"); });
  // v is used twice: its gradient is complete only after both uses.
  oa::register_grad_ready_hook(v, [&](const Matrix& g) {
    seen.push_back("v");
    EXPECT_EQ(g.to_vector(), (std::vector<float>{15, 21, 29}));
  });
  auto loss = [&] { return oa::matrix::sum_all((x * v) * w + v * 11.0f); };
  oa::backward(loss());
  EXPECT_EQ(seen, (std::vector<std::string>{"w", "x", "v"}));
  EXPECT_EQ(w_grad, (std::vector<float>{-1, 2, 6}));
  EXPECT_EQ(oa::grad(w).to_vector(), w_grad);

  oa::remove_grad_ready_hook(w, hw);
  seen.clear();
  oa::backward(loss());
  EXPECT_EQ(seen, (std::vector<std::string>{"x", "v"}));
  EXPECT_EQ(oa::grad(w).to_vector(), (std::vector<float>{-2, 4, 12}));

  oa::set_grad(w, Matrix::ones({3}));
  EXPECT_EQ(oa::grad(w).to_vector(), (std::vector<float>{1, 1, 1}));
  EXPECT_TRUE(oa_test::throws([&] { oa::set_grad(w, Matrix::ones({2})); }, ErrorKind::InvalidArgument, {"oa::set_grad", "[2]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::register_grad_ready_hook(x * 2.0f, [](const Matrix&) {}); }, ErrorKind::InvalidArgument,
                              {"oa::register_grad_ready_hook", "computed by"}));
}

TEST(AutogradTape, DiamondGraph) {
  // a = 2x + 1 fans out to tanh(a) and sigmoid(a), which meet again in a product.
  gradcheck(
      {random_input({3, 7}, 2)},
      [](const std::vector<Matrix>& x) {
        auto a = oa::matrix::affine(x[0], 2.0f, 1.0f);
        return oa::matrix::tanh(a) * oa::matrix::sigmoid(a);
      },
      [](const Inputs& x) {
        Vec r(x[0].size());
        for (std::size_t i = 0; i < r.size(); ++i) {
          const double a = 2 * x[0][i] + 1;
          r[i] = std::tanh(a) / (1 + std::exp(-a));
        }
        return r;
      });
}

TEST(AutogradTape, LeafUsedTwiceInOneOp) {
  gradcheck(
      {random_input({5}, 3)}, [](const std::vector<Matrix>& x) { return x[0] * x[0]; },
      [](const Inputs& x) {
        Vec r(x[0].size());
        for (std::size_t i = 0; i < r.size(); ++i) r[i] = x[0][i] * x[0][i];
        return r;
      });
}

TEST(AutogradTape, SeveralInputsAndAConstant) {
  // The constant c gets no gradient; x and w do.
  gradcheck(
      {random_input({4, 3}, 4), random_input({4, 3}, 5), random_input({4, 3}, 6, -1, 1, false)},
      [](const std::vector<Matrix>& v) { return oa::matrix::relu(v[0] * v[1] - v[2]) / (oa::matrix::square(v[1]) + 1.0f); },
      [](const Inputs& v) {
        Vec r(v[0].size());
        for (std::size_t i = 0; i < r.size(); ++i) r[i] = std::max(0.0, v[0][i] * v[1][i] - v[2][i]) / (v[1][i] * v[1][i] + 1);
        return r;
      });
}

TEST(AutogradTape, AccumulatesInPlaceAfterTheSecondContribution) {
  auto x = oa::set_requires_grad(Matrix::uniform({5}, -1, 1, 9));
  auto out = ((oa::matrix::affine(x, 2, 0) + oa::matrix::exp(x)) + oa::matrix::tanh(x)) + oa::matrix::sigmoid(x);
  oa::TraceCapture t(x.engine());
  oa::backward(out, Matrix::ones({5}));
  auto ops = t.ops();
  // Four contributions reach x: the first is adopted, the second allocates the
  // sum once, the third and fourth are added in place.
  EXPECT_EQ(count_label(ops, "oa::matrix::add"), 1u);
  EXPECT_EQ(count_label(ops, "oa::autograd::accumulate"), 2u);
  EXPECT_EQ(count_label(ops, "oa::matrix::affine backward"), 1u);
  EXPECT_EQ(count_label(ops, "oa::matrix::exp backward"), 1u);
  EXPECT_EQ(count_label(ops, "oa::matrix::tanh backward"), 1u);
  EXPECT_EQ(count_label(ops, "oa::matrix::sigmoid backward"), 1u);
  EXPECT_EQ(ops.size(), 7u);
  auto xv = x.to_vector();
  auto g = oa::grad(x).to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double v = xv[i], s = 1 / (1 + std::exp(-v)), th = std::tanh(v);
    EXPECT_NEAR(g[i], 2 + std::exp(v) + (1 - th * th) + s * (1 - s), 1e-5);
  }
}

TEST(AutogradTape, InPlaceAccumulationAllocatesNothing) {
  // A leaf gradient that owns its buffer takes further backward calls in place.
  auto x = oa::set_requires_grad(Matrix::uniform({64}, -1, 1, 9));
  auto y = oa::matrix::exp(x) + oa::matrix::tanh(x);  // two contributions: x's gradient owns its buffer
  oa::backward(y, Matrix::ones({64}), true);
  const auto first = oa::grad(x);
  oa::backward(y, Matrix::ones({64}), true);
  EXPECT_TRUE(oa::grad(x).storage() == first.storage());  // added in place
  oa::backward(y, Matrix::ones({64}), true);
  EXPECT_TRUE(oa::grad(x).storage() == first.storage());
  auto xv = x.to_vector();
  auto g = oa::grad(x).to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double th = std::tanh(xv[i]);
    EXPECT_NEAR(g[i], 3 * (std::exp(xv[i]) + 1 - th * th), 3e-5);
  }
}

TEST(AutogradTape, InPlaceAccumulationCoversEveryElement) {
  // Sizes below one quad, with a tail after whole quads, and past one workgroup
  // (4096 elements): every element of y += x, the tail included.
  for (std::int64_t n : {3, 4101, 70001}) {
    SCOPED_TRACE(n);
    auto x = oa::set_requires_grad(Matrix::uniform({n}, -1, 1, 11));
    const Matrix g1 = Matrix::uniform({n}, -1, 1, 12), g2 = Matrix::uniform({n}, -1, 1, 13);
    auto y = oa::matrix::exp(x) + oa::matrix::tanh(x);  // two contributions: the gradient owns its buffer
    oa::backward(y, g1, true);
    oa::TraceCapture t(x.engine());
    oa::backward(oa::matrix::affine(x, 2, 0), g2);
    EXPECT_EQ(count_label(t.ops(), "oa::autograd::accumulate"), 1u);
    const auto xv = x.to_vector(), a = g1.to_vector(), b = g2.to_vector(), g = oa::grad(x).to_vector();
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double th = std::tanh(xv[i]);
      ASSERT_NEAR(g[i], a[i] * (std::exp(xv[i]) + 1 - th * th) + 2 * b[i], 3e-5) << i;
    }
  }
}

TEST(AutogradTape, LeavesNeverShareGradientBuffers) {
  auto a = oa::set_requires_grad(Matrix::uniform({3, 4}, -1, 1, 1));
  auto b = oa::set_requires_grad(Matrix::uniform({3, 4}, -1, 1, 2));
  auto gy = Matrix::uniform({3, 4}, -1, 1, 3);
  oa::backward(a + b, gy);
  EXPECT_FALSE(oa::grad(a).storage() == gy.storage());
  EXPECT_FALSE(oa::grad(b).storage() == gy.storage());
  EXPECT_FALSE(oa::grad(a).storage() == oa::grad(b).storage());
  EXPECT_EQ(oa::grad(a).to_vector(), gy.to_vector());
  EXPECT_EQ(oa::grad(b).to_vector(), gy.to_vector());
}

TEST(AutogradTape, ScalarLossSeedsWithOne) {
  auto x = oa::set_requires_grad(Matrix::from_vector({1}, std::vector<float>{0.5f}));
  auto loss = oa::matrix::square(x) * 3.0f;
  oa::backward(loss);
  EXPECT_NEAR(oa::grad(x).item(), 3.0f, 1e-6);
  // A rank-0 loss and a leaf as its own loss.
  auto s = oa::set_requires_grad(Matrix::full({}, 2.0f));
  oa::backward(s);
  EXPECT_EQ(oa::grad(s).item(), 1.0f);
}

TEST(AutogradTape, GradientsAccumulateAcrossBackwardCallsUntilZeroGrad) {
  auto x = oa::set_requires_grad(Matrix::from_vector({2}, std::vector<float>{1, 2}));
  oa::backward(x * 3.0f, Matrix::ones({2}));
  oa::backward(x * 3.0f, Matrix::ones({2}));
  EXPECT_EQ(oa::grad(x).to_vector(), (std::vector<float>{6, 6}));
  oa::zero_grad(x);
  EXPECT_FALSE(oa::grad(x).defined());
  oa::backward(x * 2.0f, Matrix::ones({2}));
  EXPECT_EQ(oa::grad(x).to_vector(), (std::vector<float>{2, 2}));
}

TEST(AutogradTape, MultipleOutputsOfTheGraphAndUnusedBranches) {
  // Only the part of the graph reachable from the output runs.
  auto x = oa::set_requires_grad(Matrix::uniform({4}, -1, 1, 5));
  auto used = oa::matrix::tanh(x);
  auto unused = oa::matrix::exp(x);
  oa::TraceCapture t(x.engine());
  oa::backward(used, Matrix::ones({4}));
  auto ops = t.ops();
  EXPECT_EQ(count_label(ops, "oa::matrix::exp backward"), 0u);
  EXPECT_EQ(count_label(ops, "oa::matrix::tanh backward"), 1u);
  EXPECT_TRUE(oa::requires_grad(unused));
}

TEST(AutogradTape, NoGradGuardRecordsNothing) {
  auto x = oa::set_requires_grad(Matrix::uniform({3}, -1, 1, 1));
  EXPECT_TRUE(oa::grad_enabled());
  {
    oa::NoGradGuard guard;
    EXPECT_FALSE(oa::grad_enabled());
    {
      oa::NoGradGuard nested;
      EXPECT_FALSE(oa::grad_enabled());
    }
    EXPECT_FALSE(oa::grad_enabled());
    auto y = x * x;
    EXPECT_FALSE(oa::requires_grad(y));
    EXPECT_EQ(oa::autograd::grad_fn_name(y), "");
    EXPECT_TRUE(oa::requires_grad(x));  // the leaf keeps its flag
    EXPECT_TRUE(oa_test::throws([&] { oa::backward(y, Matrix::ones({3})); }, ErrorKind::FailedPrecondition,
                                {"oa::backward", "does not require grad"}));
  }
  EXPECT_TRUE(oa::grad_enabled());
  EXPECT_EQ(oa::autograd::grad_fn_name(x * x), "oa::matrix::mul");
}

TEST(AutogradTape, SetGradEnabledRecordsAgainInsideANoGradGuard) {
  auto x = oa::set_requires_grad(Matrix::uniform({3}, -1, 1, 1));
  {
    oa::NoGradGuard guard;
    oa::set_grad_enabled(true);  // torch.enable_grad() inside torch.no_grad()
    EXPECT_EQ(oa::autograd::grad_fn_name(x * x), "oa::matrix::mul");
    oa::set_grad_enabled(false);
    EXPECT_EQ(oa::autograd::grad_fn_name(x * x), "");
  }
  EXPECT_TRUE(oa::grad_enabled());  // the guard restores the mode it found
}

TEST(AutogradTape, NoGradGuardIsPerThread) {
  oa::NoGradGuard guard;
  bool other = false;
  std::thread([&] { other = oa::grad_enabled(); }).join();
  EXPECT_TRUE(other);
  EXPECT_FALSE(oa::grad_enabled());
}

TEST(AutogradTape, DetachCutsTheGraph) {
  auto x = oa::set_requires_grad(Matrix::from_vector({3}, std::vector<float>{1, 2, 3}));
  auto y = x * x;
  auto d = oa::detach(y);
  EXPECT_FALSE(oa::requires_grad(d));
  EXPECT_TRUE(d.storage() == y.storage());  // same values, no copy
  EXPECT_EQ(oa::autograd::grad_fn_name(d), "");
  auto z = d * x;  // d acts as a constant: dz/dx = d = x^2, not 3 x^2
  oa::backward(z, Matrix::ones({3}));
  EXPECT_EQ(oa::grad(x).to_vector(), (std::vector<float>{1, 4, 9}));
  EXPECT_TRUE(oa::requires_grad(y));  // the original keeps its history
}

TEST(AutogradTape, SecondBackwardWithoutRetainGraphFails) {
  auto x = oa::set_requires_grad(Matrix::uniform({4}, 0.5f, 1, 1));
  auto y = oa::matrix::log(x) * x;
  oa::backward(y, Matrix::ones({4}));
  const auto g1 = oa::grad(x).to_vector();
  oa::TraceCapture t(x.engine());
  EXPECT_TRUE(oa_test::throws([&] { oa::backward(y, Matrix::ones({4})); }, ErrorKind::FailedPrecondition,
                              {"oa::backward", "oa::matrix::mul", "already released", "retain_graph"}));
  EXPECT_TRUE(t.ops().empty());            // detected before any work was recorded
  EXPECT_EQ(oa::grad(x).to_vector(), g1);  // and the gradient is unchanged
}

TEST(AutogradTape, SecondBackwardWithRetainGraphWorks) {
  auto x = oa::set_requires_grad(Matrix::uniform({4}, 0.5f, 1, 1));
  auto y = oa::matrix::log(x) * x;
  oa::backward(y, Matrix::ones({4}), /*retain_graph=*/true);
  const auto g1 = oa::grad(x).to_vector();
  oa::backward(y, Matrix::ones({4}));  // allowed; releases the graph now
  const auto g2 = oa::grad(x).to_vector();
  for (std::size_t i = 0; i < g1.size(); ++i) EXPECT_NEAR(g2[i], 2 * g1[i], 1e-5);
  EXPECT_TRUE(oa_test::throws([&] { oa::backward(y, Matrix::ones({4})); }, ErrorKind::FailedPrecondition, {"already released"}));
}

TEST(AutogradTape, ModifiedSavedValueFails) {
  auto x = oa::set_requires_grad(Matrix::uniform({2, 3}, -1, 1, 1));
  auto w = Matrix::uniform({2, 3}, -1, 1, 2);
  auto y = x * w;  // saves w
  w.write(std::vector<float>(6, 0.0f));
  EXPECT_TRUE(oa_test::throws(
      [&] {
        oa::backward(y, Matrix::ones({2, 3}));
      },
      ErrorKind::FailedPrecondition,
      {"oa::backward", "oa::matrix::mul", "a value of shape [2, 3]", "modified in place", "version 0 when saved, 1 now"}));
  EXPECT_FALSE(oa::grad(x).defined());  // no leaf gradient changes on an error
}

TEST(AutogradTape, BackwardArgumentErrors) {
  auto x = oa::set_requires_grad(Matrix::uniform({2, 3}, -1, 1, 1));
  auto y = oa::matrix::exp(x);
  EXPECT_TRUE(
      oa_test::throws([&] { oa::backward(y); }, ErrorKind::InvalidArgument, {"oa::backward", "[2, 3]", "output_gradient"}));
  EXPECT_TRUE(oa_test::throws(
      [&] {
        oa::backward(y, Matrix::ones({3, 2}));
      },
      ErrorKind::InvalidArgument, {"oa::backward", "[3, 2]", "[2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::backward(Matrix()); }, ErrorKind::InvalidArgument, {"oa::backward", "undefined"}));
  EXPECT_TRUE(
      oa_test::throws([&] { oa::backward(Matrix::ones({1})); }, ErrorKind::FailedPrecondition, {"does not require grad"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::set_requires_grad(y, false); }, ErrorKind::InvalidArgument,
                              {"oa::set_requires_grad", "oa::matrix::exp"}));
  EXPECT_TRUE(oa_test::throws(
      [&] {
        oa::set_requires_grad(Matrix::from_i32({2}, std::vector<std::int32_t>{1, 2}));
      },
      ErrorKind::InvalidArgument, {"oa::set_requires_grad", "f32"}));
  oa::set_requires_grad(y);  // a value with history already requires grad: no change
  EXPECT_EQ(oa::autograd::grad_fn_name(y), "oa::matrix::exp");
  auto leaf = oa::set_requires_grad(Matrix::ones({2}));
  oa::set_requires_grad(leaf, false);
  EXPECT_FALSE(oa::requires_grad(leaf));
}

// A 16-bit leaf requires grad and gets its gradient in its dtype; backward
// starts from a 16-bit loss (seeded with 1 of its dtype) or an output with an
// f32 output_gradient (cast to the output's dtype, as torch's engine does).
TEST(AutogradTape, SixteenBitLeavesAndLosses) {
  for (oa::DType d : {oa::DType::F16, oa::DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const Matrix x = oa::set_requires_grad(Matrix::from_vector({3}, std::vector<float>{1, -2, 0.5f}, d));
    const Matrix loss = oa::matrix::sum(x * x, {});
    EXPECT_EQ(loss.dtype(), d);
    oa::backward(loss);
    EXPECT_EQ(oa::grad(x).dtype(), d);
    EXPECT_EQ(oa::grad(x).to_vector(), (std::vector<float>{2, -4, 1}));  // 2x, exact in 16 bits
    oa::zero_grad(x);
    oa::backward(x * 3.0f, Matrix::from_vector({3}, std::vector<float>{1, 2, -1}));
    EXPECT_EQ(oa::grad(x).dtype(), d);
    EXPECT_EQ(oa::grad(x).to_vector(), (std::vector<float>{3, 6, -3}));
  }
  EXPECT_TRUE(oa_test::throws([] { oa::backward(oa::set_requires_grad(Matrix::ones({1})), Matrix::from_i32({1}, std::vector<std::int32_t>{1})); },
                              ErrorKind::InvalidArgument, {"oa::backward", "output_gradient", "i32"}));
}

TEST(AutogradTape, GraphIsFreedWithItsOutputs) {
  auto e = oa::Engine::default_engine();
  auto x = oa::set_requires_grad(Matrix::uniform({256}, -1, 1, 1));
  e.synchronize();
  const auto before = e.memory_stats().live_storages;
  {
    auto y = oa::matrix::tanh(oa::matrix::exp(x) * x);  // saves exp(x), x, and tanh's output
    e.synchronize();
    EXPECT_GT(e.memory_stats().live_storages, before);
  }
  e.synchronize();
  EXPECT_EQ(e.memory_stats().live_storages, before);
}

TEST(AutogradTape, BackwardReleasesSavedValuesUnlessRetained) {
  auto e = oa::Engine::default_engine();
  auto x = oa::set_requires_grad(Matrix::uniform({256}, -1, 1, 1));
  for (bool retain : {true, false}) {
    SCOPED_TRACE(retain ? "retain_graph" : "release");
    // exp(x) is referenced only by exp's Node, which saved it for its backward.
    auto y = oa::matrix::tanh(oa::matrix::exp(x));
    e.synchronize();
    const auto before = e.memory_stats().live_storages;
    oa::backward(y, Matrix::ones({256}), retain);
    oa::zero_grad(x);
    e.synchronize();
    EXPECT_EQ(e.memory_stats().live_storages, retain ? before : before - 1);
  }
}

}  // namespace

namespace {

TEST(AutogradTape, LongChainsBackwardAndFreeWithoutRecursion) {
  // Reshape records a Node but no GPU work: a cheap way to build a deep graph.
  auto x = oa::set_requires_grad(Matrix::ones({2, 3}));
  {
    Matrix y = x;
    for (int i = 0; i < 200000; ++i) y = y.reshape(i % 2 ? std::vector<std::int64_t>{2, 3} : std::vector<std::int64_t>{3, 2});
    oa::backward(y, Matrix::full(y.shape(), 2.0f));
  }
  EXPECT_EQ(oa::grad(x).to_vector(), std::vector<float>(6, 2.0f));
}

}  // namespace
