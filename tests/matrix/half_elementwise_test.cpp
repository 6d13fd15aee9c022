// 16-bit lowerings of the elementwise ops, sum_to, the layout views and the
// attention head permutations, and what they save under autocast. Each op runs on f16 and
// bf16 storage (f32 arithmetic, one rounding): its result against the f64
// reference of the 16-bit inputs rounded once, and its gradients (reached
// through exact casts from f32 leaves) against the f64 derivative at those
// inputs, times the 16-bit output gradient, rounded once; the permutations
// move bits, so they must match the f32 path exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::DType;
using oa::Matrix;
using oa::Shape;
namespace mx = oa::matrix;
namespace ml = oa::ml;

// v rounded to `dtype` (f16 or bf16), to nearest even.
float rounded(float v, DType dtype) {
  return dtype == DType::F16 ? oa::float_from_f16(oa::f16_from_float(v)) : oa::float_from_bf16(oa::bf16_from_float(v));
}
std::vector<float> rounded(std::vector<float> v, DType dtype) {
  for (auto& x : v) x = rounded(x, dtype);
  return v;
}

// The largest relative spacing of `dtype`'s values: 2^-10 (f16), 2^-7 (bf16).
double ulp(DType dtype) { return dtype == DType::F16 ? 0x1.0p-10 : 0x1.0p-7; }

// got within `ulps` 16-bit spacings of magnitude[i] (|want[i]|, or for a sum
// of rounded terms the sum of their magnitudes), or of the largest magnitude
// for values near zero (which cancellation leaves less precise).
void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& magnitude, DType dtype,
                  double ulps, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double m : magnitude) scale = std::max(scale, m);
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], ulps * ulp(dtype) * (magnitude[i] + 1e-2 * scale)) << what << " at " << i;
}
void expect_close(const std::vector<float>& got, const std::vector<double>& want, DType dtype, double ulps, const std::string& what) {
  std::vector<double> magnitude;
  for (double w : want) magnitude.push_back(std::abs(w));
  expect_close(got, want, magnitude, dtype, ulps, what);
}

// A Matrix of f32 values that `dtype` holds exactly, requiring grad.
Matrix leaf(const Shape& shape, std::uint64_t seed, DType dtype, double low = -2, double high = 2) {
  Matrix m = Matrix::from_vector(shape, rounded(oa::test::test_values(shape.numel(), seed, low, high), dtype));
  oa::set_requires_grad(m);
  return m;
}

struct Unary {
  const char* name;
  std::function<Matrix(const Matrix&)> gpu;
  std::function<double(double)> f;
  double low, high;  // the input range
  // For an op whose backward reads its (16-bit, rounded) output y, as
  // torch's does: the derivative as a function of y; else null.
  std::function<double(double)> derivative_of_output = nullptr;
};

TEST(MatrixHalfElementwise, UnaryOpsAndGradientsRoundOnce) {
  const std::vector<Unary> ops = {
      {"gelu", [](const Matrix& x) { return mx::gelu(x); }, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, -3, 3},
      {"tanh", [](const Matrix& x) { return mx::tanh(x); }, [](double v) { return std::tanh(v); }, -3, 3, [](double y) { return 1 - y * y; }},
      {"silu", [](const Matrix& x) { return mx::silu(x); }, [](double v) { return v / (1 + std::exp(-v)); }, -3, 3},
      {"relu", [](const Matrix& x) { return mx::relu(x); }, [](double v) { return v > 0 ? v : 0.0; }, -3, 3},
      {"exp", [](const Matrix& x) { return mx::exp(x); }, [](double v) { return std::exp(v); }, -3, 3, [](double y) { return y; }},
      {"sqrt", [](const Matrix& x) { return mx::sqrt(x); }, [](double v) { return std::sqrt(v); }, 0.25, 4, [](double y) { return 0.5 / y; }},
      {"neg", [](const Matrix& x) { return mx::neg(x); }, [](double v) { return -v; }, -3, 3},
      {"affine", [](const Matrix& x) { return mx::affine(x, 0.75f, -0.5f); }, [](double v) { return 0.75 * v - 0.5; }, -3, 3},
      {"clamp", [](const Matrix& x) { return mx::clamp(x, -1.0f, 1.5f); }, [](double v) { return std::min(std::max(v, -1.0), 1.5); }, -3, 3},
      {"pow", [](const Matrix& x) { return mx::pow(x, 2.5f); }, [](double v) { return std::pow(v, 2.5); }, 0.25, 2},
  };
  const Shape shape{3, 37};  // an odd count: the last word is half used
  std::uint64_t seed = 1;
  for (DType dtype : {DType::F16, DType::BF16})
    for (const Unary& op : ops) {
      const std::string what = std::string(op.name) + " " + std::string(oa::to_string(dtype));
      const Matrix x = leaf(shape, seed++, dtype, op.low, op.high);
      const Matrix y = op.gpu(mx::cast(x, dtype));
      ASSERT_EQ(y.dtype(), dtype) << what;
      const std::vector<float> xs = x.to_vector(), gy = rounded(oa::test::test_values(shape.numel(), seed++), dtype);
      const std::vector<float> ys = mx::cast(y, DType::F32).to_vector();
      std::vector<double> want_y, want_g;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const double v = xs[i], h = 1e-6 * std::max(1.0, std::abs(v));
        want_y.push_back(op.f(v));
        want_g.push_back(gy[i] * (op.derivative_of_output ? op.derivative_of_output(ys[i]) : (op.f(v + h) - op.f(v - h)) / (2 * h)));
      }
      expect_close(ys, want_y, dtype, 1.0, what + " forward");
      oa::backward(mx::cast(y, DType::F32), Matrix::from_vector(shape, gy));
      expect_close(oa::grad(x).to_vector(), want_g, dtype, 1.5, what + " gradient");
    }
}

struct Binary {
  const char* name;
  std::function<Matrix(const Matrix&, const Matrix&)> gpu;
  std::function<double(double, double)> f;
};

// Same shapes, b broadcast ([C] against [N, C]) and a broadcast ([1, C, 1]
// against [N, C, L]): the broadcast operand's gradient is summed back by a
// 16-bit sum_to (in f32, rounded once).
TEST(MatrixHalfElementwise, BinaryOpsBroadcastAndSumTheirGradientsBack) {
  const std::vector<Binary> ops = {
      {"add", [](const Matrix& a, const Matrix& b) { return mx::add(a, b); }, [](double u, double v) { return u + v; }},
      {"sub", [](const Matrix& a, const Matrix& b) { return mx::sub(a, b); }, [](double u, double v) { return u - v; }},
      {"mul", [](const Matrix& a, const Matrix& b) { return mx::mul(a, b); }, [](double u, double v) { return u * v; }},
      {"div", [](const Matrix& a, const Matrix& b) { return mx::div(a, b); }, [](double u, double v) { return u / v; }},
      {"maximum", [](const Matrix& a, const Matrix& b) { return mx::maximum(a, b); }, [](double u, double v) { return std::max(u, v); }},
      {"pow", [](const Matrix& a, const Matrix& b) { return mx::pow(a, b); }, [](double u, double v) { return std::pow(u, v); }},
  };
  struct Layout {
    const char* label;
    Shape a, b;
    std::function<std::size_t(std::size_t)> b_of;  // the element of b that output element i reads (a has the output's shape)
    bool a_broadcast;
  };
  const std::vector<Layout> layouts = {
      {"same", {5, 7}, {5, 7}, [](std::size_t i) { return i; }, false},
      {"b_row", {5, 7}, {7}, [](std::size_t i) { return i % 7; }, false},
      {"a_channel", {3, 4, 5}, {1, 4, 1}, [](std::size_t i) { return (i / 5) % 4; }, true},
  };
  std::uint64_t seed = 100;
  for (DType dtype : {DType::F16, DType::BF16})
    for (const Binary& op : ops)
      for (const Layout& l : layouts) {
        const std::string what = std::string(op.name) + " " + l.label + " " + std::string(oa::to_string(dtype));
        // The big operand has the output's shape; the a_channel layout swaps the roles.
        const Shape big = l.a, small = l.b;
        const Matrix p = leaf(big, seed++, dtype, 0.5, 2), q = leaf(small, seed++, dtype, 0.5, 2);  // away from 0 (div)
        const Matrix &a = l.a_broadcast ? q : p, &b = l.a_broadcast ? p : q;
        const Matrix y = op.gpu(mx::cast(a, dtype), mx::cast(b, dtype));
        ASSERT_EQ(y.dtype(), dtype) << what;
        ASSERT_EQ(y.shape(), big) << what;
        const std::vector<float> ps = p.to_vector(), qs = q.to_vector();
        const std::vector<float> gy = rounded(oa::test::test_values(big.numel(), seed++), dtype);
        std::vector<double> want_y(ps.size()), want_gp(ps.size()), want_gq(qs.size()), terms_gq(qs.size());
        for (std::size_t i = 0; i < ps.size(); ++i) {
          const std::size_t j = l.b_of(i);
          const double u = l.a_broadcast ? qs[j] : ps[i], v = l.a_broadcast ? ps[i] : qs[j];
          const double hu = 1e-6 * std::max(1.0, std::abs(u)), hv = 1e-6 * std::max(1.0, std::abs(v));
          const double du = (op.f(u + hu, v) - op.f(u - hu, v)) / (2 * hu), dv = (op.f(u, v + hv) - op.f(u, v - hv)) / (2 * hv);
          want_y[i] = op.f(u, v);
          want_gp[i] = gy[i] * (l.a_broadcast ? dv : du);
          want_gq[j] += gy[i] * (l.a_broadcast ? du : dv);
          terms_gq[j] += std::abs(gy[i] * (l.a_broadcast ? du : dv));
        }
        expect_close(mx::cast(y, DType::F32).to_vector(), want_y, dtype, 1.0, what + " forward");
        oa::backward(mx::cast(y, DType::F32), Matrix::from_vector(big, gy));
        expect_close(oa::grad(p).to_vector(), want_gp, dtype, 1.5, what + " gradient of the full operand");
        // Each product is rounded (as the full operand's gradient), then their f32 sum once.
        expect_close(oa::grad(q).to_vector(), want_gq, terms_gq, dtype, 1.5, what + " gradient of the broadcast operand");
      }
}

// Element counts around the elementwise kernels' 16-byte quads (4 words: 4
// f32 or 8 16-bit elements), their 0..3-word tails and a workgroup's 4096
// words (matrix/elementwise_quads.glsl), in every dtype, forward and
// backward: exp then mul (same shape), mul with b broadcast, div with a
// broadcast. A 16-bit result is rounded once or twice (exp, then the
// product), its gradients likewise, so every comparison allows a few spacings.
TEST(MatrixHalfElementwise, QuadsAndTailsAtEveryCountAndDtype) {
  std::uint64_t seed = 300;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (std::int64_t n : {1, 3, 4, 5, 8, 9, 1023, 4097, 16391, (1 << 18) + 3}) {
      const std::string what = std::string(oa::to_string(dtype)) + " n=" + std::to_string(n);
      const double eps = dtype == DType::F32 ? 0x1.0p-22 : ulp(dtype);
      auto input = [&](const Shape& shape, double low, double high) {
        std::vector<float> v = oa::test::test_values(shape.numel(), seed++, low, high);
        Matrix m = Matrix::from_vector(shape, dtype == DType::F32 ? v : rounded(v, dtype));
        oa::set_requires_grad(m);
        return m;
      };
      auto in = [&](const Matrix& m) { return mx::cast(m, dtype); };
      auto out = [](const Matrix& m) { return mx::cast(m, DType::F32); };
      // got within 3 spacings of want (relative to magnitude: |want| or a sum's terms), reporting the first misses.
      auto close = [&](const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& magnitude,
                       const char* part) {
        ASSERT_EQ(got.size(), want.size()) << what << " " << part;
        std::size_t misses = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
          if (!(std::abs(got[i] - want[i]) <= 3 * eps * (magnitude[i] + 1e-3)) && misses++ < 3)
            ADD_FAILURE() << what << " " << part << " at " << i << ": " << got[i] << " vs " << want[i];
        EXPECT_EQ(misses, 0u) << what << " " << part;
      };
      auto abs_of = [](const std::vector<double>& v) {
        std::vector<double> r;
        for (double x : v) r.push_back(std::abs(x));
        return r;
      };
      const auto N = static_cast<std::size_t>(n);
      const Matrix a = input({n}, -2, 2), b = input({n}, -2, 2), r = input({3, n}, 0.5, 2);
      const Matrix y = mx::mul(mx::exp(in(a)), in(b));    // same shape: unary, binary and their backwards
      const Matrix z = mx::mul(in(r), in(b));             // b broadcast over r's rows
      const Matrix w = mx::div(in(a), mx::add(in(r), in(r)));  // a broadcast over 2r's rows
      const std::vector<float> av = a.to_vector(), bv = b.to_vector(), rv = r.to_vector();
      std::vector<double> want_y(N), want_z(3 * N), want_w(3 * N);
      for (std::size_t i = 0; i < 3 * N; ++i) {
        if (i < N) want_y[i] = std::exp(double(av[i])) * bv[i];
        want_z[i] = double(rv[i]) * bv[i % N];
        want_w[i] = av[i % N] / (2.0 * rv[i]);
      }
      close(out(y).to_vector(), want_y, abs_of(want_y), "exp * b");
      close(out(z).to_vector(), want_z, abs_of(want_z), "r * broadcast b");
      close(out(w).to_vector(), want_w, abs_of(want_w), "broadcast a / 2r");

      const std::vector<float> gy = rounded(oa::test::test_values(n, seed++), DType::BF16);  // exact in every dtype
      const std::vector<float> gz = rounded(oa::test::test_values(3 * n, seed++), DType::BF16);
      oa::backward(out(y), Matrix::from_vector({n}, gy));
      oa::backward(out(z), Matrix::from_vector({3, n}, gz));
      oa::backward(out(w), Matrix::from_vector({3, n}, gz));
      std::vector<double> want_ga(N), mag_ga(N), want_gb(N), mag_gb(N), want_gr(3 * N);
      for (std::size_t i = 0; i < N; ++i) {
        const double e = std::exp(double(av[i]));
        want_ga[i] = gy[i] * e * bv[i];
        mag_ga[i] = std::abs(want_ga[i]);
        want_gb[i] = gy[i] * e;
        mag_gb[i] = std::abs(want_gb[i]);
      }
      for (std::size_t i = 0; i < 3 * N; ++i) {
        const std::size_t j = i % N;
        const double by_b = gz[i] * double(rv[i]), by_a = gz[i] / (2.0 * rv[i]), by_r = -gz[i] * av[j] / (2.0 * rv[i] * rv[i]);
        want_gb[j] += by_b;
        mag_gb[j] += std::abs(by_b);
        want_ga[j] += by_a;
        mag_ga[j] += std::abs(by_a);
        want_gr[i] = gz[i] * bv[j] + by_r;  // d(a / (r + r)) / dr, through both uses of r
      }
      std::vector<double> mag_gr(3 * N);
      for (std::size_t i = 0; i < 3 * N; ++i) mag_gr[i] = std::abs(gz[i] * bv[i % N]) + std::abs(gz[i] * av[i % N] / (2.0 * rv[i] * rv[i]));
      close(oa::grad(a).to_vector(), want_ga, mag_ga, "gradient of a");
      close(oa::grad(b).to_vector(), want_gb, mag_gb, "gradient of b");
      close(oa::grad(r).to_vector(), want_gr, mag_gr, "gradient of r");
    }
}

TEST(MatrixHalfElementwise, SumToRoundsTheF32SumOnce) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    const Matrix x = leaf({6, 3, 40}, 300, dtype);
    const Matrix s = mx::sum_to(mx::cast(x, dtype), Shape{3, 1});
    ASSERT_EQ(s.dtype(), dtype);
    const std::vector<float> xs = x.to_vector();
    std::vector<double> want(3);
    for (std::size_t i = 0; i < xs.size(); ++i) want[(i / 40) % 3] += xs[i];
    expect_close(mx::cast(s, DType::F32).to_vector(), want, dtype, 1.0, "sum_to");
    // The backward broadcasts the gradient back exactly.
    const std::vector<float> gy = rounded({0.5f, -1.25f, 3.0f}, dtype);
    oa::backward(mx::cast(s, DType::F32), Matrix::from_vector({3, 1}, gy));
    const std::vector<float> g = oa::grad(x).to_vector();
    for (std::size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], gy[(i / 40) % 3]) << i;
  }
}

// split_heads, merge_heads and split_qkv_heads move 16-bit elements exactly
// (odd head dims included), forward and backward, as the f32 path does; a
// head tensor whose gradient is missing contributes zeros of its dtype.
TEST(MatrixHalfElementwise, HeadPermutationsMoveBitsExactly) {
  const std::int64_t B = 2, S = 3, H = 2;
  for (DType dtype : {DType::F16, DType::BF16})
    for (std::int64_t dh : {1, 3, 4}) {
      const std::string what = std::string(oa::to_string(dtype)) + " dh " + std::to_string(dh);
      const std::int64_t D = H * dh;
      const Matrix x = leaf({B * S, D}, 400 + dh, dtype), qkv = leaf({B * S, 3 * D}, 410 + dh, dtype);
      const Matrix split = ml::split_heads(mx::cast(x, dtype), B, S, H);
      ASSERT_EQ(split.dtype(), dtype) << what;
      EXPECT_EQ(mx::cast(split, DType::F32).to_vector(), ml::split_heads(x, B, S, H).to_vector()) << what;
      const Matrix merged = ml::merge_heads(split, B, S, H);
      ASSERT_EQ(merged.dtype(), dtype) << what;
      EXPECT_EQ(mx::cast(merged, DType::F32).to_vector(), x.to_vector()) << what;
      const ml::QkvHeads h16 = ml::split_qkv_heads(mx::cast(qkv, dtype), B, S, H);
      const ml::QkvHeads h32 = ml::split_qkv_heads(qkv, B, S, H);
      for (auto [got, want] : {std::pair{&h16.q, &h32.q}, std::pair{&h16.k, &h32.k}, std::pair{&h16.v, &h32.v}}) {
        ASSERT_EQ(got->dtype(), dtype) << what;
        EXPECT_EQ(mx::cast(*got, DType::F32).to_vector(), want->to_vector()) << what;
      }
      // Backward through merged (split then merge: the identity) and through q and v alone (k's gradient missing).
      const Shape hs{B * H, S, dh};
      const std::vector<float> g1 = rounded(oa::test::test_values(x.numel(), 420 + dh), dtype);
      oa::backward(mx::cast(merged, DType::F32), Matrix::from_vector(x.shape(), g1));
      EXPECT_EQ(oa::grad(x).to_vector(), g1) << what;
      const std::vector<float> gq = rounded(oa::test::test_values(hs.numel(), 430 + dh), dtype);
      const std::vector<float> gv = rounded(oa::test::test_values(hs.numel(), 440 + dh), dtype);
      const Matrix loss = mx::add(mx::sum_all(mx::mul(mx::cast(h16.q, DType::F32), Matrix::from_vector(hs, gq))),
                                  mx::sum_all(mx::mul(mx::cast(h16.v, DType::F32), Matrix::from_vector(hs, gv))));
      oa::backward(loss);
      const std::vector<float> got = oa::grad(qkv).to_vector();
      // The f32 path's gradient of the same loss.
      const Matrix q32 = leaf({B * S, 3 * D}, 410 + dh, dtype);
      const ml::QkvHeads f = ml::split_qkv_heads(q32, B, S, H);
      oa::backward(mx::add(mx::sum_all(mx::mul(f.q, Matrix::from_vector(hs, gq))), mx::sum_all(mx::mul(f.v, Matrix::from_vector(hs, gv)))));
      EXPECT_EQ(got, oa::grad(q32).to_vector()) << what;
    }
}

// permute, transpose, slice (strided, with its scatter backward into zeros)
// and expand move 16-bit bits exactly, odd counts included; expand's gradient
// is summed in f32 and rounded once.
TEST(MatrixHalfElementwise, LayoutViewsMoveBitsExactly) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    const std::string what(oa::to_string(dtype));
    const Matrix x = leaf({3, 5, 7}, 450, dtype);
    const Matrix h = mx::cast(x, dtype);
    const auto same = [&](const Matrix& got, const Matrix& want, const char* op) {
      ASSERT_EQ(got.dtype(), dtype) << op;
      EXPECT_EQ(mx::cast(got, DType::F32).to_vector(), want.to_vector()) << what << " " << op;
    };
    same(mx::permute(h, {2, 0, 1}), mx::permute(x, {2, 0, 1}), "permute");
    same(mx::transpose(h, 0, 2), mx::transpose(x, 0, 2), "transpose");
    same(mx::slice(h, 1, 1, 5, 2), mx::slice(x, 1, 1, 5, 2), "slice");
    same(mx::expand(mx::slice(h, 0, 0, 1), {4, 5, 7}), mx::expand(mx::slice(x, 0, 0, 1), {4, 5, 7}), "expand");
    // Gradients (a fresh cast each: a backward releases its graph): a permute
    // and a strided slice pass gy's bits back (zeros elsewhere); expand sums.
    const Shape ps{7, 3, 5}, ss{3, 2, 7}, es{2, 3, 5, 7};
    const std::vector<float> gp = rounded(oa::test::test_values(ps.numel(), 460), dtype);
    const std::vector<float> gs = rounded(oa::test::test_values(ss.numel(), 461), dtype);
    const std::vector<float> ge = rounded(oa::test::test_values(es.numel(), 462), dtype);
    const auto weighted = [](const Matrix& y, const Shape& s, const std::vector<float>& g) {
      return mx::sum_all(mx::mul(mx::cast(y, DType::F32), Matrix::from_vector(s, g)));
    };
    oa::backward(weighted(mx::permute(mx::cast(x, dtype), {2, 0, 1}), ps, gp));
    const std::vector<float> g_permute = oa::grad(x).to_vector();
    oa::zero_grad(x);
    oa::backward(weighted(mx::slice(mx::cast(x, dtype), 1, 1, 5, 2), ss, gs));
    const std::vector<float> g_slice = oa::grad(x).to_vector();
    oa::zero_grad(x);
    oa::backward(weighted(mx::expand(mx::cast(x, dtype), {2, 3, 5, 7}), es, ge));
    const std::vector<float> g_expand = oa::grad(x).to_vector();
    std::vector<double> want_expand(105);
    for (int i = 0; i < 210; ++i) want_expand[static_cast<std::size_t>(i % 105)] += ge[static_cast<std::size_t>(i)];
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 5; ++b)
        for (int c = 0; c < 7; ++c) {
          const std::size_t i = static_cast<std::size_t>((a * 5 + b) * 7 + c);
          ASSERT_EQ(g_permute[i], gp[static_cast<std::size_t>((c * 3 + a) * 5 + b)]) << what << " permute " << i;
          const float slice_want = b % 2 == 1 && b < 5 ? gs[static_cast<std::size_t>((a * 2 + b / 2) * 7 + c)] : 0.0f;
          ASSERT_EQ(g_slice[i], slice_want) << what << " slice " << i;
        }
    expect_close(g_expand, want_expand, dtype, 1.0, what + " expand gradient");
  }
}

// An f32 bias stays f32 in a 16-bit linear (autocast keeps it so): added to
// the f32 accumulators, its gradient summed in f32 from the 16-bit output
// gradient.
TEST(MatrixHalfElementwise, LinearTakesAnF32BiasWith16BitOperands) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    const Matrix x = leaf({5, 6}, 500, dtype), w = leaf({4, 6}, 501, dtype), b = leaf({4}, 502, dtype);
    const Matrix y = ml::linear(mx::cast(x, dtype), mx::cast(w, dtype), b);
    ASSERT_EQ(y.dtype(), dtype);
    const std::vector<float> xs = x.to_vector(), ws = w.to_vector(), bs = b.to_vector();
    std::vector<double> want(20);
    for (int r = 0; r < 5; ++r)
      for (int o = 0; o < 4; ++o) {
        double s = bs[o];
        for (int k = 0; k < 6; ++k) s += static_cast<double>(xs[r * 6 + k]) * ws[o * 6 + k];
        want[r * 4 + o] = s;
      }
    expect_close(mx::cast(y, DType::F32).to_vector(), want, dtype, 1.0, "linear");
    const std::vector<float> gy = rounded(oa::test::test_values(20, 503), dtype);
    oa::backward(mx::cast(y, DType::F32), Matrix::from_vector({5, 4}, gy));
    const std::vector<float> gb = oa::grad(b).to_vector();
    for (int o = 0; o < 4; ++o) {
      double s = 0;
      for (int r = 0; r < 5; ++r) s += gy[r * 4 + o];
      EXPECT_NEAR(gb[o], s, 1e-6) << o;  // f32 sums of 16-bit values: no 16-bit rounding
    }
    // Under autocast an f32 bias is not cast; a 16-bit one of another dtype is.
    oa::AutocastGuard guard(dtype);
    {
      oa::TraceCapture trace(x.engine());
      ml::linear(x, w, b);
      EXPECT_EQ(oa_test::count_label(trace.ops(), "oa::matrix::cast"), 2u);  // x and w
    }
    const DType other = dtype == DType::F16 ? DType::BF16 : DType::F16;
    const Matrix y2 = ml::linear(mx::cast(x, other), mx::cast(w, other), mx::cast(b, other));
    EXPECT_EQ(y2.dtype(), dtype);
  }
}

// A transformer block under autocast casts only where an f32 value meets a
// 16-bit op or the reverse: the layer norms' outputs into the two first
// projections, the four weights, and the two 16-bit branches into the f32
// residual adds. split_qkv_heads, attention, merge_heads and GELU take the
// projections' 16-bit results as they are; the biases stay f32.
TEST(MatrixHalfElementwise, ATransformerBlockCastsOnlyAtF32Boundaries) {
  oa::ml::Generator g(3);
  ml::nn::TransformerBlock block(32, 2, g, true, 0.0);
  const Matrix x = Matrix::from_vector({2, 8, 32}, oa::test::test_values(2 * 8 * 32, 600));
  for (DType dtype : {DType::F16, DType::BF16}) {
    oa::TraceCapture trace(x.engine());
    Matrix y;
    {
      oa::AutocastGuard guard(dtype);
      y = block.forward(x);
    }
    const std::vector<oa::SemanticOp> forward = trace.ops();
    EXPECT_EQ(oa_test::count_label(forward, "oa::matrix::cast"), 8u) << oa::to_string(dtype);
    EXPECT_EQ(y.dtype(), DType::F32);
  }
}

}  // namespace
