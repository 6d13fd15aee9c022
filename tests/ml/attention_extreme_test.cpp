// Attention family under extreme values and PyTorch-shaped inputs: finite huge
// masks (-1e4 .. -FLT_MAX, whole and partial rows, with causal), large logits,
// large common offsets, NaN propagation, empty and K = 0 products, the
// backend choice, 4-D inputs and broadcast masks. Every path (flash with its
// fused or GEMM backward, and materialised) against the f64 references in tests/reference/attention.hpp,
// gradients against the analytic f64 backward and, where the function is
// smooth, central finite differences.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "ml/attention_common.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using namespace oa::attention_test;

bool any_nan(const std::vector<float>& v) {
  for (float x : v)
    if (std::isnan(x)) return true;
  return false;
}

// One attention problem [BH, Sq, Dh] x [BH, Sk, Dh] x [BH, Sk, Dv] on the
// device and as the f64 problem (masked logits rounded to f32).
struct Problem {
  std::int64_t bh, sq, sk, dh, dv;
  bool causal;
  std::vector<float> q, k, v, grad, mask;  // mask [BH*Sq, Sk] or empty
  Matrix mq, mk, mv, mgrad, mmask;
  ref::AttentionProblem p;

  Problem(std::int64_t bh_, std::int64_t sq_, std::int64_t sk_, std::int64_t dh_, std::int64_t dv_, bool causal_, std::uint32_t seed)
      : bh(bh_), sq(sq_), sk(sk_), dh(dh_), dv(dv_), causal(causal_) {
    q = random_floats(static_cast<std::size_t>(bh * sq * dh), seed);
    k = random_floats(static_cast<std::size_t>(bh * sk * dh), seed + 1);
    v = random_floats(static_cast<std::size_t>(bh * sk * dv), seed + 2);
    grad = random_floats(static_cast<std::size_t>(bh * sq * dv), seed + 3);
    p.bh = bh;
    p.sq = sq;
    p.sk = sk;
    p.dh = dh;
    p.dv = dv;
    p.scale = 1.0 / std::sqrt(static_cast<double>(static_cast<float>(dh)));
    p.causal = causal;
    p.f32_masked_logits = true;
  }
  void set_mask(std::vector<float> m) {
    mask = std::move(m);
    p.mask = to_f64(mask);
    p.mask_rows = bh * sq;
  }
  void upload() {
    mq = Matrix::from_vector({bh, sq, dh}, q);
    mk = Matrix::from_vector({bh, sk, dh}, k);
    mv = Matrix::from_vector({bh, sk, dv}, v);
    mgrad = Matrix::from_vector({bh, sq, dv}, grad);
    if (!mask.empty()) mmask = Matrix::from_vector({bh * sq, sk}, mask);
  }
  float scale() const { return static_cast<float>(p.scale); }
};

// A mask of `value` on: every key of rows 1 and 2 (whole rows), about 40% of
// the keys of the other rows (partial rows, never the last key so that those
// rows keep a visible 0 key); 0 elsewhere.
std::vector<float> huge_mask(std::int64_t rows, std::int64_t sq, std::int64_t sk, float value, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<float> m(static_cast<std::size_t>(rows * sk), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < sk; ++c) {
      const bool whole = r % sq == 1 || r % sq == 2;
      if (whole || (c + 1 < sk && u(gen) < 0.4)) m[static_cast<std::size_t>(r * sk + c)] = value;
    }
  return m;
}

struct PathResult {
  std::vector<float> out, dq, dk, dv;
};

// Output and gradients of sum(out * grad) through autograd on one backend.
PathResult run_path(Problem& pr, ml::SdpaBackend backend) {
  pr.upload();
  for (const Matrix* m : {&pr.mq, &pr.mk, &pr.mv}) oa::set_requires_grad(*m);
  oa::TraceCapture trace(engine());
  Matrix out = ml::scaled_dot_product_attention(pr.mq, pr.mk, pr.mv, pr.mmask, {}, pr.causal, backend);
  const auto ops = trace.ops();
  EXPECT_EQ(ops.size(), 1u);
  if (!ops.empty()) {
    EXPECT_EQ(std::get<std::string>(*ops[0].attribute("path")), backend == ml::SdpaBackend::Flash ? "flash" : "materialized");
  }
  oa::backward(out, pr.mgrad);
  return {out.to_vector(), oa::grad(pr.mq).to_vector(), oa::grad(pr.mk).to_vector(), oa::grad(pr.mv).to_vector()};
}

void expect_matches_reference(Problem& pr, ml::SdpaBackend backend, double atol, double rtol) {
  const PathResult r = run_path(pr, backend);
  const auto want = ref::attention(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v));
  const auto g = ref::attention_backward(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v), to_f64(pr.grad));
  EXPECT_FALSE(any_nan(r.out) || any_nan(r.dq) || any_nan(r.dk) || any_nan(r.dv));
  EXPECT_TRUE(oa_test::near(r.out, want.out, atol, rtol)) << "output";
  EXPECT_TRUE(oa_test::near(r.dq, g.dq, atol, rtol)) << "dq";
  EXPECT_TRUE(oa_test::near(r.dk, g.dk, atol, rtol)) << "dk";
  EXPECT_TRUE(oa_test::near(r.dv, g.dv, atol, rtol)) << "dv";
}

const float kHugeMasks[] = {-1e4f, -1e9f, -1e30f, -FLT_MAX};

// ── finite huge masks ──────────────────────────────────────────────────────

TEST(AttentionHugeMask, BothPathsMatchReference) {
  std::uint32_t seed = 10;
  for (float value : kHugeMasks)
    for (bool causal : {false, true})
      for_each_path("mask " + std::to_string(value) + (causal ? " causal" : ""), [&](ml::SdpaBackend backend) {
        Problem pr(2, 6, 9, 8, 5, causal, seed += 10);
        pr.set_mask(huge_mask(pr.bh * pr.sq, pr.sq, pr.sk, value, seed + 7));
        // Near -1e4 a masked f32 logit keeps ~1e-3 of the score; an f32 score
        // error can move it to the next f32 value.
        const double rtol = value == -1e4f ? 2e-3 : kRtol;
        expect_matches_reference(pr, backend, kAtol, rtol);
      });
}

// A row masked by -FLT_MAX everywhere is uniform: its output is the mean of v
// (PyTorch's answer); a row of -FLT_MAX and 0 weights only its 0 keys.
TEST(AttentionHugeMask, LowestFloatRowIsUniform) {
  for_each_path("", [&](ml::SdpaBackend backend) {
    Problem pr(1, 2, 3, 4, 2, false, 77);
    pr.set_mask({-FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX, 0.0f, -FLT_MAX});
    const PathResult r = run_path(pr, backend);
    for (std::int64_t d = 0; d < 2; ++d) {
      const double mean = (pr.v[static_cast<std::size_t>(d)] + pr.v[static_cast<std::size_t>(2 + d)] + pr.v[static_cast<std::size_t>(4 + d)]) / 3.0;
      EXPECT_NEAR(r.out[static_cast<std::size_t>(d)], mean, 1e-6);
      EXPECT_FLOAT_EQ(r.out[static_cast<std::size_t>(2 + d)], pr.v[static_cast<std::size_t>(2 + d)]);
    }
    EXPECT_FALSE(any_nan(r.dq) || any_nan(r.dk) || any_nan(r.dv));
  });
}

// -FLT_MAX on every key plus logits large enough that their sum overflows to
// -inf, and causal rows that see nothing: no NaN; rows left with no key are
// zero, the rest an ordinary softmax.
TEST(AttentionHugeMask, HugeSumsNeverMakeNaN) {
  for_each_path("", [&](ml::SdpaBackend backend) {
    Problem pr(1, 4, 3, 2, 2, true, 91);  // Sq > Sk causal: query 0 sees no key
    for (auto& x : pr.q) x *= 1e34f;      // |score * scale| ~ 1e33: adds to -FLT_MAX past the f32 range
    std::vector<float> mask(12, -FLT_MAX);
    mask[10] = 0.0f;  // query 3 keeps key 1 unmasked
    pr.set_mask(mask);
    pr.upload();
    Matrix out = ml::scaled_dot_product_attention(pr.mq, pr.mk, pr.mv, pr.mmask, {}, true, backend);
    const auto got = out.to_vector();
    const auto want = ref::attention(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v));
    EXPECT_FALSE(any_nan(got));
    EXPECT_TRUE(oa_test::near(got, want.out, kAtol, kRtol));
    EXPECT_EQ(got[0], 0.0f);
  });
}

// The flash path's saved statistics: with -1e9 hiding whole rows the
// log-sum-exp (-1e9 + log Sk) cannot hold log Sk in f32; the backward must
// still see probabilities 1/Sk, not 1.
TEST(AttentionHugeMask, FlashBackwardOfHiddenRows) {
  Problem pr(2, 5, 7, 8, 8, false, 123);
  pr.set_mask(std::vector<float>(static_cast<std::size_t>(2 * 5 * 7), -1e9f));
  pr.upload();
  auto f = ml::flash_attention(pr.mq, pr.mk, pr.mv, pr.mmask, pr.scale(), false);
  EXPECT_EQ(f.softmax_stats.shape(), (Shape{2, 5, 2}));
  auto g = ml::flash_attention_backward(pr.mq, pr.mk, pr.mv, pr.mmask, f.output, f.softmax_stats, pr.mgrad, pr.scale(), false);
  const auto want = ref::attention_backward(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v), to_f64(pr.grad));
  EXPECT_TRUE(oa_test::near(g.q.to_vector(), want.dq, kAtol, kRtol));
  EXPECT_TRUE(oa_test::near(g.k.to_vector(), want.dk, kAtol, kRtol));
  EXPECT_TRUE(oa_test::near(g.v.to_vector(), want.dv, kAtol, kRtol));
}

// Finite differences of the exact f64 function where huge masks hide part of
// each row (hidden keys have probability exactly 0 in f32 and f64 alike).
TEST(AttentionHugeMask, PartialRowGradients) {
  using oa::test::GradInput;
  std::uint64_t seed = 700;
  for (float value : kHugeMasks)
    for_each_path(std::to_string(value), [&](ml::SdpaBackend backend) {
      const std::int64_t bh = 2, sq = 3, sk = 5, dh = 4;
      std::vector<float> mask(static_cast<std::size_t>(bh * sq * sk), 0.0f);
      for (std::size_t i = 0; i < mask.size(); ++i)
        if (i % 3 == 1) mask[i] = value;
      std::vector<GradInput> inputs = {oa::test::random_input({bh, sq, dh}, seed += 10), oa::test::random_input({bh, sk, dh}, seed + 1),
                                       oa::test::random_input({bh, sk, dh}, seed + 2)};
      const Matrix m = Matrix::from_vector({bh * sq, sk}, mask);
      ref::AttentionProblem p;
      p.bh = bh;
      p.sq = sq;
      p.sk = sk;
      p.dh = p.dv = dh;
      p.scale = 0.5;
      p.causal = true;
      p.mask = to_f64(mask);
      p.mask_rows = bh * sq;
      oa::test::gradcheck(
          inputs, [&](const std::vector<Matrix>& x) { return ml::scaled_dot_product_attention(x[0], x[1], x[2], m, 0.5f, true, backend); },
          [&](const std::vector<Vec>& x) { return ref::attention(p, x[0], x[1], x[2]).out; });
    });
}

// ── large logits and large common offsets ──────────────────────────────────

// Scores offset + r with offset = 2^e (1e4 .. 1e6) and r a small spread:
// q = [2^e, small halves], k = [1, small halves], so every score is exact in
// f32 and only the kernels' own rounding can differ from f64.
Problem large_logit_problem(int exponent, bool causal, std::uint32_t seed) {
  Problem pr(2, 7, 9, 8, 4, causal, seed);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> halves(-2, 2);
  for (std::int64_t r = 0; r < pr.bh * pr.sq; ++r)
    for (std::int64_t d = 0; d < pr.dh; ++d)
      pr.q[static_cast<std::size_t>(r * pr.dh + d)] = d == 0 ? std::ldexp(1.0f + static_cast<float>(r % 3), exponent) : 0.5f * static_cast<float>(halves(gen));
  for (std::int64_t r = 0; r < pr.bh * pr.sk; ++r)
    for (std::int64_t d = 0; d < pr.dh; ++d)
      pr.k[static_cast<std::size_t>(r * pr.dh + d)] = d == 0 ? 1.0f : 0.5f * static_cast<float>(halves(gen));
  pr.p.scale = 1.0;
  return pr;
}

TEST(AttentionLargeLogits, BothPathsMatchReference) {
  std::uint32_t seed = 40;
  for (int exponent : {13, 17, 20})  // offsets 8192 .. 3 * 2^20 (about 1e4 .. 3e6)
    for (bool causal : {false, true})
      for_each_path("2^" + std::to_string(exponent) + (causal ? " causal" : ""), [&](ml::SdpaBackend backend) {
        Problem pr = large_logit_problem(exponent, causal, seed += 10);
        pr.upload();
        for (const Matrix* m : {&pr.mq, &pr.mk, &pr.mv}) oa::set_requires_grad(*m);
        Matrix out = ml::scaled_dot_product_attention(pr.mq, pr.mk, pr.mv, Matrix(), 1.0f, causal, backend);
        oa::backward(out, pr.mgrad);
        const auto want = ref::attention(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v));
        const auto g = ref::attention_backward(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v), to_f64(pr.grad));
        EXPECT_TRUE(oa_test::near(out.to_vector(), want.out, kAtol, kRtol)) << "output";
        EXPECT_TRUE(oa_test::near(oa::grad(pr.mq).to_vector(), g.dq, kAtol, kRtol)) << "dq";
        EXPECT_TRUE(oa_test::near(oa::grad(pr.mk).to_vector(), g.dk, kAtol, kRtol)) << "dk";
        EXPECT_TRUE(oa_test::near(oa::grad(pr.mv).to_vector(), g.dv, kAtol, kRtol)) << "dv";
      });
}

// The log-sum-exp output with a large common offset keeps f32 relative
// precision, and softmax_scaled_masked of rows offset by 1e4 .. 1e30 (spread
// in units of the offset's f32 spacing) matches f64.
TEST(AttentionLargeLogits, CommonOffsets) {
  Problem pr = large_logit_problem(20, false, 5);
  pr.upload();
  auto f = ml::flash_attention(pr.mq, pr.mk, pr.mv, Matrix(), 1.0f, false);
  EXPECT_TRUE(oa_test::near(f.log_sum_exp.to_vector(), ref::attention(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v)).lse, 0.0, 1e-6));

  for (float offset : {1e4f, 1e8f, 1e16f, 1e30f}) {
    SCOPED_TRACE(offset);
    const float step = std::nextafter(offset, kInf) - offset;
    std::vector<float> x;
    for (int j : {0, 1, -1, 2, 0, -2}) x.push_back(offset + static_cast<float>(j) * step);
    std::vector<float> mask = {0.0f, 0.0f, 0.0f, -kInf, 0.0f, 0.0f};
    for (float scale : {1.0f, 0.5f}) {
      const float unit = 1.0f / (step * scale);  // spread of about 1 per step
      Matrix got = ml::softmax_scaled_masked(Matrix::from_vector({2, 3}, x), Matrix::from_vector({2, 3}, mask), scale * unit);
      EXPECT_TRUE(oa_test::near(got.to_vector(), ref::softmax(to_f64(x), 2, 3, scale * unit, to_f64(mask), 2), 1e-6, 1e-5));
    }
    EXPECT_TRUE(oa_test::near(ml::softmax_scaled_masked(Matrix::from_vector({1, 2}, std::vector<float>{offset, offset}), Matrix(), 1.0f).to_vector(),
                              Vec{0.5, 0.5}, 0.0, 0.0));
  }
}

// ── NaN ─────────────────────────────────────────────────────────────────────

// A NaN logit makes its whole row NaN (torch.softmax), on every softmax path;
// other rows are untouched.
TEST(AttentionNaN, PropagatesThroughTheRow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto y = ml::softmax_scaled_masked(Matrix::from_vector({2, 2}, std::vector<float>{1.0f, nan, 1.0f, 1.0f}), Matrix(), 1.0f).to_vector();
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  EXPECT_EQ(y[2], 0.5f);
  for_each_path("", [&](ml::SdpaBackend backend) {
    Problem pr(1, 2, 3, 2, 2, false, 3);
    std::vector<float> mask(6, 0.0f);
    mask[4] = nan;  // query 1, key 1
    pr.set_mask(mask);
    pr.upload();
    const auto out = ml::scaled_dot_product_attention(pr.mq, pr.mk, pr.mv, pr.mmask, {}, false, backend).to_vector();
    EXPECT_FALSE(std::isnan(out[0]) || std::isnan(out[1]));
    EXPECT_TRUE(std::isnan(out[2]) && std::isnan(out[3]));
  });
}

// A NaN score (from a NaN in key 2) makes NaN exactly the query rows that see
// that key: with the causal mask queries 0 and 1 stay finite and match the
// reference, on both paths and without a mask (the raw-score variant).
TEST(AttentionNaN, NanKeyReachesOnlyTheQueriesThatSeeIt) {
  for_each_path("", [&](ml::SdpaBackend backend) {
    Problem pr(2, 4, 4, 8, 8, true, 7);
    pr.k[2 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();  // head 0, key 2
    pr.upload();
    const auto out = ml::scaled_dot_product_attention(pr.mq, pr.mk, pr.mv, Matrix(), {}, true, backend).to_vector();
    const auto want = ref::attention(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v));
    for (std::int64_t i = 0; i < 8 * 8; ++i) EXPECT_EQ(std::isnan(out[i]), i >= 2 * 8 && i < 4 * 8) << i;
    EXPECT_TRUE(oa_test::near(out, want.out, kAtol, kRtol));
  });
}

// A row longer than its lanes' register cache (3000 columns) is NaN in full
// when one logit is NaN, the columns read again from memory included.
TEST(AttentionNaN, LongSoftmaxRowIsNaNInFull) {
  const std::int64_t cols = 3000;
  auto x = random_floats(2 * cols, 11);
  x[2900] = std::numeric_limits<float>::quiet_NaN();
  const auto y = ml::softmax_scaled_masked(Matrix::from_vector({2, cols}, x), Matrix(), 0.5f).to_vector();
  EXPECT_TRUE(oa_test::near(y, ref::softmax(to_f64(x), 2, cols, 0.5), kAtol, kRtol));
  for (std::int64_t c = 0; c < cols; ++c) ASSERT_TRUE(std::isnan(y[c])) << c;
}

// ── backend choice ──────────────────────────────────────────────────────────

TEST(AttentionBackend, GuardAndArgumentChooseThePath) {
  Problem pr(3, 5, 6, 8, 4, true, 17);
  pr.upload();
  auto path_of = [&](ml::SdpaBackend backend, std::vector<float>* out) {
    oa::TraceCapture trace(engine());
    *out = ml::scaled_dot_product_attention(pr.mq, pr.mk, pr.mv, Matrix(), {}, true, backend).to_vector();
    const auto ops = trace.ops();
    return ops.size() == 1 ? std::get<std::string>(*ops[0].attribute("path")) : std::string("?");
  };
  std::vector<float> flash, math, guarded;
  EXPECT_EQ(ml::SdpaBackendGuard::current(), ml::SdpaBackend::Auto);
  EXPECT_EQ(path_of(ml::SdpaBackend::Auto, &flash), "flash");
  EXPECT_EQ(path_of(ml::SdpaBackend::Math, &math), "materialized");
  EXPECT_TRUE(oa_test::near(flash, to_f64(math), kAtol, kRtol));
  {
    ml::SdpaBackendGuard guard(ml::SdpaBackend::Math);
    EXPECT_EQ(path_of(ml::SdpaBackend::Auto, &guarded), "materialized");
    EXPECT_EQ(guarded, math);
    {
      ml::SdpaBackendGuard inner(ml::SdpaBackend::Flash);
      EXPECT_EQ(path_of(ml::SdpaBackend::Auto, &guarded), "flash");
    }
    EXPECT_EQ(path_of(ml::SdpaBackend::Auto, &guarded), "materialized");
    EXPECT_EQ(path_of(ml::SdpaBackend::Flash, &guarded), "flash");  // an explicit argument wins
  }
  EXPECT_EQ(ml::SdpaBackendGuard::current(), ml::SdpaBackend::Auto);
  const Matrix big = Matrix::zeros({1, 2, 300});
  oa::TraceCapture trace(engine());
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(big, big, big, Matrix(), {}, false, ml::SdpaBackend::Flash); },
                              oa::ErrorKind::Unsupported, {kSdpa, "300"}));
  EXPECT_TRUE(trace.ops().empty());
  EXPECT_EQ(ml::scaled_dot_product_attention(big, big, big).shape(), (Shape{1, 2, 300}));  // Auto: materialised
}

// ── empty and K = 0 products ────────────────────────────────────────────────

TEST(AttentionBmm, ZeroInnerExtentGivesZeros) {
  using Fn = Matrix (*)(const Matrix&, const Matrix&);
  struct Form {
    Fn fn;
    Shape a, b;
  };
  const Form forms[] = {{ml::bmm, {2, 3, 0}, {2, 0, 4}}, {ml::bmm_nt, {2, 3, 0}, {2, 4, 0}}, {ml::bmm_tn, {2, 0, 3}, {2, 0, 4}}};
  for (const Form& f : forms) {
    Matrix a = Matrix::zeros(f.a), b = Matrix::zeros(f.b);
    oa::set_requires_grad(a);
    oa::set_requires_grad(b);
    Matrix c = f.fn(a, b);
    EXPECT_EQ(c.shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(c.to_vector(), std::vector<float>(24, 0.0f));
    oa::backward(c, Matrix::from_vector({2, 3, 4}, random_floats(24, 9)));
    EXPECT_EQ(oa::grad(a).shape(), f.a);
    EXPECT_EQ(oa::grad(b).shape(), f.b);
  }
}

// M = 0 (or N = 0) gives an empty result, and the other operand's gradient is
// zero (its inner sum is empty).
TEST(AttentionBmm, EmptyOuterExtents) {
  Matrix a = Matrix::zeros({2, 0, 3}), b = Matrix::from_vector({2, 3, 4}, random_floats(24, 4));
  oa::set_requires_grad(b);
  Matrix c = ml::bmm(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 0, 4}));
  oa::backward(c, Matrix::zeros({2, 0, 4}));
  EXPECT_EQ(oa::grad(b).to_vector(), std::vector<float>(24, 0.0f));
  EXPECT_EQ(ml::bmm_nt(Matrix::zeros({2, 3, 5}), Matrix::zeros({2, 0, 5})).shape(), (Shape{2, 3, 0}));
  EXPECT_EQ(ml::bmm(Matrix::zeros({0, 3, 5}), Matrix::zeros({0, 5, 2})).shape(), (Shape{0, 3, 2}));
  EXPECT_TRUE(oa_test::throws([&] { ml::bmm(Matrix::zeros({2, 3, 0}), Matrix::zeros({2, 1, 4})); }, oa::ErrorKind::InvalidArgument,
                              {"oa::ml::bmm", "[2, 3, 0]", "[2, 1, 4]"}));
}

// ── 4-D inputs and broadcast masks ──────────────────────────────────────────

// The f64 problem of [B, H, S, D] inputs (the same memory as [B*H, S, D]) with
// a mask of `mask_shape` broadcast to [B, H, Sq, Sk] by explicit indexing.
Vec expand_mask(const std::vector<float>& mask, const std::vector<std::int64_t>& mask_shape, std::int64_t B, std::int64_t H,
                std::int64_t Sq, std::int64_t Sk) {
  std::vector<std::int64_t> ext(4, 1);
  for (std::size_t a = 0; a < mask_shape.size(); ++a) ext[4 - mask_shape.size() + a] = mask_shape[a];
  Vec out(static_cast<std::size_t>(B * H * Sq * Sk));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < Sq; ++i)
        for (std::int64_t j = 0; j < Sk; ++j) {
          const std::int64_t at = (((ext[0] == 1 ? 0 : b) * ext[1] + (ext[1] == 1 ? 0 : h)) * ext[2] + (ext[2] == 1 ? 0 : i)) * ext[3] + j;
          out[static_cast<std::size_t>(((b * H + h) * Sq + i) * Sk + j)] = mask[static_cast<std::size_t>(at)];
        }
  return out;
}

TEST(AttentionShapes, FourDimensionalWithBroadcastMasks) {
  const std::int64_t B = 2, H = 3, Sq = 4, Sk = 5, Dh = 8, Dv = 6;
  const std::vector<std::vector<std::int64_t>> mask_shapes = {{}, {Sq, Sk}, {1, 1, Sq, Sk}, {B, 1, Sq, Sk}, {B, H, Sq, Sk}, {B, 1, 1, Sk}, {H, Sq, Sk}};
  std::uint32_t seed = 300;
  for (const auto& ms : mask_shapes)
    for_each_path("mask rank " + std::to_string(ms.size()), [&](ml::SdpaBackend backend) {
      Problem pr(B * H, Sq, Sk, Dh, Dv, true, seed += 10);
      Matrix mask;
      if (!ms.empty()) {
        std::int64_t n = 1;
        for (auto e : ms) n *= e;
        auto values = random_floats(static_cast<std::size_t>(n), seed + 5, -2.0f, 2.0f);
        values[0] = -kInf;
        mask = Matrix::from_vector(Shape(ms), values);
        pr.p.mask = expand_mask(values, ms, B, H, Sq, Sk);
        pr.p.mask_rows = B * H * Sq;
      }
      const Matrix q = Matrix::from_vector({B, H, Sq, Dh}, pr.q), k = Matrix::from_vector({B, H, Sk, Dh}, pr.k),
                   v = Matrix::from_vector({B, H, Sk, Dv}, pr.v);
      for (const Matrix* m : {&q, &k, &v}) oa::set_requires_grad(*m);
      Matrix out = ml::scaled_dot_product_attention(q, k, v, mask, {}, true, backend);
      EXPECT_EQ(out.shape(), (Shape{B, H, Sq, Dv}));
      oa::backward(out, Matrix::from_vector({B, H, Sq, Dv}, pr.grad));
      const auto want = ref::attention(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v));
      const auto g = ref::attention_backward(pr.p, to_f64(pr.q), to_f64(pr.k), to_f64(pr.v), to_f64(pr.grad));
      EXPECT_TRUE(oa_test::near(out.to_vector(), want.out, kAtol, kRtol));
      EXPECT_EQ(oa::grad(q).shape(), q.shape());
      EXPECT_TRUE(oa_test::near(oa::grad(q).to_vector(), g.dq, kAtol, kRtol));
      EXPECT_TRUE(oa_test::near(oa::grad(k).to_vector(), g.dk, kAtol, kRtol));
      EXPECT_TRUE(oa_test::near(oa::grad(v).to_vector(), g.dv, kAtol, kRtol));
    });
}

TEST(AttentionShapes, BroadcastMaskInSoftmax) {
  const std::int64_t B = 2, H = 2, Sq = 3, Sk = 4;
  auto x = random_floats(static_cast<std::size_t>(B * H * Sq * Sk), 8);
  auto m = random_floats(static_cast<std::size_t>(B * Sq * Sk), 9);
  Matrix y = ml::softmax_scaled_masked(Matrix::from_vector({B, H, Sq, Sk}, x), Matrix::from_vector({B, 1, Sq, Sk}, m), 0.7f);
  EXPECT_TRUE(oa_test::near(y.to_vector(), ref::softmax(to_f64(x), B * H * Sq, Sk, 0.7f, expand_mask(m, {B, 1, Sq, Sk}, B, H, Sq, Sk), B * H * Sq),
                            1e-6, 1e-5));
}

// A Bool mask [b, 1, sq, sk] (true = attend) and its additive form (0 / -inf).
struct BoolMask {
  std::vector<bool> keep;
  std::vector<float> additive;
};
BoolMask bool_mask_values(std::int64_t b, std::int64_t sq, std::int64_t sk) {
  BoolMask m{std::vector<bool>(static_cast<std::size_t>(b * sq * sk)), std::vector<float>(static_cast<std::size_t>(b * sq * sk))};
  for (std::size_t i = 0; i < m.keep.size(); ++i) {
    m.keep[i] = (i * 7) % 3 != 0;
    m.additive[i] = m.keep[i] ? 0.0f : -kInf;
  }
  return m;
}

// Boolean masks (true = attend, torch.bool attn_mask) give what the additive
// mask 0 / -inf gives, broadcast over heads, on both paths and in the softmax.
TEST(AttentionShapes, BoolMasks) {
  const std::int64_t B = 2, H = 2, Sq = 3, Sk = 5, D = 4;
  const BoolMask values = bool_mask_values(B, Sq, Sk);
  const std::vector<bool>& keep = values.keep;
  const std::vector<float>& additive = values.additive;
  const Matrix bool_mask = Matrix::from_bool({B, 1, Sq, Sk}, keep);
  EXPECT_EQ(bool_mask.dtype(), oa::DType::Bool);
  const auto round_trip = bool_mask.to_bool();
  for (std::size_t i = 0; i < keep.size(); ++i) EXPECT_EQ(round_trip[i] != 0, keep[i]);
  const Matrix float_mask = Matrix::from_vector({B, 1, Sq, Sk}, additive);
  const Matrix q = Matrix::from_vector({B, H, Sq, D}, random_floats(static_cast<std::size_t>(B * H * Sq * D), 1));
  const Matrix k = Matrix::from_vector({B, H, Sk, D}, random_floats(static_cast<std::size_t>(B * H * Sk * D), 2));
  const Matrix v = Matrix::from_vector({B, H, Sk, D}, random_floats(static_cast<std::size_t>(B * H * Sk * D), 3));
  for_each_path("", [&](ml::SdpaBackend backend) {
    oa::TraceCapture trace(engine());
    const auto got = ml::scaled_dot_product_attention(q, k, v, bool_mask, {}, false, backend).to_vector();
    EXPECT_EQ(trace.ops().size(), 1u);
    const auto want = ml::scaled_dot_product_attention(q, k, v, float_mask, {}, false, backend).to_vector();
    EXPECT_EQ(got, want);
  });
  const Matrix scores = Matrix::from_vector({B, H, Sq, Sk}, random_floats(static_cast<std::size_t>(B * H * Sq * Sk), 4));
  EXPECT_EQ(ml::softmax_scaled_masked(scores, bool_mask, 1.0f).to_vector(), ml::softmax_scaled_masked(scores, float_mask, 1.0f).to_vector());
  // An odd element count still round-trips, and float ops refuse bool operands.
  const Matrix odd = Matrix::from_bool({5}, std::vector<std::uint8_t>{1, 0, 7, 0, 1});
  EXPECT_EQ(odd.to_bool(), (std::vector<std::uint8_t>{1, 0, 1, 0, 1}));
  EXPECT_TRUE(oa_test::throws([&] { ml::bmm(bool_mask.reshape({B, Sq, Sk}), bool_mask.reshape({B, Sq, Sk})); }, oa::ErrorKind::InvalidArgument,
                              {"oa::ml::bmm", "bool"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q, k, v, Matrix::from_i32({Sq, Sk}, std::vector<std::int32_t>(15, 0))); },
                              oa::ErrorKind::InvalidArgument, {kSdpa, "attn_mask", "i32"}));
}

// Through autograd, a Bool mask gives the flash gradients of its additive
// form, and the backward reads the mask resolved by the forward (no second
// conversion: as many dispatches as with the f32 mask).
TEST(AttentionShapes, BoolMaskGradients) {
  const std::int64_t B = 2, H = 2, Sq = 3, Sk = 5, D = 4;
  const BoolMask values = bool_mask_values(B, Sq, Sk);
  const std::vector<bool>& keep = values.keep;
  const std::vector<float>& additive = values.additive;
  const Matrix masks[2] = {Matrix::from_bool({B, 1, Sq, Sk}, keep), Matrix::from_vector({B, 1, Sq, Sk}, additive)};
  std::vector<std::vector<float>> grads[2];
  std::size_t dispatches[2] = {0, 0};
  for (int m = 0; m < 2; ++m) {
    SCOPED_TRACE(m == 0 ? "bool" : "f32");
    const Matrix q = oa::set_requires_grad(Matrix::from_vector({B, H, Sq, D}, random_floats(static_cast<std::size_t>(B * H * Sq * D), 1)));
    const Matrix k = oa::set_requires_grad(Matrix::from_vector({B, H, Sk, D}, random_floats(static_cast<std::size_t>(B * H * Sk * D), 2)));
    const Matrix v = oa::set_requires_grad(Matrix::from_vector({B, H, Sk, D}, random_floats(static_cast<std::size_t>(B * H * Sk * D), 3)));
    const Matrix out = ml::scaled_dot_product_attention(q, k, v, masks[m], {}, false, ml::SdpaBackend::Flash);
    oa::TraceCapture trace(engine());
    oa::backward(out, Matrix::ones(out.shape()));
    const auto ops = trace.ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].label(), std::string(kSdpa) + " backward");
    dispatches[m] = ops[0].dispatches;
    for (const Matrix* x : {&q, &k, &v}) grads[m].push_back(oa::grad(*x).to_vector());
  }
  EXPECT_EQ(dispatches[0], dispatches[1]);  // the bool mask is not converted again
  EXPECT_EQ(grads[0], grads[1]);
}

TEST(AttentionShapes, Errors) {
  const Matrix q = Matrix::zeros({2, 3, 4, 8}), k = Matrix::zeros({2, 3, 5, 8}), v = Matrix::zeros({2, 3, 5, 6});
  oa::TraceCapture trace(engine());
  using oa::ErrorKind;
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q, k, v, Matrix::zeros({2, 2, 4, 5})); }, ErrorKind::InvalidArgument,
                              {kSdpa, "attn_mask", "[2, 2, 4, 5]", "[2, 3, 4, 5]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q, k, v, Matrix::zeros({4, 4})); }, ErrorKind::InvalidArgument,
                              {kSdpa, "attn_mask", "[4, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q, k, v, Matrix::zeros({1, 2, 3, 4, 5})); }, ErrorKind::InvalidArgument,
                              {kSdpa, "attn_mask", "[1, 2, 3, 4, 5]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q, Matrix::zeros({2, 2, 5, 8}), v); }, ErrorKind::InvalidArgument,
                              {kSdpa, "k must be", "[2, 2, 5, 8]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q, Matrix::zeros({6, 5, 8}), v); }, ErrorKind::InvalidArgument,
                              {kSdpa, "k must be", "[6, 5, 8]"}));
  EXPECT_TRUE(oa_test::throws(
      [&] { ml::softmax_scaled_masked(Matrix::zeros({2, 3, 4}), Matrix::zeros({3, 3, 4}), 1.0f); }, ErrorKind::InvalidArgument,
      {"oa::ml::softmax_scaled_masked", "mask", "[3, 3, 4]", "[2, 3, 4]"}));
  EXPECT_TRUE(trace.ops().empty());
}

}  // namespace
