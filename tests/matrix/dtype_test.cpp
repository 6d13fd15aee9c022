// F16 and BF16 storage: host conversions and oa::matrix::cast against the f64
// definitions of the formats (tests/reference/dtype.hpp), exhaustively over
// the 16-bit patterns and densely over f32 (every tie and its neighbours);
// gradients through casts; and the refusal of 16-bit operands by the ops that
// have no 16-bit lowering.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "oa/oa.hpp"
#include "reference/dtype.hpp"
#include "support/expect.hpp"

namespace {

using oa::DType;
using oa::ErrorKind;
using oa::Matrix;
namespace mx = oa::matrix;
namespace ml = oa::ml;
namespace ref = oa::reference;

const ref::Float16Format& format_of(DType d) { return d == DType::F16 ? ref::kF16 : ref::kBF16; }

// f32 values that probe every rounding decision of `f`, both signs: each
// value of the format, each midpoint between neighbours (a tie, exact in f32)
// and the floats either side of it; the f32 extremes, subnormals, infinities
// and NaNs; and random f32 bit patterns.
std::vector<float> probes(const ref::Float16Format& f) {
  std::vector<float> out;
  for (std::uint32_t h = 0; h < f.inf(); ++h) {
    const double v = ref::decode(f, static_cast<std::uint16_t>(h));
    const double next = h + 1 < f.inf() ? ref::decode(f, static_cast<std::uint16_t>(h + 1)) : std::ldexp(1.0, f.bias() + 1);
    const auto mid = static_cast<float>((v + next) / 2);
    for (float x : {static_cast<float>(v), std::nextafter(mid, 0.0f), mid, std::nextafter(mid, INFINITY)}) {
      out.push_back(x);
      out.push_back(-x);
    }
  }
  const float nl = std::numeric_limits<float>::max();
  for (float x : {INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                  std::bit_cast<float>(0x7f800001u), std::bit_cast<float>(0xffc12345u), nl, -nl, std::numeric_limits<float>::denorm_min(),
                  -std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 1e-30f, 0x1p-25f, 0x1p-24f, 65504.0f,
                  65519.996f, 65520.0f, 65536.0f, 3.4e38f})
    out.push_back(x);
  std::mt19937 gen(15);
  for (int i = 0; i < 100000; ++i) out.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(gen())));
  return out;
}

// Every 16-bit pattern's value as a float (NaN patterns included).
std::vector<float> every_value(const ref::Float16Format& f) {
  std::vector<float> out;
  for (std::uint32_t h = 0; h < 0x10000; ++h) out.push_back(static_cast<float>(ref::decode(f, static_cast<std::uint16_t>(h))));
  return out;
}

// got[i] is the value of pattern want[i] of `f` (the same NaN-ness and sign for NaN and zeros).
::testing::AssertionResult same_values(const std::vector<float>& got, const std::vector<std::uint16_t>& want, const ref::Float16Format& f,
                                       const std::vector<float>& inputs) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  int misses = 0;
  std::ostringstream msg;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double w = ref::decode(f, want[i]);
    const bool ok = std::isnan(w) ? std::isnan(got[i]) : got[i] == w && std::signbit(got[i]) == std::signbit(w);
    if (!ok && misses++ < 5)
      msg << " [" << i << "] input " << std::hexfloat << inputs[i] << " got " << got[i] << " want " << w << std::defaultfloat;
  }
  if (misses) return ::testing::AssertionFailure() << misses << " mismatches:" << msg.str();
  return ::testing::AssertionSuccess();
}

std::vector<float> widen(const std::vector<std::uint16_t>& hs, DType d) {
  std::vector<float> out;
  for (auto h : hs) out.push_back(d == DType::F16 ? oa::float_from_f16(h) : oa::float_from_bf16(h));
  return out;
}

TEST(MatrixDtype, NamesAndSizes) {
  EXPECT_EQ(oa::to_string(DType::F16), "f16");
  EXPECT_EQ(oa::to_string(DType::BF16), "bf16");
  EXPECT_EQ(oa::size_of(DType::F16), 2u);
  EXPECT_EQ(oa::size_of(DType::BF16), 2u);
  EXPECT_EQ(ml::safetensors_dtype(DType::F16), "F16");
  EXPECT_EQ(ml::safetensors_dtype(DType::BF16), "BF16");
  // Odd element counts take whole 4-byte words.
  EXPECT_EQ(Matrix::empty({3}, DType::BF16).storage()->bytes(), 8u);
  EXPECT_EQ(Matrix::empty({2}, DType::F16).storage()->bytes(), 4u);
}

TEST(MatrixDtype, HostConversionsMatchTheDefinitions) {
  for (DType d : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const auto& f = format_of(d);
    // Widening, exhaustively.
    std::vector<std::uint16_t> all;
    for (std::uint32_t h = 0; h < 0x10000; ++h) all.push_back(static_cast<std::uint16_t>(h));
    EXPECT_TRUE(same_values(widen(all, d), all, f, every_value(f)));
    // Narrowing: the host helpers give the nearest pattern, ties to even.
    const auto xs = probes(f);
    std::vector<std::uint16_t> got;
    for (float x : xs) got.push_back(d == DType::F16 ? oa::f16_from_float(x) : oa::bf16_from_float(x));
    EXPECT_TRUE(same_values(widen(got, d), ref::round_all(f, xs), f, xs));
  }
  // Known patterns: ties to even, overflow, subnormals, NaN.
  EXPECT_EQ(oa::f16_from_float(1.0f), 0x3c00);
  EXPECT_EQ(oa::f16_from_float(1.0f + 0x1p-11f), 0x3c00);          // tie, to even
  EXPECT_EQ(oa::f16_from_float(1.0f + 3 * 0x1p-11f), 0x3c02);      // tie, to even (up)
  EXPECT_EQ(oa::f16_from_float(65504.0f), 0x7bff);
  EXPECT_EQ(oa::f16_from_float(65519.99f), 0x7bff);
  EXPECT_EQ(oa::f16_from_float(65520.0f), 0x7c00);                 // overflow to inf
  EXPECT_EQ(oa::f16_from_float(-1e6f), 0xfc00);
  EXPECT_EQ(oa::f16_from_float(0x1p-24f), 0x0001);                 // smallest subnormal
  EXPECT_EQ(oa::f16_from_float(0x1p-25f), 0x0000);                 // tie to zero
  EXPECT_EQ(oa::f16_from_float(-0x1.8p-25f), 0x8001);
  EXPECT_TRUE(std::isnan(oa::float_from_f16(oa::f16_from_float(NAN))));
  EXPECT_EQ(oa::bf16_from_float(1.0f), 0x3f80);
  EXPECT_EQ(oa::bf16_from_float(3.14159265f), 0x4049);
  EXPECT_EQ(oa::bf16_from_float(1.0f + 0x1p-8f), 0x3f80);          // tie, to even
  EXPECT_EQ(oa::bf16_from_float(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_TRUE(std::isnan(oa::float_from_bf16(oa::bf16_from_float(-NAN))));
}

TEST(MatrixDtype, CreationReadBackAndPrinting) {
  const std::vector<float> v = {1.0f, -2.5f, 0.1f, 65520.0f, 1e-8f};
  for (DType d : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const Matrix m = Matrix::from_vector({5}, v, d);
    EXPECT_EQ(m.dtype(), d);
    std::vector<std::uint16_t> want;
    for (float x : v) want.push_back(d == DType::F16 ? oa::f16_from_float(x) : oa::bf16_from_float(x));
    EXPECT_EQ(m.to_vector(), widen(want, d));
    m.write(std::vector<float>{2, 3, 4, 5, 6});
    EXPECT_EQ(m.to_vector(), (std::vector<float>{2, 3, 4, 5, 6}));
    EXPECT_EQ(Matrix::from_vector({1}, std::vector<float>{0.5f}, d).item(), 0.5f);
    std::ostringstream os;
    os << Matrix::from_vector({1, 3}, std::vector<float>{1.5f, -2, 0.25f}, d);
    EXPECT_EQ(os.str(), "Matrix([1, 3], " + std::string(oa::to_string(d)) + ")\n  [1.5 -2 0.25]");
  }
  std::ostringstream bits;
  bits << Matrix::from_bool({1, 3}, std::vector<bool>{true, false, true});
  EXPECT_EQ(bits.str(), "Matrix([1, 3], bool)\n  [1 0 1]");
  EXPECT_TRUE(oa_test::throws([] { Matrix::from_vector({2}, std::vector<float>{1, 2}, DType::I32); }, ErrorKind::InvalidArgument,
                              {"Matrix::from_vector", "i32"}));
  EXPECT_TRUE(oa_test::throws([] { Matrix::from_vector({3}, std::vector<float>{1, 2}, DType::F16); }, ErrorKind::InvalidArgument,
                              {"Matrix::from_vector", "2 values", "[3]"}));
  EXPECT_TRUE(oa_test::throws([] { Matrix::from_i32({1}, std::vector<std::int32_t>{1}).to_vector(); }, ErrorKind::InvalidArgument,
                              {"Matrix::to_vector", "i32"}));
}

TEST(MatrixDtype, CastRoundsToNearestEvenOnTheGpu) {
  for (DType d : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const auto& f = format_of(d);
    const auto xs = probes(f);
    const Matrix x = Matrix::from_vector({static_cast<std::int64_t>(xs.size())}, xs);
    const Matrix y = mx::cast(x, d);
    EXPECT_EQ(y.dtype(), d);
    EXPECT_TRUE(same_values(y.to_vector(), ref::round_all(f, xs), f, xs));
    // Widening is exact: every pattern.
    const auto all = every_value(f);
    const Matrix h = Matrix::from_vector({0x10000}, all, d);
    std::vector<std::uint16_t> patterns;
    for (std::uint32_t p = 0; p < 0x10000; ++p) patterns.push_back(static_cast<std::uint16_t>(p));
    EXPECT_TRUE(same_values(mx::cast(h, DType::F32).to_vector(), patterns, f, all));
    // Across the 16-bit formats: widen exactly, round once.
    const DType other = d == DType::F16 ? DType::BF16 : DType::F16;
    EXPECT_TRUE(same_values(mx::cast(h, other).to_vector(), ref::round_all(format_of(other), all), format_of(other), all));
  }
}

TEST(MatrixDtype, CastOfOddAndEmptyCountsAndTheTrace) {
  for (std::int64_t n : {0, 1, 3, 7, 8, 9, 1025, 4103}) {
    SCOPED_TRACE(n);
    const auto v = oa_test::random_values(n, static_cast<std::uint32_t>(n) + 1);
    const Matrix x = Matrix::from_vector({n}, v);
    for (DType d : {DType::F16, DType::BF16}) {
      const Matrix y = mx::cast(x, d);
      EXPECT_EQ(y.to_vector(), Matrix::from_vector({n}, v, d).to_vector());
      EXPECT_EQ(mx::cast(y, DType::F32).to_vector(), y.to_vector());
    }
  }
  const Matrix x = Matrix::from_vector({2, 3}, oa_test::random_values(6, 3));
  EXPECT_TRUE(mx::cast(x, DType::F32).same_as(x));  // identity: x itself
  oa::TraceCapture trace(x.engine());
  const Matrix y = mx::cast(x, DType::BF16);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::matrix::cast");
  EXPECT_EQ(std::get<std::string>(*ops[0].attribute("dtype")), "bf16");
  EXPECT_EQ(ops[0].dispatches, 1u);
  EXPECT_EQ(y.shape(), x.shape());
}

TEST(MatrixDtype, GradientOfACastIsTheCastBack) {
  const auto v = oa_test::random_values(7, 5), g = oa_test::random_values(7, 6);
  for (DType d : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const Matrix x = Matrix::from_vector({7}, v);
    oa::set_requires_grad(x);
    const Matrix h = mx::cast(x, d);
    // h is used twice: its two f16/bf16 gradient contributions add.
    const Matrix y = mx::add(mx::cast(h, DType::F32), mx::mul(mx::cast(h, DType::F32), 2.0f));
    oa::TraceCapture trace(x.engine());
    oa::backward(y, Matrix::from_vector({7}, g));
    EXPECT_EQ(oa_test::count_label(trace.ops(), "oa::matrix::cast backward"), 3u);
    std::vector<float> want;
    for (float gi : g) {
      const auto round = [d](float a) { return d == DType::F16 ? oa::float_from_f16(oa::f16_from_float(a)) : oa::float_from_bf16(oa::bf16_from_float(a)); };
      want.push_back(round(round(gi) + round(2 * gi)));
    }
    EXPECT_EQ(oa::grad(x).to_vector(), want);
    EXPECT_EQ(oa::grad(x).dtype(), DType::F32);
  }
}

// i32 to f32 rounds to nearest, ties to even (as the host's conversion, which
// is exact below 2^24 and rounds past it); to f16 and bf16 through that f32.
TEST(MatrixDtype, CastOfInt32RoundsToNearestEven) {
  std::vector<std::int32_t> v = {0, 1, -1, 7, -2048, 65504, 65520, (1 << 24) - 1, 1 << 24, (1 << 24) + 1, (1 << 24) + 3,
                                 -(1 << 24) - 1, -(1 << 24) - 3, (1 << 25) + 2, (1 << 25) + 6, 0x7fffffbf, 0x7fffffc0, INT32_MAX,
                                 INT32_MIN, INT32_MIN + 1, 123456789, -987654321};
  std::mt19937 gen(41);
  for (int k = 0; k < 1000; ++k) v.push_back(static_cast<std::int32_t>(gen()));
  const auto n = static_cast<std::int64_t>(v.size());
  const Matrix i = Matrix::from_i32({n}, v);
  std::vector<float> want;
  for (std::int32_t e : v) want.push_back(static_cast<float>(e));
  const Matrix f = mx::cast(i, DType::F32);
  EXPECT_EQ(f.dtype(), DType::F32);
  EXPECT_EQ(f.to_vector(), want);
  for (DType d : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const Matrix h = mx::cast(i, d);
    EXPECT_EQ(h.dtype(), d);
    EXPECT_EQ(h.to_vector(), Matrix::from_vector({n}, want, d).to_vector());
  }
  // An odd count (the last word's pair) and no elements.
  EXPECT_EQ(mx::cast(Matrix::from_i32({3}, std::vector<std::int32_t>{-5, 6, 7}), DType::F16).to_vector(), (std::vector<float>{-5, 6, 7}));
  EXPECT_TRUE(mx::cast(Matrix::from_i32({0}, std::vector<std::int32_t>{}), DType::F32).to_vector().empty());
  EXPECT_FALSE(oa::requires_grad(f));
}

// A float to i32 truncates toward zero, saturates at the int32 range and
// gives 0 for NaN (CUDA's conversion), from each floating dtype; the result
// takes no gradient and nothing is recorded for autograd.
TEST(MatrixDtype, CastToInt32TruncatesTowardZeroAndSaturates) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v = {0.0f, -0.0f, 0.5f, -0.5f, 1.0f, 2.5f, -2.5f, 2.999f, -2.999f, 65504.0f, -65504.0f, 16777217.0f,
                          2147483520.0f, -2147483520.0f, 2147483648.0f, -2147483648.0f, 1e10f, -1e10f, inf, -inf, nan, 1e-30f};
  std::mt19937 gen(43);
  std::uniform_real_distribution<float> u(-3e9f, 3e9f), s(-40.0f, 40.0f);
  for (int k = 0; k < 500; ++k) v.push_back(k % 2 ? u(gen) : s(gen));
  // The definition, in double: truncate, clamp, NaN -> 0.
  auto truncated = [](double a) {
    if (std::isnan(a)) return std::int32_t{0};
    return static_cast<std::int32_t>(std::clamp(std::trunc(a), double{INT32_MIN}, double{INT32_MAX}));
  };
  for (DType d : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const auto n = static_cast<std::int64_t>(v.size());
    const Matrix x = Matrix::from_vector({n}, v, d);
    oa::set_requires_grad(x);
    oa::TraceCapture trace(x.engine());
    const Matrix y = mx::cast(x, DType::I32);
    EXPECT_EQ(y.dtype(), DType::I32);
    EXPECT_EQ(y.shape(), x.shape());
    EXPECT_FALSE(oa::requires_grad(y));
    const auto ops = trace.ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(std::get<std::string>(*ops[0].attribute("dtype")), "i32");
    std::vector<std::int32_t> want;
    for (float e : x.to_vector()) want.push_back(truncated(e));  // x's values as stored in d
    EXPECT_EQ(y.to_i32(), want);
  }
  // Odd counts (the last pair) and no elements.
  EXPECT_EQ(mx::cast(Matrix::from_vector({3}, std::vector<float>{-1.5f, 7.9f, 3.0f}), DType::I32).to_i32(), (std::vector<std::int32_t>{-1, 7, 3}));
  EXPECT_EQ(mx::cast(Matrix::from_vector({3}, std::vector<float>{-1.5f, 7.9f, 3.0f}, DType::F16), DType::I32).to_i32(),
            (std::vector<std::int32_t>{-1, 7, 3}));
  EXPECT_TRUE(mx::cast(Matrix::zeros({0}), DType::I32).to_i32().empty());
  const Matrix i = Matrix::from_i32({2}, std::vector<std::int32_t>{4, -4});
  EXPECT_TRUE(mx::cast(i, DType::I32).same_as(i));
}

TEST(MatrixDtype, CastRefusesOtherDtypes) {
  const Matrix b = Matrix::from_bool({2}, std::vector<std::uint8_t>{1, 0});
  EXPECT_TRUE(oa_test::throws([&] { mx::cast(b, DType::F16); }, ErrorKind::InvalidArgument, {"oa::matrix::cast", "x", "bool"}));
  EXPECT_TRUE(oa_test::throws([] { mx::cast(Matrix::zeros({2}), DType::Bool); }, ErrorKind::InvalidArgument, {"oa::matrix::cast", "dtype", "bool"}));
  EXPECT_TRUE(oa_test::throws([] { mx::cast(Matrix(), DType::F16); }, ErrorKind::InvalidArgument, {"oa::matrix::cast", "x", "undefined"}));
}

// Every op without a 16-bit lowering refuses a 16-bit operand, naming itself,
// the argument and the dtype, before recording anything.
TEST(MatrixDtype, OpsWithout16BitLoweringsRefuse16BitOperands) {
  struct Case {
    const char* op;
    const char* arg;
    std::function<void(const Matrix& h, const Matrix& f)> call;  // h: the 16-bit operand; f: an f32 one of the same shape
    oa::Shape shape;
  };
  const Matrix i2 = Matrix::from_i32({2}, std::vector<std::int32_t>{0, 1});
  const Matrix f3 = Matrix::ones({3}), f23 = Matrix::ones({2, 3});
  const Matrix w33 = Matrix::ones({1, 1, 3, 3}), f44 = Matrix::ones({1, 1, 4, 4});
  const std::vector<Case> cases = {
      {"oa::matrix::pow", "a", [](const Matrix& h, const Matrix& f) { mx::pow(h, f); }, {2, 3}},
      {"oa::matrix::add", "a", [](const Matrix& h, const Matrix& f) { mx::add(h, f); }, {2, 3}},
      {"oa::matrix::add", "b", [](const Matrix& h, const Matrix& f) { mx::add(f, h); }, {2, 3}},
      {"oa::matrix::cumsum", "x", [](const Matrix& h, const Matrix&) { mx::cumsum(h, 0); }, {2, 3}},
      {"oa::ml::group_norm", "x", [&](const Matrix& h, const Matrix&) { ml::group_norm(h, 1); }, {2, 3}},
      {"oa::ml::layer_norm", "weight", [&](const Matrix& h, const Matrix&) { ml::layer_norm(f23, h, f3); }, {3}},
      {"oa::ml::rms_norm", "x", [](const Matrix& h, const Matrix&) { ml::rms_norm(h); }, {2, 3}},
      {"oa::ml::conv_2d", "input", [&](const Matrix& h, const Matrix&) { ml::conv_2d(h, w33); }, {1, 1, 4, 4}},
      {"oa::ml::conv_2d", "weight", [&](const Matrix& h, const Matrix&) { ml::conv_2d(f44, h); }, {1, 1, 3, 3}},
      {"oa::ml::max_pool_2d", "x", [](const Matrix& h, const Matrix&) { ml::max_pool_2d(h, 2); }, {1, 1, 4, 4}},
      {"oa::ml::avg_pool_2d", "x", [](const Matrix& h, const Matrix&) { ml::avg_pool_2d(h, 2); }, {1, 1, 4, 4}},
      {"oa::ml::mse_loss", "input", [](const Matrix& h, const Matrix& f) { ml::mse_loss(h, f); }, {2, 3}},
      {"oa::ml::mse_loss", "target", [](const Matrix& h, const Matrix& f) { ml::mse_loss(f, h); }, {2, 3}},
      {"oa::ml::embedding", "weight", [&](const Matrix& h, const Matrix&) { ml::embedding(i2, h); }, {2, 3}},
      {"oa::ml::dropout", "x", [](const Matrix& h, const Matrix&) { ml::dropout(h, 0.5, 1); }, {2, 3}},
  };
  for (DType d : {DType::F16, DType::BF16}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(c.op) + " " + c.arg + " " + std::string(oa::to_string(d)));
      const Matrix f = Matrix::ones(c.shape);
      const Matrix h = mx::cast(f, d);
      const auto before = h.engine().stats().semantic_ops;
      EXPECT_TRUE(oa_test::throws([&] { c.call(h, f); }, ErrorKind::InvalidArgument, {c.op, c.arg, std::string(oa::to_string(d)).c_str()}));
      EXPECT_EQ(h.engine().stats().semantic_ops, before);
    }
  }
}

}  // namespace
