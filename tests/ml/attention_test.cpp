// Attention family: heads, softmax, flash and materialised attention, batched
// products; forward against the f64 oracles in tests/reference/attention.hpp,
// backward against analytic f64 gradients, traces and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "oa/ml/attention.hpp"
#include "oa/oa.hpp"
#include "reference/attention.hpp"

namespace {

using oa::Matrix;
using oa::Shape;
using oa::reference::Vec;
namespace ml = oa::ml;
namespace ref = oa::reference;

constexpr float kInf = std::numeric_limits<float>::infinity();

oa::Engine engine() { return oa::Engine::default_engine(); }

std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// An additive mask with about `hidden` of its entries -inf (and, with
// hide_row, the whole row `hide_row` hidden).
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

Vec to_f64(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

void expect_near(const std::vector<float>& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isinf(want[i]) ? got[i] == want[i] : std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i]));
    if (!ok && bad++ < 5) ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what;
}

template <typename F>
void expect_error(F&& f, oa::ErrorKind kind, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error thrown; expected one naming " << needle;
  } catch (const oa::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// ── heads ───────────────────────────────────────────────────────────────────

TEST(AttentionHeads, SplitExample) {
  auto x = Matrix::from_vector({2, 4}, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  oa::TraceCapture trace(engine());
  Matrix y = ml::split_heads(x, 1, 2, 2);
  auto ops = trace.ops();
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{0, 1, 4, 5, 2, 3, 6, 7}));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::ml::matrix::split_heads");
  EXPECT_EQ(ops[0].dispatches, 1u);
}

TEST(AttentionHeads, MergeInvertsSplit) {
  const std::int64_t B = 3, S = 5, H = 4, Dh = 3;
  auto values = random_floats(static_cast<std::size_t>(B * S * H * Dh), 11);
  auto x = Matrix::from_vector({B * S, H * Dh}, values);
  Matrix y = ml::split_heads(x, B, S, H);
  EXPECT_EQ(y.shape(), (Shape{B * H, S, Dh}));
  expect_near(y.to_vector(), ref::split_heads(to_f64(values), B, S, H, Dh), 0.0, "split");
  Matrix z = ml::merge_heads(y, B, S, H);
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

TEST(AttentionHeads, Errors) {
  auto x = Matrix::zeros({4, 6});
  oa::TraceCapture trace(engine());
  expect_error([&] { ml::split_heads(x, 2, 2, 4); }, oa::ErrorKind::InvalidArgument, "oa::ml::matrix::split_heads");
  expect_error([&] { ml::split_heads(x, 3, 2, 2); }, oa::ErrorKind::InvalidArgument, "[4, 6]");
  expect_error([&] { ml::split_heads(x, 2, 2, 0); }, oa::ErrorKind::InvalidArgument, "num_heads");
  expect_error([&] { ml::merge_heads(x, 2, 2, 2); }, oa::ErrorKind::InvalidArgument, "oa::ml::matrix::merge_heads");
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
  // boundary (256 * 8 = 2048) and a row past 65536.
  for (std::int64_t cols : {1, 5, 64, 65, 513, 2049, 70001}) {
    const std::int64_t rows = cols > 2048 ? 2 : 37;
    auto xv = random_floats(static_cast<std::size_t>(rows * cols), static_cast<std::uint32_t>(cols), -4.0f, 4.0f);
    auto mv = random_mask(rows, cols, static_cast<std::uint32_t>(cols) + 1, 0.2, rows - 1);
    auto x = Matrix::from_vector({rows, cols}, xv);
    auto mask = Matrix::from_vector({rows, cols}, mv);
    oa::TraceCapture trace(engine());
    auto y = ml::softmax_scaled_masked(x, mask, 0.7f);
    auto ops = trace.ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].name, "oa::ml::matrix::softmax_scaled_masked");
    auto got = y.to_vector();
    expect_near(got, ref::softmax(to_f64(xv), rows, cols, 0.7, to_f64(mv), rows), 2e-5, "softmax cols " + std::to_string(cols));
    for (std::int64_t c = 0; c < cols; ++c) ASSERT_EQ(got[static_cast<std::size_t>((rows - 1) * cols + c)], 0.0f);
  }
}

TEST(AttentionSoftmax, BroadcastMask) {
  const std::int64_t BH = 3, Sq = 5, Sk = 7;
  auto xv = random_floats(static_cast<std::size_t>(BH * Sq * Sk), 5);
  auto mv = random_mask(Sq, Sk, 6, 0.3);
  auto y = ml::softmax_scaled_masked(Matrix::from_vector({BH, Sq, Sk}, xv), Matrix::from_vector({Sq, Sk}, mv), 1.5f);
  expect_near(y.to_vector(), ref::softmax(to_f64(xv), BH * Sq, Sk, 1.5, to_f64(mv), Sq), 2e-5, "broadcast softmax");
}

TEST(AttentionSoftmax, BackwardMatchesReference) {
  for (std::int64_t cols : {3, 100, 3000}) {
    const std::int64_t rows = 9;
    auto xv = random_floats(static_cast<std::size_t>(rows * cols), 21);
    auto gv = random_floats(static_cast<std::size_t>(rows * cols), 22);
    auto y = ml::softmax_scaled_masked(Matrix::from_vector({rows, cols}, xv), Matrix(), 2.0f);
    oa::TraceCapture trace(engine());
    auto dx = ml::softmax_scaled_masked_backward(y, Matrix::from_vector({rows, cols}, gv), 2.0f);
    auto ops = trace.ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].label(), "oa::ml::matrix::softmax_scaled_masked backward");
    const Vec yr = ref::softmax(to_f64(xv), rows, cols, 2.0);
    expect_near(dx.to_vector(), ref::softmax_backward(yr, to_f64(gv), rows, cols, 2.0), 2e-5, "softmax backward");
  }
}

TEST(AttentionSoftmax, Errors) {
  auto x = Matrix::zeros({3, 4});
  oa::TraceCapture trace(engine());
  expect_error([&] { ml::softmax_scaled_masked(x, Matrix::zeros({4, 3}), 1.0f); }, oa::ErrorKind::InvalidArgument,
               "oa::ml::matrix::softmax_scaled_masked: mask [4, 3]");
  expect_error([&] { ml::softmax_scaled_masked(Matrix::zeros({0, 4}), Matrix(), 1.0f); }, oa::ErrorKind::InvalidArgument,
               "softmax_scaled_masked");
  expect_error([&] { ml::softmax_scaled_masked_backward(x, Matrix::zeros({3, 5}), 1.0f); }, oa::ErrorKind::InvalidArgument,
               "softmax_scaled_masked backward");
  EXPECT_TRUE(trace.ops().empty());
}

// ── attention ───────────────────────────────────────────────────────────────

enum class MaskKind { None, PerRow, Broadcast };

struct Case {
  std::int64_t bh, sq, sk, dh, dv;
  MaskKind mask;
  bool causal;
};

std::string describe(const Case& c) {
  return "bh " + std::to_string(c.bh) + " sq " + std::to_string(c.sq) + " sk " + std::to_string(c.sk) + " dh " +
         std::to_string(c.dh) + " dv " + std::to_string(c.dv) + " mask " + std::to_string(static_cast<int>(c.mask)) +
         (c.causal ? " causal" : "");
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
  p.bh = c.bh;
  p.sq = c.sq;
  p.sk = c.sk;
  p.dh = c.dh;
  p.dv = c.dv;
  p.scale = 1.0 / std::sqrt(static_cast<double>(c.dh));
  p.causal = c.causal;
  if (c.mask != MaskKind::None) {
    const std::int64_t rows = c.mask == MaskKind::PerRow ? c.bh * c.sq : c.sq;
    in.mask = random_mask(rows, c.sk, seed + 4, 0.15, c.sq > 2 ? 1 : -1);
    in.mmask = Matrix::from_vector({rows, c.sk}, in.mask);
    p.mask = to_f64(in.mask);
    p.mask_rows = rows;
  }
  return in;
}

// Every sequence length of 1, 2, 17, 64, 65, 130 and head dim of 1, 16, 40,
// 64, 128 appears, with and without masks (both layouts), causal or not,
// Sq != Sk both ways, and Dv != Dh.
const std::vector<Case> kSweep = {
    {1, 1, 1, 1, 1, MaskKind::None, false},          {2, 2, 2, 16, 16, MaskKind::PerRow, true},
    {2, 17, 17, 40, 40, MaskKind::None, true},       {1, 64, 64, 64, 64, MaskKind::Broadcast, false},
    {1, 65, 65, 128, 128, MaskKind::None, true},     {1, 130, 130, 16, 16, MaskKind::PerRow, true},
    {2, 17, 65, 40, 24, MaskKind::Broadcast, true},  {1, 65, 17, 64, 16, MaskKind::None, true},
    {3, 130, 2, 1, 3, MaskKind::PerRow, false},      {1, 2, 130, 128, 40, MaskKind::None, false},
};

TEST(AttentionFlash, ForwardMatchesReference) {
  std::uint32_t seed = 100;
  for (const Case& c : kSweep) {
    Inputs in = make_inputs(c, seed += 10);
    oa::TraceCapture trace(engine());
    auto r = ml::flash_attention(in.mq, in.mk, in.mv, in.mmask, {}, c.causal);
    auto ops = trace.ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].name, "oa::ml::matrix::scaled_dot_product_attention");
    EXPECT_EQ(ops[0].dispatches, 1u);
    EXPECT_EQ(r.output.shape(), (Shape{c.bh, c.sq, c.dv}));
    const auto want = ref::attention(in.problem, to_f64(in.q), to_f64(in.k), to_f64(in.v));
    expect_near(r.output.to_vector(), want.out, 2e-5, "output " + describe(c));
    expect_near(r.log_sum_exp.to_vector(), want.lse, 2e-5, "lse " + describe(c));
  }
}

TEST(AttentionFlash, BackwardMatchesReference) {
  std::uint32_t seed = 500;
  for (const Case& c : kSweep) {
    Inputs in = make_inputs(c, seed += 10);
    auto f = ml::flash_attention(in.mq, in.mk, in.mv, in.mmask, {}, c.causal);
    const auto scale = static_cast<float>(in.problem.scale);
    oa::TraceCapture trace(engine());
    auto g = ml::flash_attention_backward(in.mq, in.mk, in.mv, in.mmask, f.output, f.log_sum_exp, in.mgrad, scale, c.causal);
    auto ops = trace.ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].label(), "oa::ml::matrix::scaled_dot_product_attention backward");
    EXPECT_EQ(ops[0].dispatches, 2u);
    const auto want = ref::attention_backward(in.problem, to_f64(in.q), to_f64(in.k), to_f64(in.v), to_f64(in.grad));
    expect_near(g.q.to_vector(), want.dq, 5e-5, "dq " + describe(c));
    expect_near(g.k.to_vector(), want.dk, 5e-5, "dk " + describe(c));
    expect_near(g.v.to_vector(), want.dv, 5e-5, "dv " + describe(c));
  }
}

// The fully masked example: q = k = I, v = [[1, 2], [3, 4]], mask
// [[0, -inf], [-inf, -inf]], scale 1/sqrt(2); loss = sum(output row 0).
TEST(AttentionFlash, FullyMaskedRow) {
  auto q = Matrix::from_vector({1, 2, 2}, std::vector<float>{1, 0, 0, 1});
  auto k = Matrix::from_vector({1, 2, 2}, std::vector<float>{1, 0, 0, 1});
  auto v = Matrix::from_vector({1, 2, 2}, std::vector<float>{1, 2, 3, 4});
  auto mask = Matrix::from_vector({2, 2}, std::vector<float>{0, -kInf, -kInf, -kInf});
  const float scale = 1.0f / std::sqrt(2.0f);
  auto r = ml::flash_attention(q, k, v, mask, scale, false);
  EXPECT_EQ(r.output.to_vector(), (std::vector<float>{1, 2, 0, 0}));
  auto lse = r.log_sum_exp.to_vector();
  EXPECT_FLOAT_EQ(lse[0], scale);
  EXPECT_EQ(lse[1], -kInf);
  auto grad = Matrix::from_vector({1, 2, 2}, std::vector<float>{1, 1, 0, 0});
  auto g = ml::flash_attention_backward(q, k, v, mask, r.output, r.log_sum_exp, grad, scale, false);
  EXPECT_EQ(g.q.to_vector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(g.k.to_vector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(g.v.to_vector(), (std::vector<float>{1, 1, 0, 0}));
}

// Causal with Sq = 1 < Sk = 3 is aligned bottom-right: the query sees all keys.
TEST(AttentionFlash, CausalBottomRight) {
  auto q = Matrix::from_vector({1, 1, 1}, std::vector<float>{0});
  auto k = Matrix::from_vector({1, 3, 1}, std::vector<float>{1, 2, 3});
  auto v = Matrix::from_vector({1, 3, 1}, std::vector<float>{3, 6, 9});
  EXPECT_FLOAT_EQ(ml::flash_attention_causal(q, k, v, 1.0f).item(), 6.0f);
}

TEST(AttentionFlash, PackedCausalMatchesHeads) {
  const std::int64_t B = 2, S = 19, H = 3, Dh = 8, D = H * Dh;
  auto qv = random_floats(static_cast<std::size_t>(B * S * D), 71);
  auto kv = random_floats(static_cast<std::size_t>(B * S * D), 72);
  auto vv = random_floats(static_cast<std::size_t>(B * S * D), 73);
  auto q = Matrix::from_vector({B * S, D}, qv), k = Matrix::from_vector({B * S, D}, kv), v = Matrix::from_vector({B * S, D}, vv);
  oa::TraceCapture trace(engine());
  Matrix out = ml::scaled_dot_product_attention_causal(q, k, v, S, H);
  auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::ml::matrix::scaled_dot_product_attention_causal");
  EXPECT_EQ(out.shape(), (Shape{B * S, D}));
  ref::AttentionProblem p;
  p.bh = B * H;
  p.sq = p.sk = S;
  p.dh = p.dv = Dh;
  p.scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  p.causal = true;
  const auto heads = ref::attention(p, ref::split_heads(to_f64(qv), B, S, H, Dh), ref::split_heads(to_f64(kv), B, S, H, Dh),
                                    ref::split_heads(to_f64(vv), B, S, H, Dh));
  expect_near(ml::split_heads(out, B, S, H).to_vector(), heads.out, 2e-5, "packed causal");
}

TEST(AttentionFlash, Errors) {
  auto q = Matrix::zeros({2, 3, 4}), k = Matrix::zeros({2, 5, 4}), v = Matrix::zeros({2, 5, 6});
  oa::TraceCapture trace(engine());
  const std::string name = "oa::ml::matrix::scaled_dot_product_attention";
  expect_error([&] { ml::flash_attention(q, Matrix::zeros({2, 5, 3}), v); }, oa::ErrorKind::InvalidArgument, name + ": k must be");
  expect_error([&] { ml::flash_attention(q, k, Matrix::zeros({2, 4, 6})); }, oa::ErrorKind::InvalidArgument, name + ": v must be");
  expect_error([&] { ml::flash_attention(Matrix::zeros({6, 4}), k, v); }, oa::ErrorKind::InvalidArgument, name + ": q must be");
  expect_error([&] { ml::flash_attention(q, k, v, Matrix::zeros({3, 4})); }, oa::ErrorKind::InvalidArgument, "additive_mask");
  expect_error([&] { ml::flash_attention(Matrix::zeros({1, 2, 300}), Matrix::zeros({1, 2, 300}), Matrix::zeros({1, 2, 3})); },
               oa::ErrorKind::Unsupported, name);
  expect_error([&] { ml::scaled_dot_product_attention_causal(Matrix::zeros({6, 4}), Matrix::zeros({6, 4}), Matrix::zeros({6, 4}), 4, 2); },
               oa::ErrorKind::InvalidArgument, "oa::ml::matrix::scaled_dot_product_attention_causal");
  expect_error([&] {
    auto out = Matrix::zeros({2, 3, 6});
    ml::flash_attention_backward(q, k, v, Matrix(), out, Matrix::zeros({2, 4}), out, 1.0f, false);
  }, oa::ErrorKind::InvalidArgument, name + " backward");
  EXPECT_TRUE(trace.ops().empty());
}

}  // namespace
