// Attention family: heads, softmax, batched products, flash and materialised
// attention. Forward results against the f64 oracles in
// tests/reference/attention.hpp and linalg.hpp, backward lowerings against
// analytic f64 gradients, traces (one semantic op per call) and errors (naming
// the op, recording nothing).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include "ml/attention_common.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using namespace oa::attention_test;

// An additive mask with about `hidden` of its entries -inf and, when
// hide_row >= 0, every entry of row hide_row.
std::vector<float> random_mask(std::int64_t rows, std::int64_t cols, std::uint32_t seed, double hidden, std::int64_t hide_row = -1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<float> m(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      m[static_cast<std::size_t>(r * cols + c)] = (r == hide_row || u(gen) < hidden) ? -kInf : dist(gen);
  return m;
}

// The single op a call recorded.
oa::SemanticOp only_op(oa::TraceCapture& trace) {
  auto ops = trace.ops();
  EXPECT_EQ(ops.size(), 1u);
  return ops.empty() ? oa::SemanticOp{} : ops[0];
}

// ── heads ───────────────────────────────────────────────────────────────────

TEST(AttentionHeads, SplitExample) {
  auto x = Matrix::from_vector({2, 4}, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  oa::TraceCapture trace(engine());
  Matrix y = ml::split_heads(x, 1, 2, 2);
  const auto op = only_op(trace);
  EXPECT_EQ(op.name, "oa::ml::split_heads");
  EXPECT_EQ(op.dispatches, 1u);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{0, 1, 4, 5, 2, 3, 6, 7}));
}

TEST(AttentionHeads, MergeInvertsSplit) {
  const std::int64_t B = 3, S = 5, H = 4, Dh = 3;
  auto values = random_floats(static_cast<std::size_t>(B * S * H * Dh), 11);
  auto x = Matrix::from_vector({B * S, H * Dh}, values);
  Matrix y = ml::split_heads(x, B, S, H);
  EXPECT_EQ(y.shape(), (Shape{B * H, S, Dh}));
  EXPECT_TRUE(oa_test::near(y.to_vector(), ref::split_heads(to_f64(values), B, S, H, Dh), 0.0, 0.0));
  oa::TraceCapture trace(engine());
  Matrix z = ml::merge_heads(y, B, S, H);
  EXPECT_EQ(only_op(trace).name, "oa::ml::merge_heads");
  EXPECT_EQ(z.shape(), x.shape());
  EXPECT_EQ(z.to_vector(), values);
}

TEST(AttentionHeads, OneHeadIsAReshape) {
  auto x = Matrix::from_vector({4, 3}, random_floats(12, 3));
  oa::TraceCapture trace(engine());
  Matrix y = ml::split_heads(x, 2, 2, 1);
  Matrix z = ml::merge_heads(y, 2, 2, 1);
  EXPECT_TRUE(trace.ops().empty());
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(y.storage(), x.storage());
  EXPECT_EQ(z.shape(), x.shape());
}

TEST(AttentionHeads, SplitQkvIsChunkThenSplit) {
  const std::int64_t B = 3, S = 5, H = 4, Dh = 3;
  auto values = random_floats(static_cast<std::size_t>(B * S * 3 * H * Dh), 12);
  auto x = Matrix::from_vector({B * S, 3 * H * Dh}, values);
  oa::TraceCapture trace(engine());
  const ml::QkvHeads r = ml::split_qkv_heads(x, B, S, H);
  const auto op = only_op(trace);
  EXPECT_EQ(op.name, "oa::ml::split_qkv_heads");
  EXPECT_EQ(op.dispatches, 1u);
  const Matrix* parts[] = {&r.q, &r.k, &r.v};
  for (int part = 0; part < 3; ++part) {
    EXPECT_EQ(parts[part]->shape(), (Shape{B * H, S, Dh}));
    EXPECT_TRUE(oa_test::near(parts[part]->to_vector(), ref::split_qkv_heads(to_f64(values), B, S, H, Dh, part), 0.0, 0.0));
  }
}

TEST(AttentionHeads, EmptyInputs) {
  // B, S or D = 0 (as torch's view and transpose): an empty result and
  // gradient, the op and its backward recorded with no dispatch.
  struct Empty {
    std::int64_t B, S, H, D;
  };
  for (const Empty& e : {Empty{0, 3, 2, 8}, Empty{2, 0, 2, 8}, Empty{2, 3, 2, 0}, Empty{0, 0, 4, 0}}) {
    SCOPED_TRACE(testing::Message() << "B " << e.B << " S " << e.S << " H " << e.H << " D " << e.D);
    const Shape heads{e.B * e.H, e.S, e.D / e.H};
    const Matrix x = oa::set_requires_grad(Matrix::zeros({e.B * e.S, e.D}));
    oa::TraceCapture trace(engine());
    const Matrix y = ml::split_heads(x, e.B, e.S, e.H);
    EXPECT_EQ(y.shape(), heads);
    const Matrix z = ml::merge_heads(y, e.B, e.S, e.H);
    EXPECT_EQ(z.shape(), x.shape());
    const ml::QkvHeads r = ml::split_qkv_heads(Matrix::zeros({e.B * e.S, 3 * e.D}), e.B, e.S, e.H);
    EXPECT_EQ(r.v.shape(), heads);
    oa::backward(z, Matrix::zeros(z.shape()));
    EXPECT_EQ(oa::grad(x).shape(), x.shape());
    std::vector<std::string> labels;
    for (const oa::SemanticOp& op : trace.ops()) {
      labels.push_back(op.label());
      EXPECT_EQ(op.dispatches, 0u) << op.label();
    }
    EXPECT_EQ(labels, (std::vector<std::string>{"oa::ml::split_heads", "oa::ml::merge_heads", "oa::ml::split_qkv_heads",
                                                "oa::ml::merge_heads backward", "oa::ml::split_heads backward"}));
  }
}

TEST(AttentionHeads, Errors) {
  auto x = Matrix::zeros({4, 6});
  oa::TraceCapture trace(engine());
  using oa::ErrorKind;
  EXPECT_TRUE(oa_test::throws([&] { ml::split_heads(x, 2, 2, 4); }, ErrorKind::InvalidArgument, {"oa::ml::split_heads", "[4, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::split_heads(x, 3, 2, 2); }, ErrorKind::InvalidArgument, {"split_heads", "[4, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::split_heads(x, 2, 2, 0); }, ErrorKind::InvalidArgument, {"split_heads", "num_heads"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::merge_heads(x, 2, 2, 2); }, ErrorKind::InvalidArgument, {"oa::ml::merge_heads", "[4, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::split_qkv_heads(x, 2, 2, 4); }, ErrorKind::InvalidArgument, {"oa::ml::split_qkv_heads", "qkv", "[4, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::split_qkv_heads(x, 3, 2, 1); }, ErrorKind::InvalidArgument, {"split_qkv_heads", "[4, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::split_qkv_heads(x, 2, 2, 0); }, ErrorKind::InvalidArgument, {"split_qkv_heads", "num_heads"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::split_qkv_heads(Matrix::zeros({4, 6, 1}), 2, 2, 1); }, ErrorKind::InvalidArgument,
                              {"split_qkv_heads", "[4, 6, 1]"}));
  EXPECT_TRUE(trace.ops().empty());
}

// ── softmax ─────────────────────────────────────────────────────────────────

TEST(AttentionSoftmax, LargeLogitsAreStable) {
  auto x = Matrix::from_vector({1, 2}, std::vector<float>{1000.0f, 0.0f});
  EXPECT_EQ(ml::softmax_scaled_masked(x, Matrix(), 1.0f).to_vector(), (std::vector<float>{1.0f, 0.0f}));
}

TEST(AttentionSoftmax, ManyRowsPastTheGridLimit) {
  auto x = Matrix::zeros({70000, 4});
  auto y = ml::softmax_scaled_masked(x, Matrix(), 1.0f).to_vector();
  for (float v : y) ASSERT_EQ(v, 0.25f);
}

TEST(AttentionSoftmax, MatchesReferenceAcrossRowLengths) {
  // Row lengths cover the 8-, 64- and 256-lane variants, the register cache
  // boundary (256 lanes * 8 = 2048) and a row past 65536; the last row of each
  // is fully masked.
  for (std::int64_t cols : {1, 5, 64, 65, 513, 2049, 70001}) {
    const std::int64_t rows = cols > 2048 ? 2 : 37;
    auto xv = random_floats(static_cast<std::size_t>(rows * cols), static_cast<std::uint32_t>(cols), -4.0f, 4.0f);
    auto mv = random_mask(rows, cols, static_cast<std::uint32_t>(cols) + 1, 0.2, rows - 1);
    auto x = Matrix::from_vector({rows, cols}, xv);
    auto mask = Matrix::from_vector({rows, cols}, mv);
    oa::TraceCapture trace(engine());
    auto y = ml::softmax_scaled_masked(x, mask, 0.7f);
    EXPECT_EQ(only_op(trace).name, "oa::ml::softmax_scaled_masked");
    auto got = y.to_vector();
    EXPECT_TRUE(oa_test::near(got, ref::softmax(to_f64(xv), rows, cols, 0.7, to_f64(mv), rows), kAtol, kRtol)) << "cols " << cols;
    for (std::int64_t c = 0; c < cols; ++c) ASSERT_EQ(got[static_cast<std::size_t>((rows - 1) * cols + c)], 0.0f);
  }
}

TEST(AttentionSoftmax, LongRowsFoldTheirTailOnline) {
  // 256 lanes keep 1..16 slots of 4 columns each in registers (1024 * slots
  // columns) and fold the rest online: rows at the slot sizes +- 1 and of
  // vocabularies (32000, 50257, 128256), aligned (cols % 4 == 0, vec4 loads)
  // or not. Row 0 holds a NaN past the register slots, row 1 -inf logits,
  // row 3 +-1e30 logits; with the mask (-inf at random), row 2 is fully
  // masked. Values near 1 / cols: a relative tolerance.
  for (std::int64_t cols : {1, 7, 1023, 1024, 1025, 4097, 16383, 16384, 16385, 32000, 50257, 128256, 128259}) {
    const std::int64_t rows = 4;
    auto xv = random_floats(static_cast<std::size_t>(rows * cols), static_cast<std::uint32_t>(cols) + 3, -6.0f, 6.0f);
    auto mv = random_mask(rows, cols, static_cast<std::uint32_t>(cols) + 4, 0.2, 2);
    xv[static_cast<std::size_t>(cols - 1)] = std::numeric_limits<float>::quiet_NaN();
    for (std::int64_t c = 0; c < cols; c += 3) xv[static_cast<std::size_t>(cols + c)] = -kInf;
    xv[static_cast<std::size_t>(3 * cols + cols / 2)] = 1e30f;
    xv[static_cast<std::size_t>(3 * cols + cols - 1)] = -1e30f;
    for (const bool masked : {false, true}) {
      const Matrix mask = masked ? Matrix::from_vector({rows, cols}, mv) : Matrix();
      const auto got = ml::softmax_scaled_masked(Matrix::from_vector({rows, cols}, xv), mask, 0.5f).to_vector();
      EXPECT_TRUE(oa_test::near(got, ref::softmax(to_f64(xv), rows, cols, 0.5, masked ? to_f64(mv) : Vec{}, rows), 1e-10, kRtol))
          << "cols " << cols << " masked " << masked;
    }
  }
}

TEST(AttentionSoftmax, BroadcastMask) {
  const std::int64_t BH = 3, Sq = 5, Sk = 7;
  auto xv = random_floats(static_cast<std::size_t>(BH * Sq * Sk), 5);
  auto mv = random_mask(Sq, Sk, 6, 0.3);
  auto y = ml::softmax_scaled_masked(Matrix::from_vector({BH, Sq, Sk}, xv), Matrix::from_vector({Sq, Sk}, mv), 1.5f);
  EXPECT_TRUE(oa_test::near(y.to_vector(), ref::softmax(to_f64(xv), BH * Sq, Sk, 1.5, to_f64(mv), Sq), kAtol, kRtol));
}

TEST(AttentionSoftmax, BackwardMatchesReference) {
  for (std::int64_t cols : {3, 100, 3000}) {
    const std::int64_t rows = 9;
    auto xv = random_floats(static_cast<std::size_t>(rows * cols), 21);
    auto gv = random_floats(static_cast<std::size_t>(rows * cols), 22);
    auto y = ml::softmax_scaled_masked(Matrix::from_vector({rows, cols}, xv), Matrix(), 2.0f);
    oa::TraceCapture trace(engine());
    auto dx = ml::softmax_scaled_masked_backward(y, Matrix::from_vector({rows, cols}, gv), 2.0f);
    EXPECT_EQ(only_op(trace).label(), "oa::ml::softmax_scaled_masked backward");
    const Vec yr = ref::softmax(to_f64(xv), rows, cols, 2.0);
    EXPECT_TRUE(oa_test::near(dx.to_vector(), ref::softmax_backward(yr, to_f64(gv), rows, cols, 2.0), kAtol, kRtol)) << "cols " << cols;
  }
}

TEST(AttentionSoftmax, Errors) {
  auto x = Matrix::zeros({3, 4});
  oa::TraceCapture trace(engine());
  using oa::ErrorKind;
  EXPECT_TRUE(oa_test::throws([&] { ml::softmax_scaled_masked(x, Matrix::zeros({4, 3}), 1.0f); }, ErrorKind::InvalidArgument,
                              {"oa::ml::softmax_scaled_masked", "mask [4, 3]", "[3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::softmax_scaled_masked(Matrix::zeros({}), Matrix(), 1.0f); }, ErrorKind::InvalidArgument,
                              {"softmax_scaled_masked", "rank >= 1", "[]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::softmax_scaled_masked_backward(x, Matrix::zeros({3, 5}), 1.0f); },
                              ErrorKind::InvalidArgument, {"softmax_scaled_masked backward", "[3, 5]"}));
  EXPECT_TRUE(trace.ops().empty());
}

// ── batched products ────────────────────────────────────────────────────────

const char* const kBmmNames[3] = {"oa::ml::bmm", "oa::ml::bmm_nt", "oa::ml::bmm_tn"};

Matrix run_bmm(ml::BmmLayout layout, const Matrix& a, const Matrix& b) {
  switch (layout) {
    case ml::BmmLayout::NN: return ml::bmm(a, b);
    case ml::BmmLayout::NT: return ml::bmm_nt(a, b);
    case ml::BmmLayout::TN: return ml::bmm_tn(a, b);
  }
  return {};
}

// Operands of op(A) [N, M, K] op(B) [N, K, P] stored for the layout.
struct BmmCase {
  ml::BmmLayout layout;
  std::int64_t n, m, k, p;
  Shape a_shape() const { return layout == ml::BmmLayout::TN ? Shape{n, k, m} : Shape{n, m, k}; }
  Shape b_shape() const { return layout == ml::BmmLayout::NT ? Shape{n, p, k} : Shape{n, k, p}; }
  Vec reference(const Vec& a, const Vec& b) const {
    return ref::bmm(a, b, n, m, k, p, layout == ml::BmmLayout::TN, layout == ml::BmmLayout::NT);
  }
};

TEST(AttentionBmm, LayoutsMatchReference) {
  for (auto layout : {ml::BmmLayout::NN, ml::BmmLayout::NT, ml::BmmLayout::TN}) {
    const BmmCase c{layout, 3, 5, 7, 9};
    auto av = random_floats(static_cast<std::size_t>(c.a_shape().numel()), 31);
    auto bv = random_floats(static_cast<std::size_t>(c.b_shape().numel()), 32);
    auto a = Matrix::from_vector(c.a_shape(), av), b = Matrix::from_vector(c.b_shape(), bv);
    oa::TraceCapture trace(engine());
    Matrix out = run_bmm(layout, a, b);
    EXPECT_EQ(only_op(trace).name, kBmmNames[static_cast<int>(layout)]);
    EXPECT_EQ(out.shape(), (Shape{c.n, c.m, c.p}));
    EXPECT_TRUE(oa_test::near(out.to_vector(), c.reference(to_f64(av), to_f64(bv)), kAtol, kRtol)) << kBmmNames[static_cast<int>(layout)];
  }
}

TEST(AttentionBmm, ManySmallMatrices) {
  const BmmCase c{ml::BmmLayout::NN, 70000, 2, 3, 2};
  auto av = random_floats(static_cast<std::size_t>(c.a_shape().numel()), 41);
  auto bv = random_floats(static_cast<std::size_t>(c.b_shape().numel()), 42);
  Matrix out = ml::bmm(Matrix::from_vector(c.a_shape(), av), Matrix::from_vector(c.b_shape(), bv));
  EXPECT_TRUE(oa_test::near(out.to_vector(), c.reference(to_f64(av), to_f64(bv)), kAtol, kRtol));
}

// Gradients of sum(C * G) from the definition: d op(A) = G op(B)^T and
// d op(B) = op(A)^T G, mapped back to each operand's storage layout.
void bmm_reference_grads(const BmmCase& c, const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& g,
                         Vec& da, Vec& db) {
  const bool ta = c.layout == ml::BmmLayout::TN, tb = c.layout == ml::BmmLayout::NT;
  auto at = [&](std::int64_t t, std::int64_t i, std::int64_t x) {  // index of op(A)[t][i][x]
    return static_cast<std::size_t>(ta ? (t * c.k + x) * c.m + i : (t * c.m + i) * c.k + x);
  };
  auto bt = [&](std::int64_t t, std::int64_t x, std::int64_t j) {  // index of op(B)[t][x][j]
    return static_cast<std::size_t>(tb ? (t * c.p + j) * c.k + x : (t * c.k + x) * c.p + j);
  };
  da.assign(a.size(), 0.0);
  db.assign(b.size(), 0.0);
  for (std::int64_t t = 0; t < c.n; ++t)
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = 0; j < c.p; ++j) {
        const double gv = g[static_cast<std::size_t>((t * c.m + i) * c.p + j)];
        for (std::int64_t x = 0; x < c.k; ++x) {
          da[at(t, i, x)] += gv * b[bt(t, x, j)];
          db[bt(t, x, j)] += gv * a[at(t, i, x)];
        }
      }
}

TEST(AttentionBmm, BackwardMatchesReference) {
  for (auto layout : {ml::BmmLayout::NN, ml::BmmLayout::NT, ml::BmmLayout::TN}) {
    const BmmCase c{layout, 2, 6, 5, 3};
    auto av = random_floats(static_cast<std::size_t>(c.a_shape().numel()), 51);
    auto bv = random_floats(static_cast<std::size_t>(c.b_shape().numel()), 52);
    auto gv = random_floats(static_cast<std::size_t>(c.n * c.m * c.p), 53);
    auto a = Matrix::from_vector(c.a_shape(), av), b = Matrix::from_vector(c.b_shape(), bv);
    oa::TraceCapture trace(engine());
    auto g = ml::bmm_backward(layout, a, b, Matrix::from_vector({c.n, c.m, c.p}, gv));
    EXPECT_EQ(only_op(trace).label(), std::string(kBmmNames[static_cast<int>(layout)]) + " backward");
    Vec da, db;
    bmm_reference_grads(c, av, bv, gv, da, db);
    EXPECT_TRUE(oa_test::near(g.a.to_vector(), da, kAtol, kRtol)) << kBmmNames[static_cast<int>(layout)];
    EXPECT_TRUE(oa_test::near(g.b.to_vector(), db, kAtol, kRtol)) << kBmmNames[static_cast<int>(layout)];
  }
}

TEST(AttentionBmm, FewRowsForwardAndBackward) {
  // M = 1 and 16 rows per item (the skinny GEMM) with odd K and P, every layout.
  for (auto layout : {ml::BmmLayout::NN, ml::BmmLayout::NT, ml::BmmLayout::TN})
    for (std::int64_t m : {1, 16}) {
      const BmmCase c{layout, 3, m, 301, 37};
      auto av = random_floats(static_cast<std::size_t>(c.a_shape().numel()), 61);
      auto bv = random_floats(static_cast<std::size_t>(c.b_shape().numel()), 62);
      auto gv = random_floats(static_cast<std::size_t>(c.n * c.m * c.p), 63);
      auto a = Matrix::from_vector(c.a_shape(), av), b = Matrix::from_vector(c.b_shape(), bv);
      const std::string name = std::string(kBmmNames[static_cast<int>(layout)]) + " m " + std::to_string(m);
      EXPECT_TRUE(oa_test::near(run_bmm(layout, a, b).to_vector(), c.reference(to_f64(av), to_f64(bv)), kAtol, kRtol)) << name;
      auto g = ml::bmm_backward(layout, a, b, Matrix::from_vector({c.n, c.m, c.p}, gv));
      Vec da, db;
      bmm_reference_grads(c, av, bv, gv, da, db);
      EXPECT_TRUE(oa_test::near(g.a.to_vector(), da, kAtol, kRtol)) << name;
      EXPECT_TRUE(oa_test::near(g.b.to_vector(), db, kAtol, kRtol)) << name;
    }
}

TEST(AttentionBmm, Errors) {
  oa::TraceCapture trace(engine());
  using oa::ErrorKind;
  EXPECT_TRUE(oa_test::throws([&] { ml::bmm(Matrix::zeros({2, 3, 4}), Matrix::zeros({2, 5, 6})); }, ErrorKind::InvalidArgument,
                              {"oa::ml::bmm:", "[2, 3, 4]", "[2, 5, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::bmm_nt(Matrix::zeros({2, 3, 4}), Matrix::zeros({3, 5, 4})); }, ErrorKind::InvalidArgument,
                              {"oa::ml::bmm_nt", "[3, 5, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::bmm_tn(Matrix::zeros({3, 4}), Matrix::zeros({3, 5})); }, ErrorKind::InvalidArgument,
                              {"oa::ml::bmm_tn", "[3, 4]"}));
  EXPECT_TRUE(oa_test::throws(
      [&] { ml::bmm_backward(ml::BmmLayout::NN, Matrix::zeros({2, 3, 4}), Matrix::zeros({2, 4, 5}), Matrix::zeros({2, 3, 4})); },
      ErrorKind::InvalidArgument, {"oa::ml::bmm backward", "[2, 3, 5]"}));
  // Integer operands: the forward and the explicit backward refuse them alike.
  const Matrix i = Matrix::from_i32({3, 3, 3}, std::vector<std::int32_t>(27, 1));
  EXPECT_TRUE(oa_test::throws([&] { ml::bmm_nt(i, i); }, ErrorKind::InvalidArgument, {"oa::ml::bmm_nt", "i32", "[3, 3, 3]"}));
  for (const ml::BmmLayout layout : {ml::BmmLayout::NN, ml::BmmLayout::NT, ml::BmmLayout::TN})
    EXPECT_TRUE(oa_test::throws([&] { ml::bmm_backward(layout, i, i, i); }, ErrorKind::InvalidArgument, {"oa::ml::bmm", "i32", "[3, 3, 3]"}));
  EXPECT_TRUE(trace.ops().empty());
}

// ── attention ───────────────────────────────────────────────────────────────

enum class MaskKind { None, PerRow, Broadcast };

struct Case {
  std::int64_t bh, sq, sk, dh, dv;
  MaskKind mask;
  bool causal;
  ml::CausalVariant variant = ml::CausalVariant::LowerRight;
};

std::string describe(const Case& c) {
  return "bh " + std::to_string(c.bh) + " sq " + std::to_string(c.sq) + " sk " + std::to_string(c.sk) + " dh " +
         std::to_string(c.dh) + " dv " + std::to_string(c.dv) + " mask " + std::to_string(static_cast<int>(c.mask)) +
         (c.causal ? " causal" : "") + (c.variant == ml::CausalVariant::UpperLeft ? " upper-left" : "");
}

// Inputs of one case on the device, and the matching f64 problem.
struct Inputs {
  std::vector<float> q, k, v, mask, grad;
  Matrix mq, mk, mv, mmask, mgrad;
  ref::AttentionProblem problem;
};

Inputs make_inputs(const Case& c, std::uint32_t seed) {
  Inputs in;
  in.q = random_floats(static_cast<std::size_t>(c.bh * c.sq * c.dh), seed);
  in.k = random_floats(static_cast<std::size_t>(c.bh * c.sk * c.dh), seed + 1);
  in.v = random_floats(static_cast<std::size_t>(c.bh * c.sk * c.dv), seed + 2);
  in.grad = random_floats(static_cast<std::size_t>(c.bh * c.sq * c.dv), seed + 3);
  in.mq = Matrix::from_vector({c.bh, c.sq, c.dh}, in.q);
  in.mk = Matrix::from_vector({c.bh, c.sk, c.dh}, in.k);
  in.mv = Matrix::from_vector({c.bh, c.sk, c.dv}, in.v);
  in.mgrad = Matrix::from_vector({c.bh, c.sq, c.dv}, in.grad);
  auto& p = in.problem;
  p = attention_problem(c.bh, c.sq, c.sk, c.dh, c.dv, c.causal, c.variant);
  if (c.mask != MaskKind::None) {
    const std::int64_t rows = c.mask == MaskKind::PerRow ? c.bh * c.sq : c.sq;
    in.mask = random_mask(rows, c.sk, seed + 4, 0.15, c.sq > 2 ? 1 : -1);
    in.mmask = Matrix::from_vector({rows, c.sk}, in.mask);
    p.mask = to_f64(in.mask);
    p.mask_rows = rows;
  }
  return in;
}

// The gradients g of in's problem against its f64 backward; `what` names the
// case in failure messages.
void expect_gradients(const ml::AttentionGradients& g, const Inputs& in, const std::string& what) {
  const auto want = ref::attention_backward(in.problem, to_f64(in.q), to_f64(in.k), to_f64(in.v), to_f64(in.grad));
  EXPECT_TRUE(oa_test::near(g.q.to_vector(), want.dq, kAtol, kRtol)) << "dq " << what;
  EXPECT_TRUE(oa_test::near(g.k.to_vector(), want.dk, kAtol, kRtol)) << "dk " << what;
  EXPECT_TRUE(oa_test::near(g.v.to_vector(), want.dv, kAtol, kRtol)) << "dv " << what;
}

// flash_attention of `c` (output and log-sum-exp) and flash_attention_backward
// against the f64 reference, on the current lowerings; with
// `forward_dispatches`, the forward's dispatch count too.
void expect_flash_matches_reference(const Case& c, const Inputs& in, std::optional<std::uint32_t> forward_dispatches = std::nullopt) {
  std::optional<oa::TraceCapture> trace;
  if (forward_dispatches) trace.emplace(engine());
  auto f = ml::flash_attention(in.mq, in.mk, in.mv, in.mmask, {}, c.causal, c.variant);
  if (trace) {
    EXPECT_EQ(only_op(*trace).dispatches, *forward_dispatches) << describe(c);
  }
  const auto want = ref::attention(in.problem, to_f64(in.q), to_f64(in.k), to_f64(in.v));
  EXPECT_TRUE(oa_test::near(f.output.to_vector(), want.out, kAtol, kRtol)) << "output " << describe(c);
  EXPECT_TRUE(oa_test::near(f.log_sum_exp.to_vector(), want.lse, kAtol, kRtol)) << "lse " << describe(c);
  auto g = ml::flash_attention_backward(in.mq, in.mk, in.mv, in.mmask, f.output, f.softmax_stats, in.mgrad,
                                        static_cast<float>(in.problem.scale), c.causal, {}, c.variant);
  expect_gradients(g, in, describe(c));
}

// Every sequence length of 1, 2, 17, 64, 65, 130 and head dim of 1, 16, 40,
// 64, 80, 128 (and the largest flash head dim, 256) appears, with and without masks (both layouts, with a fully masked
// row), causal or not, Sq != Sk both ways (Sq > Sk causal leaves early rows
// with no visible key), and Dv != Dh (Sq <= 4 runs the decoding kernel).
const std::vector<Case> kSweep = {
    {1, 1, 1, 1, 1, MaskKind::None, false},          {2, 2, 2, 16, 16, MaskKind::PerRow, true},
    {2, 17, 17, 40, 40, MaskKind::None, true},       {1, 64, 64, 64, 64, MaskKind::Broadcast, false},
    {1, 65, 65, 128, 128, MaskKind::None, true},     {1, 130, 130, 16, 16, MaskKind::PerRow, true},
    {2, 17, 65, 40, 24, MaskKind::Broadcast, true},  {1, 65, 17, 64, 24, MaskKind::None, true},
    {3, 130, 2, 1, 3, MaskKind::PerRow, false},      {1, 2, 130, 128, 40, MaskKind::None, false},
    {1, 3, 5, 256, 8, MaskKind::None, true},         {1, 20, 40, 256, 80, MaskKind::PerRow, true},
    {1, 33, 50, 80, 80, MaskKind::None, false},
    // Causality aligned top-left (torch's is_causal): Sq < Sk, Sq > Sk, decoding.
    {2, 17, 65, 40, 24, MaskKind::Broadcast, true, ml::CausalVariant::UpperLeft},
    {1, 65, 17, 64, 24, MaskKind::None, true, ml::CausalVariant::UpperLeft},
    {1, 3, 130, 128, 40, MaskKind::PerRow, true, ml::CausalVariant::UpperLeft},
};

// Both lowerings of the forward: the fused kernel (two passes when the keys
// are split into ranges, always when decoding) and the GEMMs, with a budget
// of two heads' scores so that three heads take two chunks.
TEST(AttentionFlash, ForwardMatchesReference) {
  for (const FlashLowering method : {FlashLowering::Fused, FlashLowering::Gemm}) {
    const bool gemm = method == FlashLowering::Gemm;
    std::uint32_t seed = 100;
    for (const Case& c : kSweep) {
      Inputs in = make_inputs(c, seed += 10);
      attention_detail::FlashLoweringGuard guard(method, FlashLowering::Auto, static_cast<std::uint64_t>(2 * c.sq * c.sk * 4));
      oa::TraceCapture trace(engine());
      auto r = ml::flash_attention(in.mq, in.mk, in.mv, in.mmask, {}, c.causal, c.variant);
      const auto op = only_op(trace);
      const std::string what = describe(c) + (gemm ? " gemm" : " fused");
      EXPECT_EQ(op.name, kSdpa);
      // Per chunk and block: the score GEMM, the scores pass and the output GEMM (and any split-K sums).
      if (gemm) EXPECT_GE(op.dispatches, c.bh > 2 ? 6u : 3u) << op.dispatches << " dispatches, " << what;
      else EXPECT_TRUE(op.dispatches == 1u || op.dispatches == 2u) << op.dispatches << " dispatches, " << what;
      EXPECT_EQ(std::get<std::string>(*op.attribute("path")), "flash");
      EXPECT_EQ(r.output.shape(), (Shape{c.bh, c.sq, c.dv}));
      const auto want = ref::attention(in.problem, to_f64(in.q), to_f64(in.k), to_f64(in.v));
      EXPECT_TRUE(oa_test::near(r.output.to_vector(), want.out, kAtol, kRtol)) << "output " << what;
      EXPECT_TRUE(oa_test::near(r.log_sum_exp.to_vector(), want.lse, kAtol, kRtol)) << "lse " << what;
    }
  }
}

// Both lowerings of the backward: the fused passes (dq, then dk/dv; two sums
// more when dk/dv is split over query ranges) and the GEMMs, with a budget
// of two heads' scores so that three heads take two chunks, each after
// either forward (both write the same stats).
TEST(AttentionFlash, BackwardMatchesReference) {
  for (const FlashLowering forward : {FlashLowering::Fused, FlashLowering::Gemm}) {
    for (const FlashLowering method : {FlashLowering::Fused, FlashLowering::Gemm}) {
      const bool gemm = method == FlashLowering::Gemm;
      std::uint32_t seed = 500;
      for (const Case& c : kSweep) {
        Inputs in = make_inputs(c, seed += 10);
        attention_detail::FlashLoweringGuard guard(forward, method, static_cast<std::uint64_t>(2 * c.sq * c.sk * 4));
        auto f = ml::flash_attention(in.mq, in.mk, in.mv, in.mmask, {}, c.causal, c.variant);
        const auto scale = static_cast<float>(in.problem.scale);
        oa::TraceCapture trace(engine());
        auto g = ml::flash_attention_backward(in.mq, in.mk, in.mv, in.mmask, f.output, f.softmax_stats, in.mgrad, scale, c.causal, {}, c.variant);
        const auto op = only_op(trace);
        const std::string what = describe(c) + (forward == FlashLowering::Gemm ? " after the gemm forward," : " after the fused forward,") +
                                 (gemm ? " gemm" : " fused");
        EXPECT_EQ(op.label(), std::string(kSdpa) + " backward");
        // Per chunk: two score GEMMs, the scores pass and three gradient GEMMs (and any split-K sums).
        if (gemm) EXPECT_GE(op.dispatches, c.bh > 2 ? 12u : 6u) << op.dispatches << " dispatches, " << what;
        else EXPECT_TRUE(op.dispatches == 2u || op.dispatches == 4u) << op.dispatches << " dispatches, " << what;
        expect_gradients(g, in, what);
      }
    }
  }
}

// Causal problems past one block of 256 query rows: the GEMM lowerings give
// each block only the keys its last row sees (Sq > Sk leaves early rows
// without keys, Sq < Sk shifts the diagonal), with and without masks; and
// rows of more keys than the forward's scores pass holds in registers.
TEST(AttentionFlash, GemmLoweringsOverCausalBlocksAndLongRows) {
  attention_detail::FlashLoweringGuard guard(FlashLowering::Gemm, FlashLowering::Gemm);
  std::uint32_t seed = 900;
  for (const Case& c : {Case{2, 700, 650, 8, 4, MaskKind::None, true}, Case{1, 1100, 1200, 4, 8, MaskKind::Broadcast, true},
                        Case{1, 600, 600, 4, 4, MaskKind::PerRow, true}, Case{1, 66, 2100, 4, 4, MaskKind::PerRow, false},
                        Case{1, 600, 300, 4, 4, MaskKind::None, true, ml::CausalVariant::UpperLeft},
                        Case{1, 300, 700, 4, 4, MaskKind::Broadcast, true, ml::CausalVariant::UpperLeft}})
    expect_flash_matches_reference(c, make_inputs(c, seed += 10));
}

// Upper-left causal attention with Sq < Sk hides keys Sq .. Sk - 1 from every
// query: the GEMM backward stops its last block at the diagonal, so its
// gradients are bitwise those of k and v cut to the first Sq keys (same
// forward output and stats), and exactly zero past them.
TEST(AttentionFlash, GemmBackwardStopsAtTheDiagonal) {
  const std::int64_t bh = 2, sq = 300, sk = 700, dh = 8, dv = 4;
  const auto q = random_floats(bh * sq * dh, 1), k = random_floats(bh * sk * dh, 2), v = random_floats(bh * sk * dv, 3);
  const auto grad = Matrix::from_vector({bh, sq, dv}, random_floats(bh * sq * dv, 4));
  // The first `keys` rows of each head of x [bh, sk, d].
  const auto cut = [&](const std::vector<float>& x, std::int64_t keys, std::int64_t d) {
    std::vector<float> out;
    for (std::int64_t h = 0; h < bh; ++h) out.insert(out.end(), x.begin() + h * sk * d, x.begin() + (h * sk + keys) * d);
    return Matrix::from_vector({bh, keys, d}, out);
  };
  const Matrix mq = Matrix::from_vector({bh, sq, dh}, q), mk = cut(k, sk, dh), mv = cut(v, sk, dv);
  attention_detail::FlashLoweringGuard guard(FlashLowering::Gemm, FlashLowering::Gemm);
  const auto f = ml::flash_attention(mq, mk, mv, Matrix(), {}, true, ml::CausalVariant::UpperLeft);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const auto full = ml::flash_attention_backward(mq, mk, mv, Matrix(), f.output, f.softmax_stats, grad, scale, true, {},
                                                 ml::CausalVariant::UpperLeft);
  const auto seen = ml::flash_attention_backward(mq, cut(k, sq, dh), cut(v, sq, dv), Matrix(), f.output, f.softmax_stats, grad, scale,
                                                 true, {}, ml::CausalVariant::UpperLeft);
  EXPECT_EQ(full.q.to_vector(), seen.q.to_vector());
  const auto expect_cut = [&](const Matrix& g, const Matrix& want, std::int64_t d, const char* what) {
    const auto x = g.to_vector(), y = want.to_vector();
    for (std::int64_t h = 0; h < bh; ++h)
      for (std::int64_t j = 0; j < sk * d; ++j) {
        const float got = x[static_cast<std::size_t>(h * sk * d + j)];
        const float expected = j < sq * d ? y[static_cast<std::size_t>(h * sq * d + j)] : 0.0f;
        if (got != expected || std::signbit(got) != std::signbit(expected)) {
          ADD_FAILURE() << what << " head " << h << " element " << j << ": " << got << " != " << expected;
          return;
        }
      }
  };
  expect_cut(full.k, seen.k, dh, "dk");
  expect_cut(full.v, seen.v, dv, "dv");
}

// The fused flash forward of `c` in two passes (a split over key ranges,
// merged), then its backward, against the f64 reference.
void expect_split_forward_and_backward(const Case& c, std::uint32_t seed) {
  attention_detail::FlashLoweringGuard fused(FlashLowering::Fused, FlashLowering::Auto);
  expect_flash_matches_reference(c, make_inputs(c, seed), 2u);
}

// Few queries and many keys (more than decoding's four, a chunk of a long prompt): the
// forward splits the keys into ranges and merges them, on any device; the
// backward reads the merged stats. Causal with Sq < Sk leaves ranges that
// some query blocks cannot see; Sq 130 gives each lane group two query rows
// on a CPU driver.
TEST(AttentionFlash, ForwardOverKeyRanges) {
  std::uint32_t seed = 700;
  for (const Case& c : {Case{1, 5, 300, 40, 24, MaskKind::None, false}, Case{2, 20, 500, 16, 16, MaskKind::PerRow, true},
                        Case{1, 6, 257, 64, 64, MaskKind::Broadcast, true},
                        Case{1, 130, 600, 64, 64, MaskKind::PerRow, true}})
    expect_split_forward_and_backward(c, seed += 10);
}

// At most four query rows (decoding): one workgroup per key range and row
// (flash_decode.comp), merged by the combine pass, forward and backward.
// Causal with Sq > Sk leaves rows that see no key; head dims that are not a
// multiple of 4, 256-wide heads, masks, and one range or several.
TEST(AttentionFlash, DecodeRowsOverKeyRanges) {
  std::uint32_t seed = 800;
  for (const Case& c : {Case{2, 1, 300, 128, 128, MaskKind::None, true}, Case{1, 4, 257, 40, 24, MaskKind::PerRow, true},
                        Case{3, 2, 129, 256, 256, MaskKind::Broadcast, false}, Case{1, 4, 2, 64, 64, MaskKind::None, true},
                        Case{2, 3, 1000, 5, 7, MaskKind::None, false}, Case{1, 1, 77, 80, 80, MaskKind::PerRow, false}})
    expect_split_forward_and_backward(c, seed += 10);
}

// Few keys and many queries (cross-attention to a short context): the dk/dv
// pass splits the queries into ranges and adds their partial sums, on any
// device. Sq > Sk causal leaves whole ranges that see no key (zero partials).
TEST(AttentionFlash, KeyGradientsOverQueryRanges) {
  std::uint32_t seed = 900;
  for (const Case& c : {Case{1, 700, 20, 40, 24, MaskKind::None, false}, Case{1, 700, 20, 16, 16, MaskKind::PerRow, true},
                        Case{2, 333, 9, 64, 64, MaskKind::Broadcast, false}}) {
    Inputs in = make_inputs(c, seed += 10);
    auto f = ml::flash_attention(in.mq, in.mk, in.mv, in.mmask, {}, c.causal, c.variant);
    oa::TraceCapture trace(engine());
    auto g = ml::flash_attention_backward(in.mq, in.mk, in.mv, in.mmask, f.output, f.softmax_stats, in.mgrad,
                                          static_cast<float>(in.problem.scale), c.causal, {}, c.variant);
    EXPECT_EQ(only_op(trace).dispatches, 4u) << describe(c);
    expect_gradients(g, in, describe(c));
  }
}

TEST(AttentionMaterialized, ForwardMatchesReference) {
  std::uint32_t seed = 900;
  for (const Case& c : kSweep) {
    Inputs in = make_inputs(c, seed += 10);
    oa::TraceCapture trace(engine());
    auto r = ml::scaled_dot_product_attention_with_weights(in.mq, in.mk, in.mv, in.mmask, {}, c.causal, c.variant);
    const auto op = only_op(trace);
    EXPECT_EQ(op.name, kSdpa);
    EXPECT_EQ(std::get<std::string>(*op.attribute("path")), "materialized");
    const auto want = ref::attention(in.problem, to_f64(in.q), to_f64(in.k), to_f64(in.v));
    EXPECT_TRUE(oa_test::near(r.output.to_vector(), want.out, kAtol, kRtol)) << "output " << describe(c);
    EXPECT_TRUE(oa_test::near(r.weights.to_vector(), want.probs, kAtol, kRtol)) << "weights " << describe(c);
  }
}

// Causal rows of the softmax kernel past its register slots (16385 keys)
// and unaligned (4099), with masks; row i sees i + Sk - Sq + 1 keys, so the
// visible end falls inside a slot of 4 columns.
TEST(AttentionMaterialized, CausalLongRowsMatchReference) {
  std::uint32_t seed = 1200;
  for (const Case& c : {Case{1, 6, 4099, 4, 4, MaskKind::PerRow, true}, Case{2, 5, 16385, 4, 4, MaskKind::Broadcast, true},
                        Case{1, 7, 16388, 4, 4, MaskKind::None, true, ml::CausalVariant::UpperLeft}}) {
    Inputs in = make_inputs(c, seed += 10);
    auto r = ml::scaled_dot_product_attention_with_weights(in.mq, in.mk, in.mv, in.mmask, {}, c.causal, c.variant);
    const auto want = ref::attention(in.problem, to_f64(in.q), to_f64(in.k), to_f64(in.v));
    EXPECT_TRUE(oa_test::near(r.output.to_vector(), want.out, kAtol, kRtol)) << "output " << describe(c);
    EXPECT_TRUE(oa_test::near(r.weights.to_vector(), want.probs, 1e-10, kRtol)) << "weights " << describe(c);
  }
}

TEST(AttentionMaterialized, BackwardMatchesReference) {
  std::uint32_t seed = 1300;
  for (const Case& c : kSweep) {
    Inputs in = make_inputs(c, seed += 10);
    auto f = ml::scaled_dot_product_attention_with_weights(in.mq, in.mk, in.mv, in.mmask, {}, c.causal, c.variant);
    oa::TraceCapture trace(engine());
    auto g = ml::attention_weights_backward(in.mq, in.mk, in.mv, f.weights, in.mgrad, static_cast<float>(in.problem.scale));
    EXPECT_EQ(only_op(trace).label(), std::string(kSdpa) + " backward");
    expect_gradients(g, in, describe(c));
  }
}

// The fully masked example: q = k = I, v = [[1, 2], [3, 4]], mask
// [[0, -inf], [-inf, -inf]], scale 1/sqrt(2); loss = sum(output row 0), so
// grad = [[1, 1], [0, 0]]. Both paths give output [[1, 2], [0, 0]], dq = dk = 0
// and dv = [[1, 1], [0, 0]].
struct MaskedExample {
  Matrix q = Matrix::from_vector({1, 2, 2}, std::vector<float>{1, 0, 0, 1});
  Matrix k = Matrix::from_vector({1, 2, 2}, std::vector<float>{1, 0, 0, 1});
  Matrix v = Matrix::from_vector({1, 2, 2}, std::vector<float>{1, 2, 3, 4});
  Matrix mask = Matrix::from_vector({2, 2}, std::vector<float>{0, -kInf, -kInf, -kInf});
  Matrix grad = Matrix::from_vector({1, 2, 2}, std::vector<float>{1, 1, 0, 0});
  float scale = 1.0f / std::sqrt(2.0f);
};

void expect_masked_example(const Matrix& output, const ml::AttentionGradients& g) {
  EXPECT_EQ(output.to_vector(), (std::vector<float>{1, 2, 0, 0}));
  EXPECT_EQ(g.q.to_vector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(g.k.to_vector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(g.v.to_vector(), (std::vector<float>{1, 1, 0, 0}));
}

TEST(AttentionFlash, FullyMaskedRow) {
  MaskedExample e;
  auto r = ml::flash_attention(e.q, e.k, e.v, e.mask, e.scale, false);
  auto lse = r.log_sum_exp.to_vector();
  EXPECT_FLOAT_EQ(lse[0], e.scale);
  EXPECT_EQ(lse[1], -kInf);
  expect_masked_example(r.output, ml::flash_attention_backward(e.q, e.k, e.v, e.mask, r.output, r.softmax_stats, e.grad, e.scale, false));
}

TEST(AttentionMaterialized, FullyMaskedRow) {
  MaskedExample e;
  auto r = ml::scaled_dot_product_attention_with_weights(e.q, e.k, e.v, e.mask, e.scale, false);
  EXPECT_EQ(r.weights.to_vector(), (std::vector<float>{1, 0, 0, 0}));
  expect_masked_example(r.output, ml::attention_weights_backward(e.q, e.k, e.v, r.weights, e.grad, e.scale));
}

// Causal with Sq = 1 < Sk = 3 is aligned bottom-right: the query sees all
// three keys; with q = 0 the weights are uniform and the output is 6.
TEST(AttentionFlash, CausalBottomRight) {
  auto q = Matrix::from_vector({1, 1, 1}, std::vector<float>{0});
  auto k = Matrix::from_vector({1, 3, 1}, std::vector<float>{1, 2, 3});
  auto v = Matrix::from_vector({1, 3, 1}, std::vector<float>{3, 6, 9});
  EXPECT_FLOAT_EQ(ml::flash_attention_causal(q, k, v, 1.0f).item(), 6.0f);
  EXPECT_FLOAT_EQ(ml::scaled_dot_product_attention(q, k, v, Matrix(), 1.0f, true).item(), 6.0f);
}

TEST(AttentionMaterialized, CausalBottomRight) {
  auto q = Matrix::from_vector({1, 1, 1}, std::vector<float>{0});
  auto k = Matrix::from_vector({1, 3, 1}, std::vector<float>{1, 2, 3});
  auto v = Matrix::from_vector({1, 3, 1}, std::vector<float>{3, 6, 9});
  EXPECT_FLOAT_EQ(ml::scaled_dot_product_attention_with_weights(q, k, v, Matrix(), 1.0f, true).output.item(), 6.0f);
}

TEST(AttentionMaterialized, PathChoice) {
  Inputs small = make_inputs({1, 3, 4, 8, 8, MaskKind::None, false}, 7);
  oa::TraceCapture trace(engine());
  ml::scaled_dot_product_attention(small.mq, small.mk, small.mv);
  EXPECT_EQ(std::get<std::string>(*only_op(trace).attribute("path")), "flash");
  // Head dims past the flash kernels' 256 take the materialised path.
  const Case wide{1, 3, 4, 300, 2, MaskKind::None, true};
  Inputs in = make_inputs(wide, 9);
  oa::TraceCapture trace2(engine());
  Matrix out = ml::scaled_dot_product_attention(in.mq, in.mk, in.mv, Matrix(), {}, true);
  EXPECT_EQ(std::get<std::string>(*only_op(trace2).attribute("path")), "materialized");
  const auto want = ref::attention(in.problem, to_f64(in.q), to_f64(in.k), to_f64(in.v));
  EXPECT_TRUE(oa_test::near(out.to_vector(), want.out, kAtol, kRtol));
}

TEST(AttentionFlash, PackedCausalMatchesHeads) {
  const std::int64_t B = 2, S = 19, H = 3, Dh = 8, D = H * Dh;
  auto qv = random_floats(static_cast<std::size_t>(B * S * D), 71);
  auto kv = random_floats(static_cast<std::size_t>(B * S * D), 72);
  auto vv = random_floats(static_cast<std::size_t>(B * S * D), 73);
  auto q = Matrix::from_vector({B * S, D}, qv), k = Matrix::from_vector({B * S, D}, kv), v = Matrix::from_vector({B * S, D}, vv);
  oa::TraceCapture trace(engine());
  Matrix out = ml::scaled_dot_product_attention_causal(q, k, v, S, H);
  const auto op = only_op(trace);
  EXPECT_EQ(op.name, "oa::ml::scaled_dot_product_attention_causal");
  EXPECT_TRUE(op.dispatches == 1u || op.dispatches == 2u) << op.dispatches;
  EXPECT_EQ(out.shape(), (Shape{B * S, D}));
  ref::AttentionProblem p;
  p.bh = B * H;
  p.sq = p.sk = S;
  p.dh = p.dv = Dh;
  p.scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  p.causal = true;
  const auto heads = ref::attention(p, ref::split_heads(to_f64(qv), B, S, H, Dh), ref::split_heads(to_f64(kv), B, S, H, Dh),
                                    ref::split_heads(to_f64(vv), B, S, H, Dh));
  EXPECT_TRUE(oa_test::near(ml::split_heads(out, B, S, H).to_vector(), heads.out, kAtol, kRtol));
}

TEST(AttentionFlash, Errors) {
  auto q = Matrix::zeros({2, 3, 4}), k = Matrix::zeros({2, 5, 4}), v = Matrix::zeros({2, 5, 6});
  oa::TraceCapture trace(engine());
  using oa::ErrorKind;
  EXPECT_TRUE(oa_test::throws([&] { ml::flash_attention(q, Matrix::zeros({2, 5, 3}), v); }, ErrorKind::InvalidArgument,
                              {"oa::ml::scaled_dot_product_attention: k must be", "[2, 5, 3]", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q, k, Matrix::zeros({2, 4, 6})); }, ErrorKind::InvalidArgument,
                              {"scaled_dot_product_attention: v must be", "[2, 4, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention_with_weights(Matrix::zeros({6, 4}), k, v); },
                              ErrorKind::InvalidArgument, {"scaled_dot_product_attention: q must be", "[6, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::flash_attention(q, k, v, Matrix::zeros({3, 4})); }, ErrorKind::InvalidArgument,
                              {"scaled_dot_product_attention: attn_mask", "[3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::flash_attention(Matrix::zeros({1, 2, 300}), Matrix::zeros({1, 2, 300}), Matrix::zeros({1, 2, 3})); },
                              ErrorKind::Unsupported, {"scaled_dot_product_attention", "300"}));
  EXPECT_TRUE(oa_test::throws(
      [&] { ml::scaled_dot_product_attention_causal(Matrix::zeros({6, 4}), Matrix::zeros({6, 4}), Matrix::zeros({6, 4}), 4, 2); },
      ErrorKind::InvalidArgument, {"oa::ml::scaled_dot_product_attention_causal", "[6, 4]"}));
  EXPECT_TRUE(oa_test::throws(
      [&] {
        auto out = Matrix::zeros({2, 3, 6});
        ml::flash_attention_backward(q, k, v, Matrix(), out, Matrix::zeros({2, 4}), out, 1.0f, false);
      },
      ErrorKind::InvalidArgument, {"scaled_dot_product_attention backward", "[2, 4]"}));
  EXPECT_TRUE(trace.ops().empty());
}

// ── autograd ────────────────────────────────────────────────────────────────
// Gradients through autograd::backward against central finite differences of
// the f64 references (tests/support/gradcheck.hpp).

using oa::test::gradcheck;
using oa::test::GradInput;
using oa::test::random_input;
using Inputs64 = std::vector<std::vector<double>>;

TEST(AttentionAutograd, HeadsGradients) {
  const std::int64_t B = 2, S = 3, H = 2, Dh = 3;
  gradcheck({random_input({B * S, H * Dh}, 1)}, [&](const std::vector<Matrix>& x) { return ml::split_heads(x[0], B, S, H); },
            [&](const Inputs64& x) { return ref::split_heads(x[0], B, S, H, Dh); });
  gradcheck({random_input({B * H, S, Dh}, 2)}, [&](const std::vector<Matrix>& x) { return ml::merge_heads(x[0], B, S, H); },
            [&](const Inputs64& x) { return ref::merge_heads(x[0], B, S, H, Dh); });
  auto x = oa::set_requires_grad(Matrix::uniform({B * S, H * Dh}, -1, 1, 3));
  auto y = ml::split_heads(x, B, S, H);
  oa::TraceCapture trace(engine());
  oa::backward(y, Matrix::ones(y.shape()));
  EXPECT_EQ(only_op(trace).label(), "oa::ml::split_heads backward");
}

// All three results reach the loss: the backward's single pass writes every
// third of the qkv gradient.
TEST(AttentionAutograd, SplitQkvGradients) {
  const std::int64_t B = 2, S = 3, H = 2, Dh = 3;
  gradcheck({random_input({B * S, 3 * H * Dh}, 4)},
            [&](const std::vector<Matrix>& x) {
              const ml::QkvHeads r = ml::split_qkv_heads(x[0], B, S, H);
              return oa::matrix::concat({r.q, r.k * 2.0f, r.v * -1.5f}, 0);
            },
            [&](const Inputs64& x) {
              Vec out;
              const double factor[] = {1.0, 2.0, -1.5};
              for (int part = 0; part < 3; ++part)
                for (double v : ref::split_qkv_heads(x[0], B, S, H, Dh, part)) out.push_back(v * factor[part]);
              return out;
            });
  auto x = oa::set_requires_grad(Matrix::uniform({B * S, 3 * H * Dh}, -1, 1, 3));
  const ml::QkvHeads r = ml::split_qkv_heads(x, B, S, H);
  const Matrix ones = Matrix::ones(r.k.shape());
  oa::TraceCapture trace(engine());
  oa::backward(r.k, ones);
  std::size_t found = 0;
  for (const auto& op : trace.ops()) found += op.label() == "oa::ml::split_qkv_heads backward";
  EXPECT_EQ(found, 1u);
  const auto g = to_f64(oa::grad(x).to_vector());
  for (int part = 0; part < 3; ++part)
    for (double v : ref::split_qkv_heads(g, B, S, H, Dh, part)) EXPECT_EQ(v, part == 1 ? 1.0 : 0.0);
}

TEST(AttentionAutograd, SoftmaxGradients) {
  for (std::int64_t cols : {1, 7, 130}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    const std::int64_t rows = 4;
    GradInput mask{{rows, cols}, random_mask(rows, cols, 5, 0.2, 2), false};
    gradcheck({random_input({rows, cols}, 6, -3, 3), mask},
              [](const std::vector<Matrix>& x) { return ml::softmax_scaled_masked(x[0], x[1], 0.8f); },
              [=](const Inputs64& x) { return ref::softmax(x[0], rows, cols, 0.8, x[1], rows); });
  }
}

TEST(AttentionAutograd, BmmGradients) {
  std::uint64_t seed = 10;
  for (auto layout : {ml::BmmLayout::NN, ml::BmmLayout::NT, ml::BmmLayout::TN}) {
    SCOPED_TRACE(kBmmNames[static_cast<int>(layout)]);
    const BmmCase c{layout, 3, 4, 5, 2};
    for (int which = 0; which < 3; ++which) {  // both sides, then a alone, then b alone
      gradcheck({random_input(c.a_shape(), seed++, -1, 1, which != 2), random_input(c.b_shape(), seed++, -1, 1, which != 1)},
                [layout](const std::vector<Matrix>& x) { return run_bmm(layout, x[0], x[1]); },
                [c](const Inputs64& x) { return c.reference(x[0], x[1]); });
    }
  }
}

// A representative sweep over sequence lengths 1, 2, 17, 64, 65, 130 and head
// dims 1, 16, 40, 64, 128, masks of both layouts (with a fully masked row) or
// none, causal or not, Sq != Sk both ways and Dv != Dh, sized so the f64
// finite differences stay quick (and with the padded head dims of kSweep, so
// no further kernels are compiled).
const std::vector<Case> kGradSweep = {
    {1, 1, 1, 1, 1, MaskKind::None, false},       {1, 2, 2, 128, 128, MaskKind::PerRow, true},
    {1, 17, 17, 40, 40, MaskKind::None, true},    {1, 64, 64, 16, 16, MaskKind::Broadcast, false},
    {1, 65, 65, 1, 1, MaskKind::None, true},      {1, 130, 130, 1, 1, MaskKind::PerRow, true},
    {1, 17, 65, 16, 8, MaskKind::Broadcast, true}, {1, 65, 17, 40, 24, MaskKind::None, true},
    {1, 2, 130, 64, 24, MaskKind::PerRow, false},
    {1, 17, 65, 16, 8, MaskKind::Broadcast, true, ml::CausalVariant::UpperLeft},
    {1, 65, 17, 40, 24, MaskKind::None, true, ml::CausalVariant::UpperLeft},
};

std::vector<GradInput> grad_inputs(const Case& c, std::uint64_t seed) {
  std::vector<GradInput> in = {random_input({c.bh, c.sq, c.dh}, seed), random_input({c.bh, c.sk, c.dh}, seed + 1),
                               random_input({c.bh, c.sk, c.dv}, seed + 2)};
  if (c.mask != MaskKind::None) {
    const std::int64_t rows = c.mask == MaskKind::PerRow ? c.bh * c.sq : c.sq;
    in.push_back({{rows, c.sk}, random_mask(rows, c.sk, static_cast<std::uint32_t>(seed) + 3, 0.15, c.sq > 2 ? 1 : -1), false});
  }
  return in;
}

ref::AttentionProblem grad_problem(const Case& c, const Inputs64& x) {
  ref::AttentionProblem p = attention_problem(c.bh, c.sq, c.sk, c.dh, c.dv, c.causal, c.variant);
  if (x.size() > 3) {
    p.mask = x[3];
    p.mask_rows = c.mask == MaskKind::PerRow ? c.bh * c.sq : c.sq;
  }
  return p;
}

Matrix optional_mask(const std::vector<Matrix>& x) { return x.size() > 3 ? x[3] : Matrix(); }

// Finite-difference gradients of attention(x, c) (x: q, k, v and the mask
// when c has one) on every case of kGradSweep, inputs from seed + 10 on.
template <typename Attention>
void expect_sweep_gradients(std::uint64_t seed, Attention attention) {
  for (const Case& c : kGradSweep) {
    SCOPED_TRACE(describe(c));
    gradcheck(
        grad_inputs(c, seed += 10), [&](const std::vector<Matrix>& x) { return attention(x, c); },
        [&](const Inputs64& x) { return ref::attention(grad_problem(c, x), x[0], x[1], x[2]).out; });
  }
}

TEST(AttentionAutograd, FlashGradients) {
  expect_sweep_gradients(100, [](const std::vector<Matrix>& x, const Case& c) {
    return ml::scaled_dot_product_attention(x[0], x[1], x[2], optional_mask(x), {}, c.causal, ml::SdpaBackend::Auto, c.variant);
  });
}

TEST(AttentionAutograd, MaterializedGradients) {
  expect_sweep_gradients(300, [](const std::vector<Matrix>& x, const Case& c) {
    return ml::scaled_dot_product_attention_with_weights(x[0], x[1], x[2], optional_mask(x), {}, c.causal, c.variant).output;
  });
}

// Gradients that reach the extra outputs: the weights of the materialised
// path and the log-sum-exp of the flash path (no fully masked rows here: a
// -inf log-sum-exp has no finite difference).
TEST(AttentionAutograd, WeightsAndLogSumExpGradients) {
  const Case c{2, 5, 7, 6, 3, MaskKind::Broadcast, true};
  auto inputs = grad_inputs(c, 40);
  inputs[3].values = random_mask(c.sq, c.sk, 41, 0.0);
  gradcheck(
      inputs,
      [&](const std::vector<Matrix>& x) {
        return ml::scaled_dot_product_attention_with_weights(x[0], x[1], x[2], x[3], {}, c.causal, c.variant).weights;
      },
      [&](const Inputs64& x) { return ref::attention(grad_problem(c, x), x[0], x[1], x[2]).probs; });
  gradcheck(
      inputs, [&](const std::vector<Matrix>& x) { return ml::flash_attention(x[0], x[1], x[2], x[3], {}, c.causal, c.variant).log_sum_exp; },
      [&](const Inputs64& x) { return ref::attention(grad_problem(c, x), x[0], x[1], x[2]).lse; });
}

TEST(AttentionAutograd, PackedCausalGradients) {
  const std::int64_t B = 2, S = 5, H = 2, Dh = 4, D = H * Dh;
  auto ref_packed = [&](const Inputs64& x) {
    ref::AttentionProblem p;
    p.bh = B * H;
    p.sq = p.sk = S;
    p.dh = p.dv = Dh;
    p.scale = 1.0 / std::sqrt(static_cast<double>(static_cast<float>(Dh)));
    p.causal = true;
    const auto r = ref::attention(p, ref::split_heads(x[0], B, S, H, Dh), ref::split_heads(x[1], B, S, H, Dh),
                                  ref::split_heads(x[2], B, S, H, Dh));
    return ref::merge_heads(r.out, B, S, H, Dh);
  };
  gradcheck({random_input({B * S, D}, 51), random_input({B * S, D}, 52), random_input({B * S, D}, 53)},
            [&](const std::vector<Matrix>& x) { return ml::scaled_dot_product_attention_causal(x[0], x[1], x[2], S, H); },
            ref_packed);
}

// The fully masked example through autograd: backward from output with
// gradient [[1, 1], [0, 0]] (loss = sum of output row 0) on both paths.
TEST(AttentionAutograd, FullyMaskedRow) {
  for (bool flash : {true, false}) {
    SCOPED_TRACE(flash ? "flash" : "materialized");
    MaskedExample e;
    for (const Matrix* m : {&e.q, &e.k, &e.v}) oa::set_requires_grad(*m);
    Matrix out = flash ? ml::scaled_dot_product_attention(e.q, e.k, e.v, e.mask, e.scale, false)
                       : ml::scaled_dot_product_attention_with_weights(e.q, e.k, e.v, e.mask, e.scale, false).output;
    oa::TraceCapture trace(engine());
    oa::backward(out, e.grad);
    const auto op = only_op(trace);
    EXPECT_EQ(op.label(), std::string(kSdpa) + " backward");
    EXPECT_EQ(std::get<std::string>(*op.attribute("path")), flash ? "flash" : "materialized");
    expect_masked_example(out, {oa::grad(e.q), oa::grad(e.k), oa::grad(e.v)});
  }
}

}  // namespace
