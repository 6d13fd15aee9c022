// Gradients of the matrix products, transpose, reductions and sum_to, and of
// broadcast elementwise operands, by finite differences on f64 references.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using namespace oa::test::gradcheck_names;

using oa_test::count_label;

// f64 reference of a [.., M, K] x op(b) with op(b) = b [.., K, N] or b^T for
// b [.., N, K]; a 2-D operand is shared by the batch.
Vec product_ref(const Vec& a, const Vec& b, std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n, bool a_batched,
                bool b_batched, bool trans_b) {
  Vec c(static_cast<std::size_t>(batch * m * n), 0.0);
  for (std::int64_t t = 0; t < batch; ++t)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t q = 0; q < k; ++q) {
          const double x = a[(a_batched ? t * m * k : 0) + i * k + q];
          const double y = b[(b_batched ? t * k * n : 0) + (trans_b ? j * k + q : q * n + j)];
          s += x * y;
        }
        c[(t * m + i) * n + j] = s;
      }
  return c;
}

struct ProductCase {
  Shape a, b;
};

void check_product(bool trans_b, const ProductCase& c, std::uint64_t seed) {
  const std::int64_t m = c.a.dim(-2), k = c.a.dim(-1), n = trans_b ? c.b.dim(-2) : c.b.dim(-1);
  const bool a_batched = c.a.rank() > 2, b_batched = c.b.rank() > 2;
  const std::int64_t batch = a_batched ? c.a.numel() / (m * k) : b_batched ? c.b.numel() / (k * n) : 1;
  SCOPED_TRACE(std::string(trans_b ? "matmul_nt " : "matmul ") + c.a.to_string() + " x " + c.b.to_string());
  gradcheck(
      {random_input(c.a, seed), random_input(c.b, seed + 1)},
      [trans_b](const std::vector<Matrix>& x) {
        return trans_b ? oa::matrix::matmul_nt(x[0], x[1]) : oa::matrix::matmul(x[0], x[1]);
      },
      [=](const Inputs& x) { return product_ref(x[0], x[1], batch, m, k, n, a_batched, b_batched, trans_b); });
}

TEST(AutogradLinalg, MatmulGradients) {
  std::uint64_t seed = 1;
  for (const ProductCase& c : std::vector<ProductCase>{{{1, 1}, {1, 1}},
                                                       {{7, 5}, {5, 3}},
                                                       {{3, 65}, {65, 2}},
                                                       {{17, 33}, {33, 9}},
                                                       {{2, 3, 4}, {2, 4, 5}},
                                                       {{2, 3, 4}, {4, 5}},
                                                       {{3, 4}, {2, 4, 5}},
                                                       {{2, 2, 3, 4}, {2, 2, 4, 3}}})
    check_product(false, c, seed += 2);
}

// f64 torch.matmul of a and b: 1-D operands as a row / a column the result
// drops, batch extents broadcast; straight from the definition.
Vec matmul_broadcast_ref(const Vec& a, const Vec& b, const Shape& sa, const Shape& sb) {
  std::vector<std::int64_t> da = sa.to_vector(), db = sb.to_vector();
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  const std::int64_t m = da[da.size() - 2], k = da.back(), n = db.back();
  da.resize(da.size() - 2);
  db.resize(db.size() - 2);
  const std::size_t rank = std::max(da.size(), db.size());
  da.insert(da.begin(), rank - da.size(), 1);
  db.insert(db.begin(), rank - db.size(), 1);
  std::vector<std::int64_t> batch(rank);
  std::int64_t items = 1;
  for (std::size_t d = 0; d < rank; ++d) items *= batch[d] = std::max(da[d], db[d]);
  Vec c(static_cast<std::size_t>(items * m * n), 0.0);
  for (std::int64_t t = 0; t < items; ++t) {
    std::int64_t ia = 0, ib = 0, rest = t, stride = items;
    for (std::size_t d = 0; d < rank; ++d) {
      stride /= batch[d];
      const std::int64_t i = rest / stride;
      rest %= stride;
      ia = ia * da[d] + (da[d] == 1 ? 0 : i);
      ib = ib * db[d] + (db[d] == 1 ? 0 : i);
    }
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t q = 0; q < k; ++q) c[(t * m + i) * n + j] += a[(ia * m + i) * k + q] * b[(ib * k + q) * n + j];
  }
  return c;
}

TEST(AutogradLinalg, MatmulBroadcastGradients) {
  struct Case {
    Shape a, b, out;
  };
  std::uint64_t seed = 300;
  for (const Case& c : std::vector<Case>{{{2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}},
                                         {{1, 3, 4}, {2, 4, 5}, {2, 3, 5}},
                                         {{2, 3, 4}, {1, 4, 5}, {2, 3, 5}},
                                         {{1, 1, 2, 3}, {3, 2}, {1, 1, 2, 2}},
                                         {{3, 1, 2, 3}, {2, 3, 2}, {3, 2, 2, 2}},
                                         {{4}, {4}, {}},
                                         {{3}, {2, 3, 5}, {2, 5}},
                                         {{2, 3, 4}, {4}, {2, 3}},
                                         {{3}, {3, 2}, {2}}}) {
    SCOPED_TRACE("matmul " + c.a.to_string() + " x " + c.b.to_string());
    const Matrix y = gradcheck({random_input(c.a, seed), random_input(c.b, seed + 1)},
                               [](const std::vector<Matrix>& x) { return oa::matrix::matmul(x[0], x[1]); },
                               [&c](const Inputs& x) { return matmul_broadcast_ref(x[0], x[1], c.a, c.b); });
    EXPECT_EQ(y.shape(), c.out);
    seed += 2;
  }
}

TEST(AutogradLinalg, MatMulNtGradients) {
  std::uint64_t seed = 100;
  for (const ProductCase& c : std::vector<ProductCase>{{{1, 1}, {1, 1}},
                                                       {{7, 5}, {3, 5}},
                                                       {{3, 65}, {2, 65}},
                                                       {{17, 33}, {9, 33}},
                                                       {{2, 3, 4}, {2, 5, 4}},
                                                       {{2, 3, 4}, {5, 4}},
                                                       {{3, 4}, {2, 5, 4}}})
    check_product(true, c, seed += 2);
}

TEST(AutogradLinalg, FewRowGradients) {
  // Products with M <= 16 rows per item (the skinny GEMM), odd K and N, batched and broadcast.
  std::uint64_t seed = 200;
  for (const ProductCase& c : std::vector<ProductCase>{{{1, 37}, {37, 130}}, {{2, 16, 9}, {9, 5}}, {{2, 1, 33}, {2, 33, 7}}})
    check_product(false, c, seed += 2);
  for (const ProductCase& c : std::vector<ProductCase>{{{1, 261}, {7, 261}}, {{2, 2, 33}, {2, 5, 33}}, {{3, 16, 8}, {36, 8}}})
    check_product(true, c, seed += 2);
}

TEST(AutogradLinalg, ProductBackwardTraceAndSavedValues) {
  auto x = Matrix::uniform({6, 4}, -1, 1, 1);                         // data: no gradient
  auto w = oa::set_requires_grad(Matrix::uniform({3, 4}, -1, 1, 2));  // weight [N, K]
  auto y = oa::matrix::matmul_nt(x, w);
  EXPECT_EQ(oa::autograd::grad_fn_name(y), "oa::matrix::matmul_nt");
  oa::TraceCapture t(x.engine());
  oa::backward(y, Matrix::ones({6, 3}));
  auto ops = t.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].label(), "oa::matrix::matmul_nt backward");
  EXPECT_EQ(ops[0].outputs.size(), 1u);  // only the weight's gradient
  EXPECT_GE(ops[0].dispatches, 1u);
  // The data x is saved for the weight's gradient: updating it in place is caught.
  auto y2 = oa::matrix::matmul_nt(x, w);
  x.write(std::vector<float>(24, 0.0f));
  EXPECT_TRUE(oa_test::throws(
      [&] {
        oa::backward(y2, Matrix::ones({6, 3}));
      },
      oa::ErrorKind::FailedPrecondition, {"oa::matrix::matmul_nt", "a value of shape [6, 4]"}));
}

TEST(AutogradLinalg, TransposeBackwardTrace) {
  auto x = oa::set_requires_grad(Matrix::uniform({2, 3}, -1, 1, 1));
  auto y = oa::matrix::transpose(x);
  oa::TraceCapture t(x.engine());
  oa::backward(y, Matrix::ones({3, 2}));
  auto ops = t.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].label(), "oa::matrix::transpose backward");
}

TEST(AutogradReduction, ScalarLossBackward) {
  const Shape s{4, 5};
  // A scalar loss straight from a reduction (the reductions' own gradients: the op table, tests/ops/).
  auto x = oa::set_requires_grad(Matrix::uniform(s, -1, 1, 4));
  auto loss = oa::matrix::mean_all(oa::matrix::square(x));
  oa::TraceCapture t(x.engine());
  oa::backward(loss);
  auto ops = t.ops();
  EXPECT_EQ(count_label(ops, "oa::matrix::mean backward"), 1u);
  EXPECT_EQ(count_label(ops, "oa::matrix::square backward"), 1u);
  auto xv = x.to_vector(), g = oa::grad(x).to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], 2.0 * xv[i] / 20, 1e-6);
}

TEST(AutogradReduction, MaxSplitsTiesEvenly) {
  // torch.amax sends a row's gradient to its maxima, split evenly.
  auto x = oa::set_requires_grad(Matrix::from_vector({2, 3}, std::vector<float>{1, 3, 3, -2, 5, -7}));
  oa::backward(oa::matrix::max(x), Matrix::from_vector({2}, std::vector<float>{4, 2}));
  EXPECT_EQ(oa::grad(x).to_vector(), (std::vector<float>{0, 2, 2, 0, 2, 0}));
  auto y = oa::set_requires_grad(Matrix::from_vector({4}, std::vector<float>{2, 2, 2, 2}));
  oa::backward(oa::matrix::max_all(y));
  EXPECT_EQ(oa::grad(y).to_vector(), std::vector<float>(4, 0.25f));
}

// f64 reference of sum_to: x of shape xs summed into target (right-aligned
// broadcasting; a target extent of 1 or a missing axis is summed over).
Vec sum_to_ref(const Vec& x, const Shape& xs, const Shape& target) {
  Vec y(static_cast<std::size_t>(target.numel()), 0.0);
  const std::size_t shift = xs.rank() - target.rank();
  for (std::int64_t e = 0; e < xs.numel(); ++e) {
    std::int64_t rest = e, t = 0, stride = 1;
    for (std::size_t a = xs.rank(); a-- > 0;) {
      const std::int64_t coord = rest % xs[a];
      rest /= xs[a];
      if (a >= shift && target[a - shift] != 1) {
        t += coord * stride;
        stride *= target[a - shift];
      }
    }
    y[static_cast<std::size_t>(t)] += x[static_cast<std::size_t>(e)];
  }
  return y;
}

TEST(AutogradReduction, SumToGradient) {
  const Shape xs{2, 3, 4};
  std::uint64_t seed = 50;
  for (const Shape& target : {Shape{4}, Shape{3, 4}, Shape{1, 3, 1}, Shape{}, Shape{2, 3, 4}}) {
    SCOPED_TRACE(target.to_string());
    gradcheck(
        {random_input(xs, seed++)}, [&](const std::vector<Matrix>& x) { return oa::matrix::sum_to(x[0], target); },
        [&](const Inputs& x) { return sum_to_ref(x[0], xs, target); });
  }
}

// f64 reference of a binary op with broadcasting (right-aligned).
oa::test::ReferenceForward broadcast_ref(std::function<double(double, double)> f, const Shape& sa, const Shape& sb) {
  return [f, sa, sb](const Inputs& x) {
    const Shape& big = sa.numel() >= sb.numel() ? sa : sb;
    Vec y(static_cast<std::size_t>(big.numel()));
    auto index = [&big](const Shape& s, std::int64_t e) {
      const std::size_t shift = big.rank() - s.rank();
      std::int64_t at = 0, stride = 1;
      for (std::size_t a = big.rank(); a-- > 0;) {
        const std::int64_t coord = e % big[a];
        e /= big[a];
        if (a >= shift && s[a - shift] != 1) {
          at += coord * stride;
          stride *= s[a - shift];
        }
      }
      return static_cast<std::size_t>(at);
    };
    for (std::int64_t e = 0; e < big.numel(); ++e) y[static_cast<std::size_t>(e)] = f(x[0][index(sa, e)], x[1][index(sb, e)]);
    return y;
  };
}

TEST(AutogradElementwise, BroadcastOperandGradients) {
  struct Op {
    const char* name;
    std::function<Matrix(const Matrix&, const Matrix&)> gpu;
    std::function<double(double, double)> ref;
  };
  const std::vector<Op> ops = {
      {"add", [](const Matrix& a, const Matrix& b) { return a + b; }, [](double u, double v) { return u + v; }},
      {"sub", [](const Matrix& a, const Matrix& b) { return a - b; }, [](double u, double v) { return u - v; }},
      {"mul", [](const Matrix& a, const Matrix& b) { return a * b; }, [](double u, double v) { return u * v; }},
      {"div", [](const Matrix& a, const Matrix& b) { return a / (oa::matrix::square(b) + 0.5f); },
       [](double u, double v) { return u / (v * v + 0.5); }},
      {"maximum", [](const Matrix& a, const Matrix& b) { return oa::matrix::maximum(a, b); },
       [](double u, double v) { return std::max(u, v); }},
      {"minimum", [](const Matrix& a, const Matrix& b) { return oa::matrix::minimum(a, b); },
       [](double u, double v) { return std::min(u, v); }},
  };
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 6}, {6}}, {{6}, {4, 6}}, {{2, 3, 4, 5}, {1, 3, 1, 1}}, {{3, 5}, {}}, {{1}, {2, 3}}};
  std::uint64_t seed = 70;
  for (const auto& op : ops)
    for (const auto& [sa, sb] : shapes) {
      SCOPED_TRACE(std::string(op.name) + " " + sa.to_string() + " " + sb.to_string());
      gradcheck(
          {random_input(sa, seed++, -2, 2), random_input(sb, seed++, -2, 2)},
          [&](const std::vector<Matrix>& x) { return op.gpu(x[0], x[1]); }, broadcast_ref(op.ref, sa, sb));
    }
}

TEST(AutogradElementwise, BroadcastGradientIsSummedBack) {
  auto x = Matrix::uniform({5, 3}, -1, 1, 1);
  auto bias = oa::set_requires_grad(Matrix::zeros({3}));
  auto y = x + bias;
  oa::TraceCapture t(x.engine());
  oa::backward(y, Matrix::ones({5, 3}));
  auto ops = t.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].label(), "oa::matrix::sum_to");
  EXPECT_EQ(oa::grad(bias).to_vector(), std::vector<float>(3, 5.0f));
}

}  // namespace
