// Attention over F16 and BF16 q, k, v on every path (flash fused, flash with
// the GEMM backward, flash through GEMMs, materialised): the output against
// the f64 reference of the rounded inputs, the gradients against the F32
// path on the same rounded inputs, the extreme inputs (huge masks, fully
// masked rows, large common offsets, NaN), dtype errors, autocast, and the
// tensor-core runs that need cooperative matrices (skipped on lavapipe).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>

#include "ml/attention_common.hpp"
#include "oa/matrix/autocast.hpp"
#include "oa/matrix/cast.hpp"
#include "support/expect.hpp"
#include "support/forced_tuning.hpp"

namespace {

using namespace oa::attention_test;
using oa::DType;

constexpr DType kHalfDtypes[] = {DType::F16, DType::BF16};

// Unit roundoff of a 16-bit dtype: 2^-11 (f16), 2^-8 (bf16).
double unit(DType d) { return std::ldexp(1.0, d == DType::F16 ? -11 : -8); }

std::string name(DType d) { return std::string(oa::to_string(d)); }

struct Case {
  std::int64_t bh, sq, sk, dh, dv;
  bool mask;  // a random additive mask [Sq, Sk] broadcast over heads
  bool causal;
  ml::CausalVariant variant = ml::CausalVariant::LowerRight;
};

std::string describe(const Case& c) {
  return "bh " + std::to_string(c.bh) + " sq " + std::to_string(c.sq) + " sk " + std::to_string(c.sk) + " dh " +
         std::to_string(c.dh) + " dv " + std::to_string(c.dv) + (c.mask ? " masked" : "") + (c.causal ? " causal" : "") +
         (c.variant == ml::CausalVariant::UpperLeft ? " upper-left" : "");
}

// One problem: q, k, v and the output's gradient rounded to `dtype` (their
// values as host vectors, exact in both dtypes), the f32 mask and the f64 problem.
struct Rounded {
  DType dtype;
  Shape sq, sk, sv, sg;
  std::vector<float> vq, vk, vv, vg;
  Matrix mask;
  ref::AttentionProblem problem;
  // Fresh matrices (leaves of their own) of the values in `d`.
  Matrix q(DType d) const { return Matrix::from_vector(sq, vq, d); }
  Matrix k(DType d) const { return Matrix::from_vector(sk, vk, d); }
  Matrix v(DType d) const { return Matrix::from_vector(sv, vv, d); }
  Matrix grad(DType d) const { return Matrix::from_vector(sg, vg, d); }
};

Rounded rounded(const Case& c, DType dtype, std::uint32_t seed) {
  Rounded r;
  r.dtype = dtype;
  r.sq = {c.bh, c.sq, c.dh};
  r.sk = {c.bh, c.sk, c.dh};
  r.sv = {c.bh, c.sk, c.dv};
  r.sg = {c.bh, c.sq, c.dv};
  // Rounded on the host (Matrix::from_vector), widened back exactly on download.
  auto make = [&](const Shape& s, std::uint32_t sd) {
    return Matrix::from_vector(s, random_floats(static_cast<std::size_t>(s.numel()), sd), dtype).to_vector();
  };
  r.vq = make(r.sq, seed);
  r.vk = make(r.sk, seed + 1);
  r.vv = make(r.sv, seed + 2);
  r.vg = make(r.sg, seed + 3);
  auto& p = r.problem;
  p = attention_problem(c.bh, c.sq, c.sk, c.dh, c.dv, c.causal, c.variant);
  if (c.mask) {
    std::vector<float> m = random_floats(static_cast<std::size_t>(c.sq * c.sk), seed + 4);
    for (std::size_t i = 0; i < m.size(); i += 5) m[i] = -kInf;
    r.mask = Matrix::from_vector({c.sq, c.sk}, m);
    p.mask = to_f64(m);
    p.mask_rows = c.sq;
  }
  return r;
}

// Sq = 1 (decoding), Sq != Sk both ways, causal both variants, a mask, head
// dims 16 .. 128 and Dv != Dh; Sq 300 takes two causal blocks of the GEMM
// lowerings (the upper-left one stops its last block at the diagonal).
const Case kCases[] = {
    {2, 1, 37, 16, 16, false, false},
    {2, 17, 33, 40, 24, true, true},
    {1, 33, 20, 128, 128, false, true, ml::CausalVariant::UpperLeft},
    {1, 300, 320, 8, 4, false, true, ml::CausalVariant::UpperLeft},
};

// The output of every path and case: its dtype, and its values against the
// f64 reference of the rounded inputs within the rounding of the weights and
// the output (2u |v|max) and the f32 scores' error (Dh 2^-24 per unit of |q.k|).
TEST(AttentionHalf, ForwardMatchesReference) {
  for (DType dtype : kHalfDtypes) {
    std::uint32_t seed = 10;
    for (const Case& c : kCases) {
      const Rounded r = rounded(c, dtype, seed += 10);
      const auto want = ref::attention(r.problem, to_f64(r.vq), to_f64(r.vk), to_f64(r.vv));
      const double tol = 3.0 * unit(dtype) + static_cast<double>(c.dh) * std::ldexp(1.0, -20);
      for_each_path(name(dtype) + " " + describe(c), [&](ml::SdpaBackend backend) {
        oa::TraceCapture trace(engine());
        const Matrix out = ml::scaled_dot_product_attention(r.q(dtype), r.k(dtype), r.v(dtype), r.mask, {}, c.causal, backend, c.variant);
        EXPECT_EQ(trace.ops().size(), 1u);
        EXPECT_EQ(out.dtype(), dtype);
        EXPECT_EQ(out.shape(), (Shape{c.bh, c.sq, c.dv}));
        EXPECT_TRUE(oa_test::near(out.to_vector(), want.out, tol, 0.0));
      });
    }
  }
}

// The flash path's log-sum-exp and stats are f32 and match the reference;
// its explicit backward gives gradients of the inputs' dtype.
TEST(AttentionHalf, FlashStatsAreF32) {
  const Case c{2, 17, 33, 40, 24, true, true};
  for (DType dtype : kHalfDtypes)
    for (FlashLowering lowering : {FlashLowering::Fused, FlashLowering::Gemm}) {
      attention_detail::FlashLoweringGuard guard(lowering, FlashLowering::Auto);
      const Rounded r = rounded(c, dtype, 70);
      const auto f = ml::flash_attention(r.q(dtype), r.k(dtype), r.v(dtype), r.mask, {}, c.causal);
      EXPECT_EQ(f.log_sum_exp.dtype(), DType::F32);
      EXPECT_EQ(f.softmax_stats.dtype(), DType::F32);
      const auto want = ref::attention(r.problem, to_f64(r.vq), to_f64(r.vk), to_f64(r.vv));
      EXPECT_TRUE(oa_test::near(f.log_sum_exp.to_vector(), want.lse, kAtol, kRtol)) << name(dtype);
      const auto g = ml::flash_attention_backward(r.q(dtype), r.k(dtype), r.v(dtype), r.mask, f.output, f.softmax_stats, r.grad(dtype),
                                                  static_cast<float>(r.problem.scale), c.causal);
      for (const Matrix* m : {&g.q, &g.k, &g.v}) EXPECT_EQ(m->dtype(), dtype);
    }
}

struct Gradients {
  Matrix out, dq, dk, dv;
};

// out and the gradients of sum(out * grad) through autograd, for f32 leaves
// q, k, v cast to `dtype` (whose gradients arrive widened exactly).
Gradients run(const Rounded& r, DType dtype, const Case& c, ml::SdpaBackend backend) {
  const Matrix q = r.q(DType::F32), k = r.k(DType::F32), v = r.v(DType::F32);
  for (const Matrix* m : {&q, &k, &v}) oa::set_requires_grad(*m);
  using oa::matrix::cast;
  Matrix out = ml::scaled_dot_product_attention(cast(q, dtype), cast(k, dtype), cast(v, dtype), r.mask, {}, c.causal, backend, c.variant);
  oa::backward(cast(out, DType::F32), r.grad(DType::F32));  // the gradient reaches out rounded to dtype (exactly)
  return {out, oa::grad(q), oa::grad(k), oa::grad(v)};
}

// The largest |x| of v (at least 1).
double scale_of(const std::vector<float>& v) {
  double m = 1.0;
  for (float x : v) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

void expect_close_to(const Matrix& got, const Matrix& want, double u, const std::string& what) {
  const std::vector<float> w = want.to_vector();
  std::vector<double> wd(w.begin(), w.end());
  // P and dS rounded before their GEMMs, the result rounded once: a few u of the largest term.
  EXPECT_TRUE(oa_test::near(got.to_vector(), wd, 8.0 * u * scale_of(w), 0.0)) << what;
}

// Gradients of every path and case (in the inputs' dtype, then widened by the
// cast's backward) against the F32 path's on the same rounded inputs.
TEST(AttentionHalf, GradientsMatchTheF32Path) {
  for (DType dtype : kHalfDtypes) {
    std::uint32_t seed = 200;
    for (const Case& c : kCases) {
      // BF16 runs the same kernels as F16 (another conversion): two cases suffice (CI time).
      if (dtype == DType::BF16 && (&c - kCases) % 2 == 1) continue;
      const Rounded r = rounded(c, dtype, seed += 10);
      for_each_path(name(dtype) + " " + describe(c), [&](ml::SdpaBackend backend) {
        const Gradients low = run(r, dtype, c, backend);
        const Gradients wide = run(r, DType::F32, c, backend);
        EXPECT_EQ(low.out.dtype(), dtype);
        const double u = unit(dtype);
        expect_close_to(low.dq, wide.dq, u, "dq");
        expect_close_to(low.dk, wide.dk, u, "dk");
        expect_close_to(low.dv, wide.dv, u, "dv");
      });
    }
  }
}

// The packed causal op in 16 bits: output and gradients in its dtype, against
// the F32 op on the rounded inputs.
TEST(AttentionHalf, PackedCausal) {
  const std::int64_t B = 2, S = 9, H = 2, D = 16;
  for (DType dtype : kHalfDtypes) {
    // f32 leaves holding values exact in dtype, each used directly and through a cast.
    const auto leaf = [&](std::uint32_t seed) {
      return Matrix::from_vector({B * S, D}, Matrix::from_vector({B * S, D}, random_floats(B * S * D, seed), dtype).to_vector());
    };
    Matrix q = leaf(1), k = leaf(2), v = leaf(3), wq = leaf(1), wk = leaf(2), wv = leaf(3);
    for (const Matrix* m : {&q, &k, &v, &wq, &wk, &wv}) oa::set_requires_grad(*m);
    using oa::matrix::cast;
    Matrix out = ml::scaled_dot_product_attention_causal(cast(q, dtype), cast(k, dtype), cast(v, dtype), S, H);
    Matrix want = ml::scaled_dot_product_attention_causal(wq, wk, wv, S, H);
    EXPECT_EQ(out.dtype(), dtype);
    const Matrix grad = cast(Matrix::from_vector({B * S, D}, random_floats(B * S * D, 4), dtype), DType::F32);
    oa::backward(cast(out, DType::F32), grad);
    oa::backward(want, grad);
    const double u = unit(dtype);
    expect_close_to(out, want, u, name(dtype) + " output");
    expect_close_to(oa::grad(q), oa::grad(wq), u, name(dtype) + " dq");
    expect_close_to(oa::grad(k), oa::grad(wk), u, name(dtype) + " dk");
    expect_close_to(oa::grad(v), oa::grad(wv), u, name(dtype) + " dv");
  }
}

// ── extreme inputs ───────────────────────────────────────────────────────────

// `rows` x `sk` mask of `value` on every key of row 1 (a fully masked row)
// and every third key elsewhere (never the last).
std::vector<float> huge_mask(std::int64_t rows, std::int64_t sk, float value) {
  std::vector<float> m(static_cast<std::size_t>(rows * sk), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < sk; ++c)
      if (r == 1 || (c % 3 == 0 && c + 1 < sk)) m[static_cast<std::size_t>(r * sk + c)] = value;
  return m;
}

bool same_nans(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::isnan(a[i]) != std::isnan(b[i])) return false;
  return true;
}

// The 16-bit path against the F32 path on the rounded inputs (output and
// gradients, NaN where and only where it is NaN).
void expect_as_f32(const Rounded& r, const Case& c, DType dtype, ml::SdpaBackend backend, const std::optional<float> scale = {}) {
  const Matrix q = r.q(DType::F32), k = r.k(DType::F32), v = r.v(DType::F32), wq = r.q(DType::F32), wk = r.k(DType::F32), wv = r.v(DType::F32);
  for (const Matrix* m : {&q, &k, &v, &wq, &wk, &wv}) oa::set_requires_grad(*m);
  using oa::matrix::cast;
  Matrix out = ml::scaled_dot_product_attention(cast(q, dtype), cast(k, dtype), cast(v, dtype), r.mask, scale, c.causal, backend, c.variant);
  Matrix want = ml::scaled_dot_product_attention(wq, wk, wv, r.mask, scale, c.causal, backend, c.variant);
  oa::backward(cast(out, DType::F32), r.grad(DType::F32));
  oa::backward(want, r.grad(DType::F32));
  const double u = unit(dtype);
  const std::pair<Matrix, Matrix> pairs[] = {{out, want}, {oa::grad(q), oa::grad(wq)}, {oa::grad(k), oa::grad(wk)}, {oa::grad(v), oa::grad(wv)}};
  const char* names[] = {"output", "dq", "dk", "dv"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(same_nans(pairs[i].first.to_vector(), pairs[i].second.to_vector())) << names[i];
    expect_close_to(pairs[i].first, pairs[i].second, u, names[i]);
  }
}

// Masks down to -FLT_MAX with a fully masked row (uniform in both), causal
// rows with no visible key (zeros), on every path.
TEST(AttentionHalf, HugeMasksAndHiddenRows) {
  for (DType dtype : kHalfDtypes)
    for (float value : {-1e9f, -FLT_MAX})
      for (bool causal : {false, true}) {
        if (dtype == DType::BF16 && value != -FLT_MAX) continue;  // the same kernels as F16 (CI time)
        const Case c{2, 6, 4, 8, 5, true, causal};  // Sq > Sk: causal rows 0 and 1 see no key
        Rounded r = rounded(c, dtype, 300);
        r.mask = Matrix::from_vector({c.bh * c.sq, c.sk}, huge_mask(c.bh * c.sq, c.sk, value));
        for_each_path(name(dtype) + " mask " + std::to_string(value) + (causal ? " causal" : ""),
                      [&](ml::SdpaBackend backend) { expect_as_f32(r, c, dtype, backend); });
      }
}

// Scores with a large common offset (2^11 .. 3 * 2^13, scale 1; f16 holds up
// to 65504): q = [2^e (1, 2 or 3 times), small], k = [1, small].
TEST(AttentionHalf, LargeCommonOffsets) {
  for (DType dtype : kHalfDtypes)
    for (int exponent : {11, 13}) {
      const Case c{2, 7, 9, 8, 4, false, true};
      Rounded r = rounded(c, dtype, 400);
      for (std::int64_t i = 0; i < c.bh * c.sq; ++i) r.vq[static_cast<std::size_t>(i * c.dh)] = std::ldexp(1.0f + static_cast<float>(i % 3), exponent);
      for (std::int64_t i = 0; i < c.bh * c.sk; ++i) r.vk[static_cast<std::size_t>(i * c.dh)] = 1.0f;
      for_each_path(name(dtype) + " 2^" + std::to_string(exponent),
                    [&](ml::SdpaBackend backend) { expect_as_f32(r, c, dtype, backend, 1.0f); });
    }
}

// A NaN in key 2 makes NaN exactly the causal rows that see it, as in f32.
TEST(AttentionHalf, NanKeyReachesOnlyTheQueriesThatSeeIt) {
  for (DType dtype : kHalfDtypes) {
    const Case c{1, 4, 4, 8, 8, false, true};
    Rounded r = rounded(c, dtype, 500);
    r.vk[2 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();
    for_each_path(name(dtype), [&](ml::SdpaBackend backend) {
      const auto out = ml::scaled_dot_product_attention(r.q(dtype), r.k(dtype), r.v(dtype), Matrix(), {}, true, backend).to_vector();
      for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(std::isnan(out[i]), i >= 2 * 8) << i;
    });
  }
}

// ── errors and autocast ─────────────────────────────────────────────────────

TEST(AttentionHalf, MixedDtypesAreErrors) {
  const auto zeros = [](const Shape& s, DType d) { return oa::matrix::cast(Matrix::zeros(s), d); };
  const Matrix q16 = zeros({1, 2, 4}, DType::F16), k32 = Matrix::zeros({1, 2, 4}), v16 = zeros({1, 2, 4}, DType::F16);
  const Matrix kb = zeros({1, 2, 4}, DType::BF16), q2 = zeros({2, 4}, DType::F16), mask16 = zeros({2, 2}, DType::F16);
  const Matrix f2 = Matrix::zeros({2, 4});
  oa::TraceCapture trace(engine());
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q16, k32, v16); }, oa::ErrorKind::InvalidArgument,
                              {kSdpa, "q, k and v", "q f16", "k f32", "v f16"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q16, kb, v16, {}, {}, false, ml::SdpaBackend::Math); },
                              oa::ErrorKind::InvalidArgument, {kSdpa, "k bf16"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention_causal(q2, f2, f2, 2, 1); },
                              oa::ErrorKind::InvalidArgument, {"oa::ml::scaled_dot_product_attention_causal", "k f32"}));
  // A 16-bit mask: the mask stays f32 or bool.
  EXPECT_TRUE(oa_test::throws([&] { ml::scaled_dot_product_attention(q16, v16, v16, mask16); },
                              oa::ErrorKind::InvalidArgument, {kSdpa, "attn_mask", "f16"}));
  EXPECT_TRUE(trace.ops().empty());
}

// Under autocast attention runs in the scope's dtype (its result has it) and
// an f32 mask stays f32: the result equals the explicit 16-bit call.
TEST(AttentionHalf, AutocastLowersAttention) {
  EXPECT_EQ(oa::autocast_policy(kSdpa), oa::AutocastPolicy::Lower);
  EXPECT_EQ(oa::autocast_policy("oa::ml::scaled_dot_product_attention_causal"), oa::AutocastPolicy::Lower);
  const Case c{2, 5, 7, 8, 8, true, false};
  const Rounded r = rounded(c, DType::BF16, 600);
  const Matrix mask = Matrix::from_vector({c.sq, c.sk}, random_floats(static_cast<std::size_t>(c.sq * c.sk), 601, -3.0f, 0.0f));
  const Matrix want = ml::scaled_dot_product_attention(r.q(DType::BF16), r.k(DType::BF16), r.v(DType::BF16), mask);
  oa::AutocastGuard autocast(DType::BF16);
  const Matrix out = ml::scaled_dot_product_attention(r.q(DType::F32), r.k(DType::F32), r.v(DType::F32), mask);
  EXPECT_EQ(out.dtype(), DType::BF16);
  EXPECT_EQ(out.to_vector(), want.to_vector());
}

// ── tensor cores ────────────────────────────────────────────────────────────

// With cooperative matrices for the dtype, the GEMM lowerings of attention
// (the flash forward through GEMMs and the materialised scores) choose the
// tensor-core kernel, and the results match the reference; skipped on
// devices without them (lavapipe).
TEST(AttentionHalf, TensorCoresServeTheGemmLowerings) {
  bool any = false;
  for (DType dtype : kHalfDtypes) {
    if (!engine().device().has_cooperative_matrix({dtype, dtype, DType::F32, DType::F32, 16, 16, 16})) continue;
    any = true;
    const std::string_view coopmat = dtype == DType::F16 ? oa::kernels::matrix_gemm_coopmat : oa::kernels::matrix_gemm_coopmat_bf16;
    const Case c{2, 64, 96, 64, 64, true, true};
    const Rounded r = rounded(c, dtype, 700);
    const Matrix q = r.q(dtype), k = r.k(dtype), v = r.v(dtype);
    attention_detail::FlashLoweringGuard guard(FlashLowering::Gemm, FlashLowering::Gemm);
    const auto g = attention_detail::attention_geometry(kSdpa, q, k, v, r.mask, {}, c.causal, c.variant);
    std::vector<oa::runtime::ComputeDispatch> flash, scores;
    attention_detail::lower_flash_attention(engine(), g, q, k, v, r.mask, oa::detail::allocate(engine(), r.sg, dtype),
                                            oa::detail::allocate(engine(), {c.bh, c.sq}), oa::detail::allocate(engine(), {c.bh, c.sq, 2}), flash);
    scores = attention_detail::lower_bmm(engine(), ml::BmmLayout::NT, q, k, oa::detail::allocate(engine(), {c.bh, c.sq, c.sk}));
    for (const auto* ds : {&flash, &scores}) {
      bool found = false;
      for (const auto& d : *ds) found = found || d.kernel == coopmat;
      EXPECT_TRUE(found) << name(dtype) << (ds == &flash ? " flash" : " materialized");
    }
    const auto want = ref::attention(r.problem, to_f64(r.vq), to_f64(r.vk), to_f64(r.vv));
    for (const ml::SdpaBackend backend : {ml::SdpaBackend::Flash, ml::SdpaBackend::Math}) {
      const Matrix out = ml::scaled_dot_product_attention(q, k, v, r.mask, {}, c.causal, backend);
      EXPECT_TRUE(oa_test::near(out.to_vector(), want.out, 3.0 * unit(dtype) + 64 * std::ldexp(1.0, -20), 0.0)) << name(dtype);
    }
  }
  if (!any) GTEST_SKIP() << "the device has no cooperative matrices for f16 or bf16 (16x16x16, f32 accumulators): the "
                            "tensor-core lowering runs on devices that have them, not here";
}

// The dtypes the device has 16 x 16 x 16 cooperative matrices for (f32 accumulators).
std::vector<DType> tensor_core_dtypes() {
  std::vector<DType> out;
  for (DType d : kHalfDtypes)
    if (engine().device().has_cooperative_matrix({d, d, DType::F32, DType::F32, 16, 16, 16})) out.push_back(d);
  return out;
}

#define OA_SKIP_WITHOUT_TENSOR_CORES(dtypes)                                                                   \
  if ((dtypes).empty())                                                                                        \
  GTEST_SKIP() << "the device has no cooperative matrices for f16 or bf16 (16x16x16, f32 accumulators): the " \
                  "tensor-core kernels run on devices that have them, not here"

// Whether tile wgBRxBC (BR rows on 2 BR invocations, BC rows of the other
// operand a step) of the kernels on workgroup-scope matrices serves head dim
// dh: the device has those matrices for the products (BR x BC x dh, BR x dh
// x BC and the forward's row sums, BR x BC x BC).
bool workgroup_tile_serves(std::string_view tile, std::uint32_t dh) {
  unsigned br = 0, bc = 0;
  const oa::DeviceInfo& d = engine().device();
  return std::sscanf(std::string(tile).c_str(), "wg%ux%u", &br, &bc) == 2 &&
         d.has_workgroup_cooperative_matrix(DType::F16, DType::F32, br, bc, dh, 2 * br) &&
         d.has_workgroup_cooperative_matrix(DType::F16, DType::F32, br, dh, bc, 2 * br) &&
         d.has_workgroup_cooperative_matrix(DType::F16, DType::F32, br, bc, bc, 2 * br);
}

// Whether the device runs subgroup-scope tile `tile` (sgBRxBC) of the f16
// forward: subgroups of 32, f16 16 x 16 x 16 matrices and VK_NV_cooperative_matrix2.
bool subgroup_tile_serves(std::string_view tile) {
  unsigned br = 0, bc = 0;
  const oa::DeviceInfo& d = engine().device();
  return std::sscanf(std::string(tile).c_str(), "sg%ux%u", &br, &bc) == 2 && d.subgroup_size == 32 &&
         !d.workgroup_cooperative_matrix.empty() && d.has_cooperative_matrix({DType::F16, DType::F16, DType::F32, DType::F32, 16, 16, 16});
}

// The kernel that tuning variant `tile` of attention.coopmat_tile runs for
// dtype and head dim dh: the workgroup-scope kernel for the wg tiles that
// serve f16 there, the one with the softmax in registers for the sg tiles
// that do, else the older subgroup-scope one.
std::string_view tensor_core_kernel(std::string_view tile, DType dtype, std::uint32_t dh) {
  if (dtype == DType::F16 && workgroup_tile_serves(tile, dh)) return oa::kernels::ml_attention_flash_forward_coopmat2;
  if (dtype == DType::F16 && subgroup_tile_serves(tile)) return oa::kernels::ml_attention_flash_forward_coopmat_subgroup;
  return dtype == DType::F16 ? oa::kernels::ml_attention_flash_forward_coopmat : oa::kernels::ml_attention_flash_forward_coopmat_bf16;
}

// Whether the flash forward of r lowers to the tensor-core kernel alone.
bool lowers_to_tensor_cores(const Rounded& r, const Case& c, DType dtype, std::string_view tile) {
  const Matrix q = r.q(dtype), k = r.k(dtype), v = r.v(dtype);
  const auto g = attention_detail::attention_geometry(kSdpa, q, k, v, r.mask, {}, c.causal, c.variant);
  std::vector<oa::runtime::ComputeDispatch> ds;
  attention_detail::lower_flash_attention(engine(), g, q, k, v, r.mask, oa::detail::allocate(engine(), r.sg, dtype),
                                          oa::detail::allocate(engine(), {c.bh, c.sq}), oa::detail::allocate(engine(), {c.bh, c.sq, 2}), ds);
  return ds.size() == 1 && ds[0].kernel == tensor_core_kernel(tile, dtype, static_cast<std::uint32_t>(c.dh));
}

// Problems of the tensor-core forward (Dh = Dv a multiple of 16 up to 128,
// more than 4 query rows): partial query and key tiles, causal both ways,
// masks with -inf keys, Sq > Sk (lower-right causal rows that see no key).
const Case kTensorCoreCases[] = {
    {2, 100, 130, 64, 64, true, true},
    {1, 200, 77, 80, 80, false, false},
    {2, 33, 50, 128, 128, true, true, ml::CausalVariant::UpperLeft},
    {3, 70, 40, 32, 32, false, true},
    {1, 129, 129, 16, 16, false, true},
    {1, 65, 300, 96, 96, true, false},
};

// The tensor-core forward with each tile: output and log-sum-exp against the
// f64 reference of the rounded inputs (P is rounded to the inputs' dtype
// before P v, as the tensor cores take it: within 3u |v|max as the fused path).
TEST(AttentionHalf, TensorCoreForwardMatchesReference) {
  const std::vector<DType> dtypes = tensor_core_dtypes();
  OA_SKIP_WITHOUT_TENSOR_CORES(dtypes);
  attention_detail::FlashLoweringGuard guard(FlashLowering::Coopmat, FlashLowering::Fused);
  for (DType dtype : dtypes)
    for (const std::string_view tile : oa::tuning_point("attention.coopmat_tile").variants) {
      const oa_test::Forced forced("attention.coopmat_tile", std::string(tile));
      std::uint32_t seed = 800;
      for (const Case& c : kTensorCoreCases) {
        SCOPED_TRACE(name(dtype) + " tile " + std::string(tile) + " " + describe(c));
        const Rounded r = rounded(c, dtype, seed += 10);
        EXPECT_TRUE(lowers_to_tensor_cores(r, c, dtype, tile));
        const auto want = ref::attention(r.problem, to_f64(r.vq), to_f64(r.vk), to_f64(r.vv));
        const auto f = ml::flash_attention(r.q(dtype), r.k(dtype), r.v(dtype), r.mask, {}, c.causal, c.variant);
        EXPECT_EQ(f.output.dtype(), dtype);
        EXPECT_TRUE(oa_test::near(f.output.to_vector(), want.out, 3.0 * unit(dtype) + static_cast<double>(c.dh) * std::ldexp(1.0, -20), 0.0));
        EXPECT_TRUE(oa_test::near(f.log_sum_exp.to_vector(), want.lse, kAtol, kRtol));
      }
    }
}

// Extreme inputs against the F32 path on the rounded inputs (the output and
// the gradients): masks down to -FLT_MAX with causal rows that see no key
// (where `lowered` checks the lowering too), and scores with a large common
// offset under scales 1 and -1.
void expect_masks_and_offsets_as_f32(DType dtype, const std::function<bool(const Rounded&, const Case&)>& lowered) {
  for (float value : {-1e9f, -FLT_MAX}) {
    const Case c{2, 9, 7, 16, 16, true, true};  // Sq > Sk: causal rows 0 and 1 see no key
    Rounded r = rounded(c, dtype, 900);
    r.mask = Matrix::from_vector({c.bh * c.sq, c.sk}, huge_mask(c.bh * c.sq, c.sk, value));
    SCOPED_TRACE("mask " + std::to_string(value));
    EXPECT_TRUE(lowered(r, c));
    expect_as_f32(r, c, dtype, ml::SdpaBackend::Flash);
  }
  for (int exponent : {11, 13}) {
    const Case c{2, 7, 9, 16, 16, false, true};
    Rounded r = rounded(c, dtype, 910);
    for (std::int64_t i = 0; i < c.bh * c.sq; ++i) r.vq[static_cast<std::size_t>(i * c.dh)] = std::ldexp(1.0f + static_cast<float>(i % 3), exponent);
    for (std::int64_t i = 0; i < c.bh * c.sk; ++i) r.vk[static_cast<std::size_t>(i * c.dh)] = 1.0f;
    SCOPED_TRACE("2^" + std::to_string(exponent));
    expect_as_f32(r, c, dtype, ml::SdpaBackend::Flash, 1.0f);
    expect_as_f32(r, c, dtype, ml::SdpaBackend::Flash, -1.0f);
  }
}

// The tensor-core forwards (subgroup-scope tiles of both kernels and the
// shipped workgroup-scope one, and the fused backward after them) on the extreme
// inputs, against the F32 path on the rounded inputs: masks down to -FLT_MAX
// with a fully masked row, causal rows that see no key, scores with a large
// common offset, a negative scale, and a NaN key reaching only the rows that
// see it; packed heads.
TEST(AttentionHalf, TensorCoreForwardOnExtremeInputs) {
  const std::vector<DType> dtypes = tensor_core_dtypes();
  OA_SKIP_WITHOUT_TENSOR_CORES(dtypes);
  attention_detail::FlashLoweringGuard guard(FlashLowering::Coopmat, FlashLowering::Fused);
  for (DType dtype : dtypes)
    for (const std::string_view tile : {"16x32", "wg64x16", "sg64x32"}) {
      const oa_test::Forced forced("attention.coopmat_tile", std::string(tile));
      SCOPED_TRACE(std::string("tile ") + std::string(tile));
      SCOPED_TRACE(name(dtype));
      expect_masks_and_offsets_as_f32(dtype, [&](const Rounded& r, const Case& c) { return lowers_to_tensor_cores(r, c, dtype, tile); });
      // Whole tiles of rows and keys (the workgroup kernel then skips the
      // element-wise logits): a NaN key, a negative scale, causal and not.
      for (bool causal : {false, true}) {
        const Case big{1, 160, 192, 64, 64, false, causal};
        Rounded r = rounded(big, dtype, 930);
        r.vk[100 * 64 + 5] = std::numeric_limits<float>::quiet_NaN();
        SCOPED_TRACE(name(dtype) + " whole tiles" + (causal ? " causal" : ""));
        expect_as_f32(r, big, dtype, ml::SdpaBackend::Flash, 0.125f);
        expect_as_f32(r, big, dtype, ml::SdpaBackend::Flash, -0.125f);
      }
      const Case c{1, 8, 8, 16, 16, false, true};
      Rounded r = rounded(c, dtype, 920);
      r.vk[2 * 16 + 3] = std::numeric_limits<float>::quiet_NaN();
      const auto out = ml::scaled_dot_product_attention(r.q(dtype), r.k(dtype), r.v(dtype), Matrix(), {}, true).to_vector();
      for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(std::isnan(out[i]), i >= 2 * 16) << name(dtype) << " " << i;

      // Packed heads [B*S, H*D], read in place.
      const std::int64_t B = 2, S = 40, H = 3, D = 32;
      const auto leaf = [&](std::uint32_t seed) {
        return Matrix::from_vector({B * S, H * D}, Matrix::from_vector({B * S, H * D}, random_floats(B * S * H * D, seed), dtype).to_vector());
      };
      const Matrix q = leaf(1), k = leaf(2), v = leaf(3);
      using oa::matrix::cast;
      const Matrix packed = ml::scaled_dot_product_attention_causal(cast(q, dtype), cast(k, dtype), cast(v, dtype), S, H);
      const Matrix wide = ml::scaled_dot_product_attention_causal(q, k, v, S, H);
      expect_close_to(packed, wide, unit(dtype), name(dtype) + " packed");
    }
}

// The backward on workgroup-scope tensor-core matrices (f16), forced with
// two tiles (a tile that does not serve a head dim gives way to the first
// that does), on the tensor-core problems and the extreme inputs, against
// the F32 path on the rounded inputs: gradients within a few u of their
// largest term (p and ds are rounded to f16 before their products), NaNs
// exactly where the F32 path has them (a NaN key in one tile: hidden keys
// times a NaN make NaNs wherever a pass multiplies them, which depends on
// its tiles).
TEST(AttentionHalf, TensorCoreBackwardMatchesTheF32Path) {
  if (engine().device().workgroup_cooperative_matrix.empty())
    GTEST_SKIP() << "the device has no workgroup-scope cooperative matrices: the tensor-core backward runs on devices that have them";
  const DType dtype = DType::F16;
  attention_detail::FlashLoweringGuard guard(FlashLowering::Coopmat, FlashLowering::Coopmat);
  // Whether the backward of case c lowers to the tensor-core passes (when some tile serves its head dim).
  const auto lowered = [&](const Rounded& r, const Case& c) {
    bool serves = false;
    for (const std::string_view t : oa::tuning_point("attention.coopmat_backward").variants) {
      unsigned br = 0, bc = 0;
      serves = serves || (workgroup_tile_serves(t, static_cast<std::uint32_t>(c.dh)) && std::sscanf(std::string(t).c_str(), "wg%ux%u", &br, &bc) == 2 &&
                          engine().device().has_workgroup_cooperative_matrix(DType::F16, DType::F16, br, static_cast<std::uint32_t>(c.dh), bc, 2 * br));
    }
    const Matrix q = r.q(dtype), k = r.k(dtype), v = r.v(dtype);
    const auto f = ml::flash_attention(q, k, v, r.mask, {}, c.causal, c.variant);
    const auto g = attention_detail::attention_geometry(kSdpa, q, k, v, r.mask, {}, c.causal, c.variant);
    std::vector<oa::runtime::ComputeDispatch> ds;
    attention_detail::lower_flash_attention_backward(engine(), g, q, k, v, r.mask, f.output, f.softmax_stats, r.grad(dtype), Matrix(), ds);
    return !ds.empty() && (ds[0].kernel == oa::kernels::ml_attention_flash_backward_dq_coopmat2) == serves;
  };
  // Two tiles (128 and 256 invocations): each tile compiles its own kernels for every head dim.
  for (const std::string_view tile : {"wg64x16", "wg128x32"}) {
    const oa_test::Forced forced("attention.coopmat_backward", std::string(tile));
    std::uint32_t seed = 1000;
    for (const Case& c : kTensorCoreCases) {
      SCOPED_TRACE("tile " + std::string(tile) + " " + describe(c));
      const Rounded r = rounded(c, dtype, seed += 10);
      EXPECT_TRUE(lowered(r, c));
      expect_as_f32(r, c, dtype, ml::SdpaBackend::Flash);
    }
  }
  expect_masks_and_offsets_as_f32(dtype, lowered);
  // Whole tiles of rows and keys, a negative scale, causal and not.
  for (bool causal : {false, true}) {
    const Case c{1, 160, 192, 64, 64, false, causal};
    const Rounded r = rounded(c, dtype, 1130);
    SCOPED_TRACE(std::string("whole tiles") + (causal ? " causal" : ""));
    EXPECT_TRUE(lowered(r, c));
    expect_as_f32(r, c, dtype, ml::SdpaBackend::Flash, 0.125f);
    expect_as_f32(r, c, dtype, ml::SdpaBackend::Flash, -0.125f);
  }
  const Case c{1, 8, 8, 16, 16, false, true};
  Rounded r = rounded(c, dtype, 1120);
  r.vk[2 * 16 + 3] = std::numeric_limits<float>::quiet_NaN();
  SCOPED_TRACE("NaN key");
  expect_as_f32(r, c, dtype, ml::SdpaBackend::Flash);
}

}  // namespace
