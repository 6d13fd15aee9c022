#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <tuple>

#include "oa/oa.hpp"
#include "reference/elementwise.hpp"
#include "support/expect.hpp"

using oa::Matrix;
using oa::Shape;

namespace {

std::vector<float> values(std::size_t n, std::uint64_t seed, float lo = -2, float hi = 2) {
  return Matrix::uniform({static_cast<std::int64_t>(n)}, lo, hi, seed).to_vector();
}

// An operand b broadcast against a of shape [3, 4, 5]: the kernel's own
// patterns (same shape, a trailing row, per channel, a scalar) and one that
// oa::matrix::expand materialises first ([3, 1, 5]).
struct Broadcast {
  Shape b_shape;
  std::function<std::size_t(std::size_t)> b_index;  // full flat index -> b flat index
};
const std::vector<Broadcast> kBroadcasts = {
    {{3, 4, 5}, [](std::size_t i) { return i; }},
    {{5}, [](std::size_t i) { return i % 5; }},              // trailing row
    {{1, 4, 1}, [](std::size_t i) { return (i / 5) % 4; }},  // per-channel
    {{4, 5}, [](std::size_t i) { return i % 20; }},
    {{3, 1, 1}, [](std::size_t i) { return i / 20; }},
    {{3, 1, 5}, [](std::size_t i) { return (i / 20) * 5 + i % 5; }},  // expanded first
    {{}, [](std::size_t) { return std::size_t{0}; }},                 // scalar
};

struct UnaryCase {
  const char* name;
  std::function<Matrix(const Matrix&)> op;
  std::function<double(double)> ref;
  float lo, hi;
};

}  // namespace

TEST(MatrixElementwise, UnaryOpsMatchReference) {
  const std::vector<UnaryCase> cases = {
      {"neg", [](auto& x) { return oa::matrix::neg(x); }, [](double v) { return -v; }, -2, 2},
      {"exp", [](auto& x) { return oa::matrix::exp(x); }, [](double v) { return std::exp(v); }, -2, 2},
      {"log", [](auto& x) { return oa::matrix::log(x); }, [](double v) { return std::log(v); }, 0.1f, 3},
      {"sqrt", [](auto& x) { return oa::matrix::sqrt(x); }, [](double v) { return std::sqrt(v); }, 0.1f, 3},
      {"rsqrt", [](auto& x) { return oa::matrix::rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 0.1f, 3},
      {"reciprocal", [](auto& x) { return oa::matrix::reciprocal(x); }, [](double v) { return 1 / v; }, 0.5f, 3},
      {"abs", [](auto& x) { return oa::matrix::abs(x); }, [](double v) { return std::abs(v); }, -2, 2},
      {"square", [](auto& x) { return oa::matrix::square(x); }, [](double v) { return v * v; }, -2, 2},
      {"relu", [](auto& x) { return oa::matrix::relu(x); }, [](double v) { return v > 0 ? v : 0; }, -2, 2},
      {"gelu", [](auto& x) { return oa::matrix::gelu(x); }, ref::gelu, -4, 4},
      {"silu", [](auto& x) { return oa::matrix::silu(x); }, ref::silu, -30, 30},
      {"tanh", [](auto& x) { return oa::matrix::tanh(x); }, [](double v) { return std::tanh(v); }, -4, 4},
      {"sigmoid", [](auto& x) { return oa::matrix::sigmoid(x); }, ref::sigmoid, -8, 8},
      {"clamp", [](auto& x) { return oa::matrix::clamp(x, -0.5f, 0.75f); }, [](double v) { return std::clamp(v, -0.5, 0.75); }, -2, 2},
      {"affine", [](auto& x) { return oa::matrix::affine(x, 3.0f, -1.0f); }, [](double v) { return 3 * v - 1; }, -2, 2},
  };
  for (std::size_t n : {1u, 7u, 1023u, 1025u, 4099u}) {
    for (auto& c : cases) {
      auto host = values(n, 11 + n, c.lo, c.hi);
      auto y = c.op(Matrix::from_vector({static_cast<std::int64_t>(n)}, host));
      EXPECT_TRUE(oa_test::near(y.to_vector(), ref::map(ref::to_f64(host), c.ref), 1e-6, 2e-6)) << c.name << " n=" << n;
    }
  }
}

TEST(MatrixElementwise, TanhIsAccurateNearZeroAndAtItsBranch) {
  // Relative error, where 1 - exp(-2|x|) cancels (tiny x) and on both sides of
  // the kernel's switch from its polynomial to exponentials (|x| = 0.2).
  std::vector<float> x;
  for (const float v : {1e-30f, 1e-20f, 1e-10f, 1e-6f, 1e-3f, 0.05f, 0.1999f, 0.2f, 0.2001f, 0.5f, 3.0f, 10.0f, 50.0f}) {
    x.push_back(v);
    x.push_back(-v);
  }
  const auto y = oa::matrix::tanh(Matrix::from_vector({static_cast<std::int64_t>(x.size())}, x)).to_vector();
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y[i] / std::tanh(static_cast<double>(x[i])), 1.0, 1e-6) << "x = " << x[i] << ": " << y[i];
}

TEST(MatrixElementwise, Log1pExpm1AndSoftplusAreAccurateNearZero) {
  // Relative error where log(1 + x) and exp(x) - 1 cancel, on both sides of
  // the kernels' switch at |x| = 0.25, and softplus over exp(x) there (x in [-16, -8]).
  std::vector<float> x;
  for (const float v : {1e-30f, 1e-10f, 1e-7f, 3e-4f, 0.01f, 0.2499f, 0.25f, 0.2501f, 0.5f, 0.9f}) {
    x.push_back(v);
    x.push_back(-v);
  }
  const auto n = static_cast<std::int64_t>(x.size());
  const auto log1p = oa::matrix::log1p(Matrix::from_vector({n}, x)).to_vector();
  const auto expm1 = oa::matrix::expm1(Matrix::from_vector({n}, x)).to_vector();
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(log1p[i] / std::log1p(static_cast<double>(x[i])), 1.0, 1e-6) << "log1p " << x[i];
    EXPECT_NEAR(expm1[i] / std::expm1(static_cast<double>(x[i])), 1.0, 1e-6) << "expm1 " << x[i];
  }
  const std::vector<float> low{-16.0f, -15.0f, -12.0f, -10.0f, -8.0f, -2.0f};
  const auto softplus = oa::matrix::softplus(Matrix::from_vector({6}, low)).to_vector();
  for (std::size_t i = 0; i < low.size(); ++i)
    EXPECT_NEAR(softplus[i] / std::log1p(std::exp(static_cast<double>(low[i]))), 1.0, 1e-6) << "softplus " << low[i];
}

TEST(MatrixElementwise, BinaryOpsSameShapeAndBroadcast) {
  const Shape full{3, 4, 5};
  auto a_host = values(60, 1);
  auto a = Matrix::from_vector(full, a_host);
  using Fn = Matrix (*)(const Matrix&, const Matrix&);
  const std::vector<std::pair<Fn, std::function<double(double, double)>>> ops = {
      {oa::matrix::add, std::plus<double>()},
      {oa::matrix::sub, std::minus<double>()},
      {oa::matrix::mul, std::multiplies<double>()},
      {oa::matrix::div, std::divides<double>()},
      {oa::matrix::maximum, [](double x, double y) { return std::max(x, y); }},
      {oa::matrix::minimum, [](double x, double y) { return std::min(x, y); }},
  };
  for (auto& c : kBroadcasts) {
    auto b_host = values(static_cast<std::size_t>(c.b_shape.numel()), 2, 0.5f, 2.0f);
    auto b = Matrix::from_vector(c.b_shape, b_host);
    for (auto& [fn, ref] : ops) {
      std::vector<double> want(60), want_rev(60);
      for (std::size_t i = 0; i < 60; ++i) {
        want[i] = ref(a_host[i], b_host[c.b_index(i)]);
        want_rev[i] = ref(b_host[c.b_index(i)], a_host[i]);
      }
      auto z = fn(a, b);
      EXPECT_EQ(z.shape(), full);
      EXPECT_TRUE(oa_test::near(z.to_vector(), want, 1e-6, 1e-6)) << c.b_shape.to_string();
      EXPECT_TRUE(oa_test::near(fn(b, a).to_vector(), want_rev, 1e-6, 1e-6)) << "reversed " << c.b_shape.to_string();
    }
  }
  auto s = (a * 2.0f - 1.0f) / 4.0f + 0.5f;
  std::vector<double> want(60);
  for (std::size_t i = 0; i < 60; ++i) want[i] = (a_host[i] * 2.0 - 1.0) / 4.0 + 0.5;
  EXPECT_TRUE(oa_test::near(s.to_vector(), want, 1e-6, 1e-6));
}

// i32 add, sub, mul, maximum and minimum: exact int32 results (past 2^24,
// where f32 rounds), add, sub and mul wrapping modulo 2^32 (computed here in
// uint32, where wrapping is defined), over the kernel's broadcasts and one
// that expands an operand first; div of i32 is refused (torch's true division
// gives a float).
TEST(MatrixElementwise, Int32BinaryOpsAreExactAndWrap) {
  const Shape full{3, 4, 5};
  std::vector<std::int32_t> a_host(60);
  for (std::size_t i = 0; i < 60; ++i)
    a_host[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(i) * 2654435761u) ^ (i % 3 == 0 ? 0 : (1 << 24) + 1);
  a_host[0] = INT32_MAX;
  a_host[1] = INT32_MIN;
  a_host[2] = -7;
  a_host[3] = 0;
  const Matrix a = Matrix::from_i32(full, a_host);
  using Fn = Matrix (*)(const Matrix&, const Matrix&);
  const auto wrap = [](std::uint32_t v) { return static_cast<std::int32_t>(v); };
  const auto u = [](std::int32_t v) { return static_cast<std::uint32_t>(v); };
  const std::vector<std::pair<Fn, std::function<std::int32_t(std::int32_t, std::int32_t)>>> ops = {
      {oa::matrix::add, [&](std::int32_t x, std::int32_t y) { return wrap(u(x) + u(y)); }},
      {oa::matrix::sub, [&](std::int32_t x, std::int32_t y) { return wrap(u(x) - u(y)); }},
      {oa::matrix::mul, [&](std::int32_t x, std::int32_t y) { return wrap(u(x) * u(y)); }},
      {oa::matrix::maximum, [](std::int32_t x, std::int32_t y) { return std::max(x, y); }},
      {oa::matrix::minimum, [](std::int32_t x, std::int32_t y) { return std::min(x, y); }},
      // Python's // and % in f64 (exact: |x| < 2^53) and int64, wrapped to
      // int32 (INT32_MIN // -1); a zero divisor gives 0 for both.
      {oa::matrix::floor_divide,
       [&](std::int32_t x, std::int32_t y) { return y == 0 ? 0 : wrap(static_cast<std::uint32_t>(static_cast<std::int64_t>(std::floor(double(x) / y)))); }},
      {oa::matrix::remainder,
       [&](std::int32_t x, std::int32_t y) {
         return y == 0 ? 0 : static_cast<std::int32_t>(std::int64_t{x} - std::int64_t{y} * static_cast<std::int64_t>(std::floor(double(x) / y)));
       }},
      {oa::matrix::bitwise_and, [](std::int32_t x, std::int32_t y) { return x & y; }},
      {oa::matrix::bitwise_or, [](std::int32_t x, std::int32_t y) { return x | y; }},
      {oa::matrix::bitwise_xor, [](std::int32_t x, std::int32_t y) { return x ^ y; }},
  };
  std::uint32_t seed = 11;
  for (const Broadcast& c : kBroadcasts) {
    std::vector<std::int32_t> b_host(static_cast<std::size_t>(c.b_shape.numel()));
    for (auto& v : b_host) {
      seed = seed * 1103515245u + 12345u;
      v = static_cast<std::int32_t>(seed) >> (seed % 2 == 0 ? 0 : 20);  // large and small
    }
    b_host[0] = -3;
    if (b_host.size() > 2) b_host[1] = 0, b_host[2] = -1;  // zero divisors, INT32_MIN // -1
    const Matrix b = Matrix::from_i32(c.b_shape, b_host);
    for (const auto& [fn, ref] : ops) {
      std::vector<std::int32_t> want(60), want_rev(60);
      for (std::size_t i = 0; i < 60; ++i) {
        want[i] = ref(a_host[i], b_host[c.b_index(i)]);
        want_rev[i] = ref(b_host[c.b_index(i)], a_host[i]);
      }
      const Matrix z = fn(a, b);
      EXPECT_EQ(z.dtype(), oa::DType::I32);
      EXPECT_EQ(z.shape(), full);
      EXPECT_EQ(z.to_i32(), want) << c.b_shape.to_string();
      EXPECT_EQ(fn(b, a).to_i32(), want_rev) << "reversed " << c.b_shape.to_string();
    }
  }
  const Matrix one = Matrix::from_i32({}, std::vector<std::int32_t>{1});
  EXPECT_EQ((Matrix::from_i32({2}, std::vector<std::int32_t>{INT32_MAX, 5}) + one).to_i32(), (std::vector<std::int32_t>{INT32_MIN, 6}));
  oa::TraceCapture trace(a.engine());
  EXPECT_TRUE(
      oa_test::throws([&] { (void)oa::matrix::div(a, a); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::div", "a", "i32", "[3, 4, 5]"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::add(a, Matrix::ones(full)); }, oa::ErrorKind::InvalidArgument,
                              {"oa::matrix::add", "i32", "f32"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)(a + 1.0f); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::affine", "x", "i32"}));
  EXPECT_TRUE(trace.ops().empty());
}

// neg, abs, sign and bitwise_not of i32 (neg and abs wrap at INT32_MIN), and
// torch's integer pow: by squaring, wrapping modulo 2^32; negative exponents
// give 1, +-1 or 0.
TEST(MatrixElementwise, Int32UnaryOpsAndPow) {
  const std::vector<std::int32_t> x = {0, 1, -1, 7, -7, 123456789, -987654321, INT32_MAX, INT32_MIN, 1 << 24, -(1 << 24) - 1};
  const auto n = static_cast<std::int64_t>(x.size());
  const Matrix m = Matrix::from_i32({n}, x);
  std::vector<std::int32_t> neg, abs, sign, inverted;
  for (std::int32_t v : x) {
    const std::int64_t wide = v;
    sign.push_back(v > 0 ? 1 : v < 0 ? -1 : 0);
    neg.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(-wide)));
    abs.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(wide < 0 ? -wide : wide)));
    inverted.push_back(static_cast<std::int32_t>(-wide - 1));
  }
  EXPECT_EQ(oa::matrix::neg(m).to_i32(), neg);
  EXPECT_EQ(oa::matrix::abs(m).to_i32(), abs);
  EXPECT_EQ(oa::matrix::sign(m).to_i32(), sign);
  EXPECT_EQ(oa::matrix::bitwise_not(m).to_i32(), inverted);
  EXPECT_EQ(oa::matrix::neg(m).dtype(), oa::DType::I32);
  EXPECT_EQ(oa::matrix::sign(m).dtype(), oa::DType::I32);
  std::vector<std::int32_t> bases, exponents, want;
  for (std::int32_t b = -5; b <= 5; ++b)
    for (std::int32_t e = -3; e <= 12; ++e) {
      bases.push_back(b);
      exponents.push_back(e);
      std::int64_t p = 1;  // exact in int64: |5|^12 < 2^31
      if (e < 0) p = b == 1 ? 1 : b == -1 ? (e % 2 == 0 ? 1 : -1) : 0;
      for (std::int32_t k = 0; k < e; ++k) p *= b;
      want.push_back(static_cast<std::int32_t>(p));
    }
  for (auto [b, e, p] : {std::tuple{3, 25, std::int64_t{847288609443}}, std::tuple{-7, 20, std::int64_t{79792266297612001}},
                         std::tuple{2, 31, std::int64_t{2147483648}}, std::tuple{2, 40, std::int64_t{1} << 40}}) {
    bases.push_back(b);
    exponents.push_back(e);
    want.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(p))));  // wrapped
  }
  const auto k = static_cast<std::int64_t>(bases.size());
  const Matrix powered = oa::matrix::pow(Matrix::from_i32({k}, bases), Matrix::from_i32({k}, exponents));
  EXPECT_EQ(powered.dtype(), oa::DType::I32);
  EXPECT_EQ(powered.to_i32(), want);
  // A scalar exponent broadcasts; the host-float form and a float operand are refused.
  EXPECT_EQ(oa::matrix::pow(Matrix::from_i32({3}, std::vector<std::int32_t>{2, -3, 10}), Matrix::from_i32({}, std::vector<std::int32_t>{3}))
                .to_i32(),
            (std::vector<std::int32_t>{8, -27, 1000}));
  oa::TraceCapture trace(m.engine());
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::pow(m, 2.0f); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::pow", "i32", "host exponent"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::pow(m, Matrix::ones({n})); }, oa::ErrorKind::InvalidArgument,
                              {"oa::matrix::pow", "i32", "f32"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::bitwise_not(Matrix::ones({2})); }, oa::ErrorKind::InvalidArgument,
                              {"oa::matrix::bitwise_not", "f32", "i32, bool"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::bitwise_and(Matrix::ones({2}), Matrix::ones({2})); }, oa::ErrorKind::InvalidArgument,
                              {"oa::matrix::bitwise_and", "f32"}));
  EXPECT_TRUE(trace.ops().empty());
}

// Bool operands: add and maximum are the logical or, mul and minimum the
// logical and, the bitwise ops logical, bitwise_not the logical not, over the
// kernel's broadcasts (a bool word holds four elements: odd counts and
// broadcast bytes); sub of bools is refused.
TEST(MatrixElementwise, BoolLogicalOps) {
  const Shape full{3, 4, 5};
  std::vector<std::uint8_t> a_host(60);
  for (std::size_t i = 0; i < 60; ++i) a_host[i] = (i * 7 + i / 3) % 3 == 0;
  const Matrix a = Matrix::from_bool(full, a_host);
  using Fn = Matrix (*)(const Matrix&, const Matrix&);
  const std::vector<std::pair<Fn, std::function<bool(bool, bool)>>> ops = {
      {oa::matrix::add, [](bool x, bool y) { return x || y; }},         {oa::matrix::maximum, [](bool x, bool y) { return x || y; }},
      {oa::matrix::bitwise_or, [](bool x, bool y) { return x || y; }},  {oa::matrix::mul, [](bool x, bool y) { return x && y; }},
      {oa::matrix::minimum, [](bool x, bool y) { return x && y; }},     {oa::matrix::bitwise_and, [](bool x, bool y) { return x && y; }},
      {oa::matrix::bitwise_xor, [](bool x, bool y) { return x != y; }},
  };
  for (const Broadcast& c : kBroadcasts) {
    if (c.b_shape == Shape({3, 1, 5})) continue;  // needs expand, which takes no bool
    std::vector<std::uint8_t> b_host(static_cast<std::size_t>(c.b_shape.numel()));
    for (std::size_t i = 0; i < b_host.size(); ++i) b_host[i] = (i * 5 + 1) % 4 < 2;
    const Matrix b = Matrix::from_bool(c.b_shape, b_host);
    for (const auto& [fn, ref] : ops) {
      std::vector<std::uint8_t> want(60), want_rev(60);
      for (std::size_t i = 0; i < 60; ++i) {
        want[i] = ref(a_host[i] != 0, b_host[c.b_index(i)] != 0);
        want_rev[i] = ref(b_host[c.b_index(i)] != 0, a_host[i] != 0);
      }
      const Matrix z = fn(a, b);
      EXPECT_EQ(z.dtype(), oa::DType::Bool);
      EXPECT_EQ(z.to_bool(), want) << c.b_shape.to_string();
      EXPECT_EQ(fn(b, a).to_bool(), want_rev) << "reversed " << c.b_shape.to_string();
    }
  }
  for (std::int64_t n : {1, 6, 7, 13}) {  // partial last words
    std::vector<std::uint8_t> v(static_cast<std::size_t>(n)), inverted;
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = i % 3 == 1;
    for (std::uint8_t e : v) inverted.push_back(e ? 0 : 1);
    const Matrix m = Matrix::from_bool({n}, v);
    EXPECT_EQ(oa::matrix::bitwise_not(m).to_bool(), inverted) << n;
    // The padding bytes of the last word stay 0: a sum counts the elements alone.
    EXPECT_EQ(oa::matrix::sum(oa::matrix::bitwise_not(m), {}).to_i32()[0], std::count(inverted.begin(), inverted.end(), 1)) << n;
  }
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::sub(a, a); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::sub", "bool"}));
}

// floor_divide and remainder of floats as Python's // and % (f64 reference),
// on values whose results f32 holds exactly, in f32, f16 and bf16; zero
// divisors as IEEE 754; remainder's gradients (1 and -floor(a / b)).
TEST(MatrixElementwise, FloatFloorDivideAndRemainder) {
  std::vector<float> a_host, b_host;
  for (int i = -12; i <= 12; ++i)
    for (float b : {0.5f, -0.5f, 1.5f, -2.0f, 3.0f, -3.5f, 4.0f}) {
      a_host.push_back(static_cast<float>(i) * 1.25f);
      b_host.push_back(b);
    }
  const auto n = static_cast<std::int64_t>(a_host.size());
  for (oa::DType d : {oa::DType::F32, oa::DType::F16, oa::DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const Matrix a = Matrix::from_vector({n}, a_host, d), b = Matrix::from_vector({n}, b_host, d);
    std::vector<float> quotient, rest;
    for (std::size_t i = 0; i < a_host.size(); ++i) {
      const double q = std::floor(double{a_host[i]} / b_host[i]);
      quotient.push_back(static_cast<float>(q));
      rest.push_back(static_cast<float>(a_host[i] - q * b_host[i]));
    }
    EXPECT_EQ(oa::matrix::floor_divide(a, b).dtype(), d);
    EXPECT_EQ(oa::matrix::floor_divide(a, b).to_vector(), quotient);
    EXPECT_EQ(oa::matrix::remainder(a, b).to_vector(), rest);
  }
  const float inf = std::numeric_limits<float>::infinity();
  const Matrix u = Matrix::from_vector({4}, std::vector<float>{3, -3, 0, 2}), zero = Matrix::zeros({4});
  const auto q = oa::matrix::floor_divide(u, zero).to_vector(), r = oa::matrix::remainder(u, zero).to_vector();
  EXPECT_EQ(q[0], inf);
  EXPECT_EQ(q[1], -inf);
  EXPECT_TRUE(std::isnan(q[2]));
  for (float v : r) EXPECT_TRUE(std::isnan(v));
  // A zero remainder takes the divisor's sign; -0.5 // 1 is -1, 0.5 // -1 is -1.
  const auto signed_zero = oa::matrix::remainder(Matrix::from_vector({2}, std::vector<float>{4, -4}),
                                                 Matrix::from_vector({2}, std::vector<float>{-2, 2})).to_vector();
  EXPECT_TRUE(std::signbit(signed_zero[0]));
  EXPECT_FALSE(std::signbit(signed_zero[1]));
  EXPECT_EQ(oa::matrix::floor_divide(Matrix::from_vector({2}, std::vector<float>{-0.5f, 0.5f}), Matrix::from_vector({2}, std::vector<float>{1, -1}))
                .to_vector(),
            (std::vector<float>{-1, -1}));
  // Gradients: remainder's d/da = 1, d/db = -floor(a / b); floor_divide has none.
  const Matrix a = oa::set_requires_grad(Matrix::from_vector({3}, std::vector<float>{7, -7, 5.5f}));
  const Matrix b = oa::set_requires_grad(Matrix::from_vector({3}, std::vector<float>{2, 2, -1.5f}));
  oa::backward(oa::matrix::sum(oa::matrix::remainder(a, b), {}));
  EXPECT_EQ(oa::grad(a).to_vector(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(oa::grad(b).to_vector(), (std::vector<float>{-3, 4, 4}));
  EXPECT_FALSE(oa::requires_grad(oa::matrix::floor_divide(a, b)));
}

// Float floor_divide and remainder from C's exact fmod (ATen's formulas):
// quotients past 2^24, divisors not exact in binary, tiny and infinite
// divisors; the expected values computed the same way in float on the host.
TEST(MatrixElementwise, FloatFloorDivideAndRemainderAreExactAtAnyMagnitude) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs = {1e10f, 123456789.0f, 3e9f, -1e10f, 1e30f, 5.0f, -5.0f, 7.5f, -0.1f, 0.0f, 1e-30f, 16777217.0f, -inf};
  const std::vector<float> ds = {3.0f, 7.0f, 0.1f, -0.1f, 0.3f, inf, -inf, 1e-38f};
  std::vector<float> a_host, b_host, want_q, want_r;
  for (float x : xs)
    for (float d : ds) {
      a_host.push_back(x);
      b_host.push_back(d);
      const float m = std::fmod(x, d);  // exact, NaN for an infinite x
      float r = m != 0 && (d < 0) != (m < 0) ? m + d : m;
      if (m == 0) r = std::copysign(0.0f, d);
      want_r.push_back(r);
      float q = (x - m) / d;
      if (m != 0 && (d < 0) != (m < 0)) q -= 1;
      if (q == 0) {
        q = std::copysign(0.0f, x / d);
      } else {
        const float f = std::floor(q);
        q = q - f > 0.5f ? f + 1 : f;
      }
      want_q.push_back(q);
    }
  const auto n = static_cast<std::int64_t>(a_host.size());
  const Matrix a = Matrix::from_vector({n}, a_host), b = Matrix::from_vector({n}, b_host);
  const auto q = oa::matrix::floor_divide(a, b).to_vector(), r = oa::matrix::remainder(a, b).to_vector();
  for (std::size_t i = 0; i < a_host.size(); ++i) {
    SCOPED_TRACE(std::to_string(a_host[i]) + " by " + std::to_string(b_host[i]));
    if (std::isnan(want_q[i])) EXPECT_TRUE(std::isnan(q[i])) << q[i];
    else EXPECT_EQ(q[i], want_q[i]);
    if (std::isnan(want_r[i])) EXPECT_TRUE(std::isnan(r[i])) << r[i];
    else {
      EXPECT_EQ(r[i], want_r[i]);
      EXPECT_EQ(std::signbit(r[i]), std::signbit(want_r[i]));
    }
  }
}

// pow's special values as C's pow, and its accuracy: integer exponents by
// squaring, 0.5 as sqrt, in f32, f16 and bf16 (each rounded once from f32).
TEST(MatrixElementwise, PowFollowsCAndIsAccurate) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    float a, b;
  };
  const std::vector<Case> cases = {{3, 20},  {10, 10},   {9, 0.5f},  {2, 0.5f},  {-2, 3},    {-2, -3},   {1.5f, -7}, {-1, inf},
                                   {-1, -inf}, {-0.0f, -1}, {0.0f, -1}, {-0.0f, 3}, {-0.0f, -2}, {-inf, 3}, {-inf, -3}, {-inf, 2},
                                   {0.5f, -inf}, {0.5f, inf}, {2, inf},  {2, -inf},  {-2, 0.5f}, {1, nan},   {nan, 0},   {7, 2.5f},
                                   {1.1f, 60}, {0.9f, -64}};
  std::vector<float> a_host, b_host;
  for (const Case& c : cases) {
    a_host.push_back(c.a);
    b_host.push_back(c.b);
  }
  const auto n = static_cast<std::int64_t>(cases.size());
  const auto got = oa::matrix::pow(Matrix::from_vector({n}, a_host), Matrix::from_vector({n}, b_host)).to_vector();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const double want = std::pow(double{cases[i].a}, double{cases[i].b});
    SCOPED_TRACE(std::to_string(cases[i].a) + " ^ " + std::to_string(cases[i].b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << got[i];
    } else if (std::isinf(want) || want == 0) {
      EXPECT_EQ(got[i], static_cast<float>(want));
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want));
    } else {
      EXPECT_LE(std::abs(got[i] - want), 4 * std::abs(want) * std::numeric_limits<float>::epsilon()) << got[i] << " vs " << want;
    }
  }
  // 0.5 is sqrt, rounded once; small integer exponents are exact where the result is.
  EXPECT_EQ(oa::matrix::pow(Matrix::from_vector({3}, std::vector<float>{9, 2, 1e6f}), 0.5f).to_vector(),
            (std::vector<float>{3, std::sqrt(2.0f), 1e3f}));
  EXPECT_EQ(oa::matrix::pow(Matrix::from_vector({3}, std::vector<float>{3, -5, 10}), 3.0f).to_vector(), (std::vector<float>{27, -125, 1000}));
  for (oa::DType d : {oa::DType::F16, oa::DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const Matrix h = Matrix::from_vector({3}, std::vector<float>{1.5f, -2, 4}, d);
    const Matrix y = oa::matrix::pow(h, 2.0f), z = oa::matrix::pow(h, Matrix::from_vector({3}, std::vector<float>{3, 3, 0.5f}, d));
    EXPECT_EQ(y.dtype(), d);
    EXPECT_EQ(y.to_vector(), (std::vector<float>{2.25f, 4, 16}));
    EXPECT_EQ(z.to_vector(), (std::vector<float>{3.375f, -8, 2}));
  }
}

TEST(MatrixElementwise, BadBroadcastNamesOpAndShapes) {
  auto a = Matrix::ones({3, 4, 5});
  auto b = Matrix::ones({2, 5});  // 2 against 4: no broadcast
  auto c = Matrix::ones({4, 4});
  const Matrix i = Matrix::from_i32({3}, std::vector<std::int32_t>{1, 2, 3}), f = Matrix::ones({2, 3, 1}), g = Matrix::ones({3});
  a.engine().synchronize();
  oa::TraceCapture trace(a.engine());
  const auto live = a.engine().memory_stats().live_storages;
  EXPECT_TRUE(oa_test::throws([&] { (void)(a + b); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::add", "[3, 4, 5]", "[2, 5]", "do not broadcast"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)(a * c); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::mul"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::clamp(a, 1, 0); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::clamp"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::relu(Matrix()); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::relu"}));
  // Operands that broadcast only through an expansion, of dtypes the op refuses: refused before it.
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::minimum(f, i); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::minimum", "f32", "i32"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::bitwise_and(f, g); }, oa::ErrorKind::InvalidArgument,
                              {"oa::matrix::bitwise_and", "f32", "[2, 3, 1]"}));
  EXPECT_TRUE(trace.ops().empty());
  EXPECT_EQ(a.engine().memory_stats().live_storages, live);
}

TEST(MatrixElementwise, ZeroSizeResults) {
  auto a = Matrix::zeros({0, 5});
  auto z = a + Matrix::ones({5});
  EXPECT_EQ(z.shape(), Shape({0, 5}));
  EXPECT_TRUE(z.to_vector().empty());
  EXPECT_TRUE(oa::matrix::exp(a).to_vector().empty());
}

TEST(MatrixCreation, FullArangeFromVectorAndErrors) {
  EXPECT_EQ(Matrix::full({2, 3}, 1.5f).to_vector(), std::vector<float>(6, 1.5f));
  EXPECT_EQ(Matrix::arange(0, 5).to_vector(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Matrix::arange(1, 2, 0.25f).to_vector(), (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  // The count comes from the arguments in double, as torch's: ceil(3.0000000000000004) = 4 (in f32 it was 3).
  EXPECT_EQ(Matrix::arange(0.1, 0.4, 0.1).numel(), 4);
  EXPECT_TRUE(oa_test::throws([] { Matrix::from_vector({2, 2}, std::vector<float>{1, 2, 3}); }, oa::ErrorKind::InvalidArgument,
                              {"from_vector", "[2, 2]"}));
  EXPECT_TRUE(oa_test::throws([] { Matrix::arange(0, 1, 0); }, oa::ErrorKind::InvalidArgument, {"arange"}));
  // A count past 2^63 once reached a float-to-integer conversion whose result is undefined.
  EXPECT_TRUE(oa_test::throws([] { Matrix::arange(-3e38f, 3e38f, 1e-30f); }, oa::ErrorKind::InvalidArgument, {"arange", "too many"}));
  EXPECT_TRUE(Matrix::arange(5, 1).to_vector().empty());
  auto i = Matrix::from_i32({3}, std::vector<std::int32_t>{-1, 0, 7});
  EXPECT_EQ(i.dtype(), oa::DType::I32);
  EXPECT_EQ(i.to_i32(), (std::vector<std::int32_t>{-1, 0, 7}));
  EXPECT_TRUE(oa_test::throws([&] { (void)i.to_vector(); }, oa::ErrorKind::InvalidArgument, {"f32"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::exp(i); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::exp", "f32"}));
}

TEST(MatrixCreation, SeededRandomIsDeterministicWithRightMoments) {
  auto u1 = Matrix::uniform({100000}, -1, 3, 42).to_vector();
  auto u2 = Matrix::uniform({100000}, -1, 3, 42).to_vector();
  auto u3 = Matrix::uniform({100000}, -1, 3, 43).to_vector();
  EXPECT_EQ(u1, u2);
  EXPECT_NE(u1, u3);
  double mean = 0, lo = 1e9, hi = -1e9;
  for (float v : u1) {
    mean += v;
    lo = std::min<double>(lo, v);
    hi = std::max<double>(hi, v);
  }
  mean /= u1.size();
  EXPECT_NEAR(mean, 1.0, 0.02);
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 3.0);
  auto n = Matrix::normal({100000}, 2, 0.5f, 7).to_vector();
  double m = 0, v = 0;
  for (float x : n) m += x;
  m /= n.size();
  for (float x : n) v += (x - m) * (x - m);
  v /= n.size();
  EXPECT_NEAR(m, 2.0, 0.01);
  EXPECT_NEAR(std::sqrt(v), 0.5, 0.01);
  for (float x : n) ASSERT_TRUE(std::isfinite(x));
  // A prefix of a longer draw equals the shorter draw: values depend on the index only.
  auto shortu = Matrix::uniform({1000}, -1, 3, 42).to_vector();
  EXPECT_TRUE(std::equal(shortu.begin(), shortu.end(), u1.begin()));
}

TEST(MatrixView, ReshapeSharesStorage) {
  auto a = Matrix::arange(0, 12).reshape({3, 4});
  auto b = a.reshape({2, -1});
  EXPECT_EQ(b.shape(), Shape({2, 6}));
  EXPECT_EQ(a.storage(), b.storage());
  b.write(oa_test::iota(12, 100));
  EXPECT_EQ(a.to_vector()[0], 100.0f);
  EXPECT_TRUE(oa_test::throws([&] { (void)a.reshape({5, 3}); }, oa::ErrorKind::InvalidArgument, {"reshape", "[3, 4]", "[5, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)a.reshape({-1, 5}); }, oa::ErrorKind::InvalidArgument, {"reshape"}));
  EXPECT_TRUE(oa_test::throws([&] { a.write(std::vector<float>(3)); }, oa::ErrorKind::InvalidArgument, {"write"}));
}

TEST(MatrixView, PrintsShapeAndTruncatedValues) {
  std::ostringstream os;
  os << Matrix::arange(0, 40).reshape({2, 20});
  const auto s = os.str();
  EXPECT_NE(s.find("Matrix([2, 20], f32)"), std::string::npos);
  EXPECT_NE(s.find("..."), std::string::npos);
  EXPECT_NE(s.find("39"), std::string::npos);
}

TEST(CoreShape, CheckedArithmeticAndErrors) {
  EXPECT_EQ(Shape({2, 3, 4}).numel(), 24);
  EXPECT_EQ(Shape().numel(), 1);
  EXPECT_EQ(Shape({2, 3, 4}).dim(-1), 4);
  EXPECT_TRUE(oa_test::throws([] { Shape({1ll << 40, 1ll << 40}); }, oa::ErrorKind::InvalidArgument, {"overflow"}));
  EXPECT_TRUE(oa_test::throws([] { Shape({2, -1}); }, oa::ErrorKind::InvalidArgument, {"negative"}));
  EXPECT_TRUE(oa_test::throws([] { Shape(std::vector<std::int64_t>(9, 1)); }, oa::ErrorKind::InvalidArgument, {"rank"}));
  EXPECT_TRUE(oa_test::throws([] { (void)Shape({2}).dim(3); }, oa::ErrorKind::InvalidArgument, {"axis"}));
}

// relu, clamp (both bounds, or one of them infinite), maximum and minimum
// return NaN for a NaN operand, as torch does (GLSL's max and min may return
// the other operand), in f32 and in the 16-bit dtypes; other values are
// unchanged.
TEST(MatrixElementwise, MaxMinReluAndClampPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs{nan, 1.5f, -1.5f, 0.25f, nan, -inf, inf, 3};
  const std::vector<float> ys{0.5f, nan, nan, -0.5f, nan, 2, -2, 3};
  for (const oa::DType dtype : {oa::DType::F32, oa::DType::F16, oa::DType::BF16}) {
    SCOPED_TRACE(oa::to_string(dtype));
    const Matrix x = oa::matrix::cast(Matrix::from_vector({8}, xs), dtype), y = oa::matrix::cast(Matrix::from_vector({8}, ys), dtype);
    auto f32 = [](const Matrix& m) { return oa::matrix::cast(m, oa::DType::F32).to_vector(); };
    const std::vector<std::pair<std::vector<float>, std::vector<float>>> cases{
        {f32(oa::matrix::relu(x)), {nan, 1.5f, 0, 0.25f, nan, 0, inf, 3}},
        {f32(oa::matrix::clamp(x, -1, 1)), {nan, 1, -1, 0.25f, nan, -1, 1, 1}},
        {f32(oa::matrix::clamp(x, -inf, 0)), {nan, 0, -1.5f, 0, nan, -inf, 0, 0}},
        {f32(oa::matrix::clamp(x, 0, inf)), {nan, 1.5f, 0, 0.25f, nan, 0, inf, 3}},
        {f32(oa::matrix::maximum(x, y)), {nan, nan, nan, 0.25f, nan, 2, inf, 3}},
        {f32(oa::matrix::minimum(x, y)), {nan, nan, nan, -0.5f, nan, -inf, -2, 3}}};
    for (std::size_t c = 0; c < cases.size(); ++c)
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const float got = cases[c].first[i], want = cases[c].second[i];
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(got)) << "case " << c << " element " << i << ": " << got;
        else
          EXPECT_EQ(got, want) << "case " << c << " element " << i;
      }
  }
}
