// The convolution family against the f64 oracles in tests/reference/conv.hpp.
#include "oa/ml/conv.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <tuple>

#include "matrix/gemm.hpp"
#include "oa/oa.hpp"
#include "reference/conv.hpp"
#include "reference/dtype.hpp"
#include "support/expect.hpp"
#include "support/forced_tuning.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::Matrix;
using oa::Shape;
using oa::reference::ConvParams;
using Dims = std::array<std::int64_t, 4>;

std::vector<float> random_values(std::int64_t count, std::uint32_t seed) {
  std::vector<float> v(static_cast<std::size_t>(count));
  std::uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
  }
  return v;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// A convolution case in 2-D terms; one_d cases have height 1 and kernel height 1
// and use index 1 of the per-axis parameters.
struct Case {
  bool transposed = false;
  bool one_d = false;
  std::int64_t n = 1, c = 1, o = 1, h = 1, w = 1, kh = 1, kw = 1;
  ConvParams p;
  bool bias = true;
};

std::string describe(const Case& k) {
  return fmt::format("{}{} N{} C{} O{} {}x{} k{}x{} s{},{} p{},{} d{},{} op{},{} g{}{}", k.transposed ? "conv_transpose" : "conv",
                     k.one_d ? "_1d" : "_2d", k.n, k.c, k.o, k.h, k.w, k.kh, k.kw, k.p.stride[0], k.p.stride[1],
                     k.p.padding[0], k.p.padding[1], k.p.dilation[0], k.p.dilation[1], k.p.output_padding[0],
                     k.p.output_padding[1], k.p.groups, k.bias ? " bias" : "");
}

Shape act_shape(const Case& k, std::int64_t c, std::int64_t h, std::int64_t w) {
  return k.one_d ? Shape{k.n, c, w} : Shape{k.n, c, h, w};
}

Dims weight_dims(const Case& k) {
  return k.transposed ? Dims{k.c, k.o / k.p.groups, k.kh, k.kw} : Dims{k.o, k.c / k.p.groups, k.kh, k.kw};
}

Shape weight_shape(const Case& k) {
  const Dims d = weight_dims(k);
  return k.one_d ? Shape{d[0], d[1], d[3]} : Shape{d[0], d[1], d[2], d[3]};
}

Matrix call(const Case& k, const Matrix& x, const Matrix& w, const Matrix& b) {
  const auto& p = k.p;
  if (k.one_d) {
    if (k.transposed)
      return oa::ml::conv_transpose_1d(x, w, b, {p.stride[1], p.padding[1], p.output_padding[1], p.dilation[1], p.groups});
    return oa::ml::conv_1d(x, w, b, {p.stride[1], p.padding[1], p.dilation[1], p.groups});
  }
  if (k.transposed) return oa::ml::conv_transpose_2d(x, w, b, {p.stride, p.padding, p.output_padding, p.dilation, p.groups});
  return oa::ml::conv_2d(x, w, b, {p.stride, p.padding, p.dilation, p.groups});
}

std::vector<double> reference(const Case& k, const std::vector<double>& x, const std::vector<double>& w,
                              const std::vector<double>& b, Dims& out) {
  const Dims xs{k.n, k.c, k.h, k.w};
  return k.transposed ? oa::reference::conv_transpose2d(x, xs, w, weight_dims(k), b, k.p, out)
                      : oa::reference::conv2d(x, xs, w, weight_dims(k), b, k.p, out);
}

// The dispatches one forward call records: one kernel, unless a
// multi-pass lowering is forced.
struct Dispatches {
  std::uint64_t low = 1, high = 1;
};

void check_forward(const Case& k, double tolerance = 1e-4, Dispatches dispatches = {}) {
  SCOPED_TRACE(describe(k));
  const Dims wd = weight_dims(k);
  const auto xv = random_values(k.n * k.c * k.h * k.w, 1);
  const auto wv = random_values(wd[0] * wd[1] * wd[2] * wd[3], 2);
  const auto bv = k.bias ? random_values(k.o, 3) : std::vector<float>{};
  const Matrix x = Matrix::from_vector(act_shape(k, k.c, k.h, k.w), xv);
  const Matrix w = Matrix::from_vector(weight_shape(k), wv);
  const Matrix b = k.bias ? Matrix::from_vector({k.o}, bv) : Matrix();
  oa::TraceCapture trace(x.engine());
  const Matrix y = call(k, x, w, b);
  const auto ops = trace.ops();
  Dims out;
  const auto want = reference(k, widen(xv), widen(wv), widen(bv), out);
  EXPECT_EQ(y.shape(), act_shape(k, out[1], out[2], out[3]));
  EXPECT_TRUE(oa_test::near(y.to_vector(), want, tolerance, tolerance));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, std::string("oa::ml::") + (k.transposed ? "conv_transpose" : "conv") + (k.one_d ? "_1d" : "_2d"));
  EXPECT_GE(ops[0].dispatches, dispatches.low);
  EXPECT_LE(ops[0].dispatches, dispatches.high);
  EXPECT_EQ(ops[0].inputs.size(), k.bias ? 3u : 2u);
}

Case conv2d(std::int64_t n, std::int64_t c, std::int64_t o, std::int64_t h, std::int64_t w, std::int64_t kh, std::int64_t kw,
            ConvParams p, bool bias = true) {
  return Case{false, false, n, c, o, h, w, kh, kw, p, bias};
}
Case tconv2d(std::int64_t n, std::int64_t c, std::int64_t o, std::int64_t h, std::int64_t w, std::int64_t kh, std::int64_t kw,
             ConvParams p, bool bias = true) {
  return Case{true, false, n, c, o, h, w, kh, kw, p, bias};
}
ConvParams params(std::array<std::int64_t, 2> s, std::array<std::int64_t, 2> pad, std::array<std::int64_t, 2> d,
                  std::int64_t g = 1, std::array<std::int64_t, 2> op = {0, 0}) {
  return ConvParams{s, pad, d, op, g};
}
ConvParams params1(std::int64_t s, std::int64_t pad, std::int64_t d, std::int64_t g = 1, std::int64_t op = 0) {
  return ConvParams{{1, s}, {0, pad}, {1, d}, {0, op}, g};
}
Case conv1d(std::int64_t n, std::int64_t c, std::int64_t o, std::int64_t l, std::int64_t k, ConvParams p, bool bias = true) {
  return Case{false, true, n, c, o, 1, l, 1, k, p, bias};
}
Case tconv1d(std::int64_t n, std::int64_t c, std::int64_t o, std::int64_t l, std::int64_t k, ConvParams p, bool bias = true) {
  return Case{true, true, n, c, o, 1, l, 1, k, p, bias};
}

// Strides 1-3, paddings 0-2, dilations 1-3, groups 1, 2 and C, batch 1 and 3,
// odd and rectangular extents; the channel counts reach every kernel variant
// (direct for few channels per group, and each implicit-GEMM tile shape).
const std::vector<Case>& conv2d_cases() {
  static const std::vector<Case> cases{
      conv2d(1, 3, 5, 7, 9, 3, 3, params({1, 1}, {1, 1}, {1, 1})),
      conv2d(3, 4, 6, 9, 7, 3, 2, params({2, 2}, {0, 0}, {1, 1}, 2)),
      conv2d(1, 5, 5, 11, 10, 3, 3, params({3, 3}, {2, 2}, {2, 2}, 5), false),
      conv2d(3, 2, 3, 8, 11, 2, 3, params({1, 2}, {2, 1}, {3, 1})),
      conv2d(1, 4, 18, 6, 7, 3, 3, params({1, 1}, {1, 1}, {1, 1}, 2)),
      conv2d(1, 3, 32, 5, 6, 3, 3, params({1, 1}, {1, 1}, {1, 1}), false),
      conv2d(1, 2, 64, 5, 5, 1, 1, params({1, 1}, {0, 0}, {1, 1})),
      conv2d(1, 2, 96, 4, 3, 2, 2, params({1, 1}, {0, 0}, {1, 1})),
      conv2d(3, 6, 12, 5, 5, 3, 3, params({2, 3}, {1, 2}, {3, 2}, 3)),
      conv2d(1, 3, 6, 9, 9, 3, 3, params({1, 1}, {1, 1}, {1, 1}, 3)),
      conv2d(3, 3, 8, 13, 17, 3, 3, params({1, 1}, {1, 1}, {1, 1})),
      conv2d(1, 2, 2, 19, 40, 3, 3, params({1, 1}, {1, 1}, {1, 1}, 2)),
  };
  return cases;
}

const std::vector<Case>& conv_transpose2d_cases() {
  static const std::vector<Case> cases{
      tconv2d(1, 3, 4, 4, 5, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 1, {1, 1})),
      tconv2d(3, 4, 6, 3, 4, 2, 3, params({3, 1}, {0, 2}, {1, 2}, 2, {2, 0})),
      tconv2d(1, 5, 5, 4, 4, 3, 3, params({2, 2}, {2, 2}, {3, 3}, 5), false),
      tconv2d(1, 4, 32, 3, 3, 4, 4, params({2, 2}, {1, 1}, {1, 1})),
      tconv2d(3, 4, 18, 3, 5, 3, 3, params({1, 2}, {1, 0}, {2, 1}, 2, {0, 1})),
      tconv2d(1, 2, 3, 3, 3, 2, 2, params({3, 3}, {0, 0}, {1, 1})),
      tconv2d(1, 2, 3, 4, 4, 3, 2, params({2, 3}, {1, 1}, {2, 3}, 1, {1, 2})),
      tconv2d(1, 2, 2, 9, 20, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 2, {1, 1})),
  };
  return cases;
}

const std::vector<Case>& conv1d_cases() {
  static const std::vector<Case> cases{
      conv1d(3, 3, 4, 11, 3, params1(2, 1, 2)),
      conv1d(1, 4, 4, 9, 2, params1(3, 2, 3, 4), false),
      conv1d(1, 4, 6, 13, 3, params1(1, 0, 1, 2)),
      conv1d(3, 2, 40, 70, 3, params1(1, 1, 1)),
  };
  return cases;
}

const std::vector<Case>& conv_transpose1d_cases() {
  static const std::vector<Case> cases{
      tconv1d(3, 3, 2, 5, 3, params1(2, 1, 1, 1, 1)),
      tconv1d(1, 4, 4, 6, 3, params1(3, 2, 2, 2, 2)),
      tconv1d(1, 3, 3, 7, 2, params1(1, 0, 3, 3), false),
      tconv1d(3, 2, 3, 6, 3, params1(2, 1, 2)),
  };
  return cases;
}

// Each case through the kernel the device's table picks: one dispatch, or
// Winograd's passes where the table takes it for an ungrouped 3x3 problem of
// stride and dilation 1 (the Hopper table does).
TEST(ConvForward, Conv2dMatchesReference) {
  for (const auto& k : conv2d_cases()) {
    const bool winograd_shape = k.kh == 3 && k.kw == 3 && k.p.groups == 1 && k.p.stride == std::array<std::int64_t, 2>{1, 1} &&
                                k.p.dilation == std::array<std::int64_t, 2>{1, 1};
    check_forward(k, 1e-4, winograd_shape ? Dispatches{1, 5} : Dispatches{});
  }
}

TEST(ConvForward, ConvTranspose2dMatchesReference) {
  for (const auto& k : conv_transpose2d_cases()) check_forward(k);
}

TEST(ConvForward, Conv1dMatchesReference) {
  for (const auto& k : conv1d_cases()) check_forward(k);
}

TEST(ConvForward, ConvTranspose1dMatchesReference) {
  for (const auto& k : conv_transpose1d_cases()) check_forward(k);
}

// Depthwise (groups = channels): the depthwise kernel for every convolution
// and for stride-1 transposed convolutions. Kernels 1-7, strides 1-2,
// paddings, dilations, widths a multiple of 4 (vector stores) and not, batch
// 1 and 3, bias or not; the stride-2 transposed ones take the direct kernel.
TEST(ConvForward, DepthwiseMatchesReference) {
  for (const auto& k :
       {conv1d(3, 5, 5, 19, 1, params1(1, 0, 1, 5)), conv1d(1, 4, 4, 13, 2, params1(2, 1, 1, 4), false),
        conv1d(3, 6, 6, 21, 3, params1(1, 2, 1, 6)), conv1d(2, 8, 8, 16, 4, params1(1, 3, 1, 8)),
        conv1d(1, 3, 3, 23, 5, params1(2, 2, 2, 3), false), conv1d(2, 4, 4, 30, 6, params1(1, 5, 3, 4)),
        conv1d(1, 7, 7, 33, 7, params1(2, 3, 1, 7)), conv2d(3, 3, 3, 8, 8, 1, 1, params({1, 1}, {0, 0}, {1, 1}, 3)),
        conv2d(1, 4, 4, 9, 11, 2, 2, params({2, 2}, {1, 0}, {1, 1}, 4), false),
        conv2d(2, 5, 5, 13, 12, 3, 3, params({1, 1}, {1, 1}, {1, 1}, 5)),
        conv2d(1, 6, 6, 15, 9, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 6)),
        conv2d(3, 2, 2, 10, 16, 4, 4, params({1, 2}, {2, 1}, {1, 1}, 2), false),
        conv2d(1, 4, 4, 14, 14, 5, 5, params({1, 1}, {2, 2}, {1, 1}, 4)),
        conv2d(2, 3, 3, 17, 13, 5, 3, params({2, 1}, {2, 1}, {2, 2}, 3)),
        conv2d(1, 8, 8, 7, 7, 7, 7, params({1, 1}, {3, 3}, {1, 1}, 8)),
        conv2d(2, 3, 3, 11, 20, 7, 7, params({1, 1}, {3, 3}, {1, 1}, 3), false),
        tconv1d(2, 4, 4, 17, 4, params1(1, 2, 1, 4)), tconv1d(1, 3, 3, 12, 3, params1(1, 0, 2, 3), false),
        tconv2d(1, 5, 5, 9, 10, 3, 3, params({1, 1}, {1, 1}, {1, 1}, 5)),
        tconv2d(2, 3, 3, 6, 7, 5, 5, params({1, 1}, {2, 0}, {1, 2}, 3), false),
        tconv2d(1, 4, 4, 5, 6, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 4, {1, 1}))})
    check_forward(k);
}

// Grouped convolutions with few channels per group that are not depthwise
// (two input channels per group, or two output channels per input channel)
// reach each tile of the direct kernel: 1 x 512 rows across several tiles,
// several planes per workgroup for small images, the larger staging of
// strided images; gathers included.
TEST(ConvForward, FewChannelsPerGroupDirectTiles) {
  for (const auto& k : {conv1d(1, 4, 2, 1100, 3, params1(1, 1, 1, 2)), conv1d(2, 2, 4, 700, 5, params1(2, 2, 2, 2), false),
                        conv2d(2, 4, 4, 7, 7, 3, 3, params({1, 1}, {1, 1}, {1, 1}, 2)),
                        conv2d(1, 3, 6, 40, 38, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 3)),
                        tconv1d(1, 2, 4, 600, 3, params1(2, 1, 1, 2, 1)),
                        tconv2d(1, 4, 2, 9, 20, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 2, {1, 1}))})
    check_forward(k);
}

// A window over the whole unpadded input (one output position) is one GEMM,
// its K split where few output tiles would run: forward with and without
// bias, a stride that no tap uses, 1-D.
TEST(ConvForward, WholeInputWindowIsOneGemm) {
  for (const auto& k : {conv2d(3, 5, 7, 4, 4, 4, 4, params({1, 1}, {0, 0}, {1, 1})),
                        conv2d(2, 64, 3, 4, 4, 4, 4, params({2, 2}, {0, 0}, {1, 1}), false),
                        conv1d(2, 3, 5, 9, 9, params1(3, 0, 1))})
    check_forward(k, 1e-4, {1, 2});
}

// Problems large enough that each invocation of the depthwise kernel takes
// 4 and 2 output rows (smaller ones take one row to fill the GPU).
TEST(ConvForward, DepthwiseRowsPerInvocation) {
  for (const auto& k : {conv2d(2, 32, 32, 256, 256, 3, 3, params({1, 1}, {1, 1}, {1, 1}, 32), false),
                        conv2d(1, 64, 64, 131, 254, 5, 5, params({1, 1}, {2, 2}, {1, 1}, 64)),
                        tconv2d(2, 32, 32, 255, 256, 3, 3, params({1, 1}, {1, 1}, {1, 1}, 32))})
    check_forward(k);
}

// Winograd F(2x2, 3x3) forced (conv.kernel = winograd): ungrouped 3x3
// convolutions of stride 1 with paddings 0-3, odd and rectangular extents
// (partial output tiles), channel counts that are not multiples of 4 (the
// padded GEMM extents), batch 1-3, bias or not, a reduction over 300
// channels (the GEMM splits K), and stride-1 3x3 transposed convolutions
// (the gather form). Four dispatches (weight, input, GEMM, output
// transforms), five with a split K. Tolerance: the transforms add and
// subtract up to 4 input values, 9 weight taps (halved twice) and 9
// products per output, so the f32 rounding of a Winograd output is a few
// times that of the direct sum; here every error against the f64 oracle
// stays within 3e-6 (1 + |reference|) (outputs up to about 17 in magnitude,
// errors up to 8e-6 over 2700 terms), and 3e-5 leaves a margin of 10x.
TEST(ConvForward, WinogradMatchesReference) {
  const oa_test::Forced forced("conv.kernel", "winograd");
  for (const auto& k : {conv2d(2, 3, 5, 7, 9, 3, 3, params({1, 1}, {1, 1}, {1, 1})),
                        conv2d(3, 5, 6, 8, 11, 3, 3, params({1, 1}, {0, 0}, {1, 1}), false),
                        conv2d(1, 6, 7, 10, 5, 3, 3, params({1, 1}, {2, 2}, {1, 1})),
                        conv2d(2, 17, 13, 9, 9, 3, 3, params({1, 1}, {1, 1}, {1, 1})),
                        conv2d(1, 4, 9, 5, 6, 3, 3, params({1, 1}, {3, 2}, {1, 1})),
                        conv2d(1, 3, 4, 3, 4, 3, 3, params({1, 1}, {0, 0}, {1, 1})),
                        conv2d(1, 300, 8, 4, 5, 3, 3, params({1, 1}, {1, 1}, {1, 1})),
                        tconv2d(2, 5, 7, 6, 9, 3, 3, params({1, 1}, {1, 1}, {1, 1})),
                        tconv2d(1, 4, 3, 5, 4, 3, 3, params({1, 1}, {0, 2}, {1, 1}), false)})
    check_forward(k, 3e-5, {4, 5});
}

TEST(ConvForward, SeedFormsMatchOptionForms) {
  const Matrix x = Matrix::from_vector({3, 2, 6, 5}, random_values(180, 4));
  const Matrix w = Matrix::from_vector({4, 1, 3, 3}, random_values(36, 5));
  const Matrix b = Matrix::from_vector({4}, random_values(4, 6));
  EXPECT_EQ(oa::ml::conv_2d(x, w, b, 2, 1, 2).to_vector(),
            oa::ml::conv_2d(x, w, b, {.stride = {2, 2}, .padding = {1, 1}, .groups = 2}).to_vector());
  const Matrix wt = Matrix::from_vector({2, 3, 3, 3}, random_values(54, 7));
  const Matrix bt = Matrix::from_vector({3}, random_values(3, 8));
  EXPECT_EQ(oa::ml::conv_transpose_2d(x, wt, bt, 2, 1).to_vector(),
            oa::ml::conv_transpose_2d(x, wt, bt, {.stride = {2, 2}, .padding = {1, 1}}).to_vector());
  const Matrix x1 = Matrix::from_vector({2, 3, 10}, random_values(60, 9));
  const Matrix w1 = Matrix::from_vector({2, 3, 3}, random_values(18, 10));
  const Matrix b1 = Matrix::from_vector({2}, random_values(2, 11));
  EXPECT_EQ(oa::ml::conv_1d(x1, w1, b1, 2, 1, 2).to_vector(),
            oa::ml::conv_1d(x1, w1, b1, {.stride = 2, .padding = 1, .dilation = 2}).to_vector());
  const Matrix wt1 = Matrix::from_vector({3, 2, 3}, random_values(18, 12));
  EXPECT_EQ(oa::ml::conv_transpose_1d(x1, wt1, 2, 1, 2).to_vector(),
            oa::ml::conv_transpose_1d(x1, wt1, Matrix(), {.stride = 2, .padding = 1, .dilation = 2}).to_vector());
}

TEST(ConvForward, ForwardIsDeterministic) {
  const Matrix x = Matrix::from_vector({3, 4, 9, 9}, random_values(972, 13));
  const Matrix w = Matrix::from_vector({40, 4, 3, 3}, random_values(1440, 14));
  EXPECT_EQ(oa::ml::conv_2d(x, w, Matrix(), {.padding = {1, 1}}).to_vector(),
            oa::ml::conv_2d(x, w, Matrix(), {.padding = {1, 1}}).to_vector());
}

TEST(ConvExact, ConvTranspose1dOnes) {
  // ones [1, 1, 6] through ones [1, 1, 3], stride 2, padding 1, dilation 2.
  const Matrix y = oa::ml::conv_transpose_1d(Matrix::ones({1, 1, 6}), Matrix::ones({1, 1, 3}), 2, 1, 2);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 13}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{0, 2, 0, 3, 0, 3, 0, 3, 0, 3, 0, 2, 0}));
}

TEST(ConvExact, ConvTranspose1dLength97) {
  const Matrix y = oa::ml::conv_transpose_1d(Matrix::ones({1, 1, 50}), Matrix::ones({1, 1, 3}), 2, 4, 3);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 97}));
}

// A stride far beyond the extents: only the phases that hold outputs run.
TEST(ConvExact, HugeStride) {
  const std::int64_t s = std::int64_t(1) << 28;
  const Matrix z = oa::ml::conv_transpose_1d(Matrix::from_vector({1, 1, 1}, std::vector<float>{2}),
                                             Matrix::from_vector({1, 1, 3}, std::vector<float>{1, 10, 100}), s);
  EXPECT_EQ(z.to_vector(), (std::vector<float>{2, 20, 200}));
  const Matrix c = oa::ml::conv_1d(Matrix::from_vector({1, 1, 5}, std::vector<float>{1, 2, 3, 4, 5}),
                                   Matrix::from_vector({1, 1, 3}, std::vector<float>{1, 10, 100}), Matrix(), s);
  EXPECT_EQ(c.to_vector(), (std::vector<float>{321}));
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

// <conv(x), y> = <x, conv_transpose(y)> with the same weight, stride, padding,
// dilation and groups; output_padding restores the input extent where the
// stride does not divide it.
TEST(ConvExact, AdjointIdentity) {
  struct A {
    Dims x;
    std::int64_t o, kh, kw;
    ConvParams p;
  };
  const std::vector<A> cases{
      {{2, 4, 9, 8}, 6, 3, 2, params({2, 3}, {1, 0}, {1, 2}, 2)},
      {{1, 3, 10, 12}, 3, 3, 3, params({3, 2}, {2, 1}, {2, 1}, 3)},
      {{3, 2, 7, 7}, 5, 2, 3, params({2, 2}, {0, 1}, {3, 2})},
      {{1, 4, 6, 14}, 36, 3, 3, params({1, 2}, {2, 1}, {1, 1}, 2)},
  };
  std::uint32_t seed = 20;
  for (const auto& a : cases) {
    const auto [n, c, h, w] = a.x;
    std::array<std::int64_t, 2> out{}, op{};
    const std::int64_t in[2] = {h, w}, k[2] = {a.kh, a.kw};
    for (int i = 0; i < 2; ++i) {
      out[i] = (in[i] + 2 * a.p.padding[i] - a.p.dilation[i] * (k[i] - 1) - 1) / a.p.stride[i] + 1;
      op[i] = in[i] - ((out[i] - 1) * a.p.stride[i] - 2 * a.p.padding[i] + a.p.dilation[i] * (k[i] - 1) + 1);
    }
    ASSERT_TRUE(op[0] > 0 || op[1] > 0);  // the case needs output_padding
    const Matrix x = Matrix::from_vector({n, c, h, w}, random_values(n * c * h * w, seed++));
    const Matrix wt = Matrix::from_vector({a.o, c / a.p.groups, a.kh, a.kw}, random_values(a.o * c / a.p.groups * a.kh * a.kw, seed++));
    const Matrix y = Matrix::from_vector({n, a.o, out[0], out[1]}, random_values(n * a.o * out[0] * out[1], seed++));
    const Matrix cx = oa::ml::conv_2d(x, wt, Matrix(), {a.p.stride, a.p.padding, a.p.dilation, a.p.groups});
    const Matrix ty = oa::ml::conv_transpose_2d(y, wt, Matrix(), {a.p.stride, a.p.padding, op, a.p.dilation, a.p.groups});
    ASSERT_EQ(ty.shape(), x.shape());
    const double lhs = dot(cx.to_vector(), y.to_vector()), rhs = dot(x.to_vector(), ty.to_vector());
    EXPECT_NEAR(lhs, rhs, 1e-4 * (1.0 + std::abs(lhs)));
  }
}

// A failed validation throws InvalidArgument naming the op and the shapes,
// records nothing and leaves no storage behind.
void expect_invalid(const std::function<Matrix()>& f, const std::string& op, const std::string& shape) {
  const oa::Engine engine = oa::Engine::default_engine();
  const auto live = engine.memory_stats().live_storages;
  oa::TraceCapture trace(engine);
  EXPECT_TRUE(oa_test::throws(f, oa::ErrorKind::InvalidArgument, {op.c_str(), shape.c_str()}));
  EXPECT_TRUE(trace.ops().empty());
  EXPECT_EQ(engine.memory_stats().live_storages, live);
}

TEST(ConvValidation, ConvTranspose2dEmptyOutput) {
  const Matrix x = Matrix::ones({1, 1, 2, 2}), w = Matrix::ones({1, 1, 2, 2});
  x.engine().synchronize();
  expect_invalid([&] { return oa::ml::conv_transpose_2d(x, w, Matrix(), 2, 2); }, "oa::ml::conv_transpose_2d",
                 "[1, 1, 2, 2]");
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::ml::conv_transpose_2d(x, w, Matrix(), 2, 2); }, oa::ErrorKind::InvalidArgument,
                              {"would be 0"}));
}

TEST(ConvValidation, RejectsBadArguments) {
  const Matrix x4 = Matrix::ones({1, 4, 5, 5}), w4 = Matrix::ones({6, 2, 3, 3}), b6 = Matrix::ones({6});
  const Matrix x3 = Matrix::ones({2, 4, 7}), w3 = Matrix::ones({3, 4, 3});
  const Matrix b5 = Matrix::ones({5}), x_empty = Matrix::ones({1, 4, 0, 5}), w3_bad = Matrix::ones({3, 2, 3});
  const Matrix b31 = Matrix::ones({3, 1}), w_i32 = Matrix::from_i32({3, 4, 3}, std::vector<std::int32_t>(36, 1));
  const Matrix wt3 = Matrix::ones({4, 2, 3}), wt4 = Matrix::ones({4, 2, 3, 3}), b3 = Matrix::ones({3});
  // Grouped convolutions with few channels per group, which 16-bit operands take through f32.
  const Matrix x4h = oa::matrix::cast(x4, oa::DType::F16), w4h = oa::matrix::cast(w4, oa::DType::F16), b5h = oa::matrix::cast(b5, oa::DType::F16);
  const Matrix x4i = Matrix::from_i32({1, 4, 5, 5}, std::vector<std::int32_t>(100, 1));
  const Matrix w4i = Matrix::from_i32({6, 2, 3, 3}, std::vector<std::int32_t>(108, 1));
  x4.engine().synchronize();
  const std::string c2 = "oa::ml::conv_2d", c1 = "oa::ml::conv_1d";
  const std::string t2 = "oa::ml::conv_transpose_2d", t1 = "oa::ml::conv_transpose_1d";
  const std::int64_t huge = std::int64_t(1) << 40;
  expect_invalid([&] { return oa::ml::conv_2d(x3, w4); }, c2, "[2, 4, 7]");                    // rank
  expect_invalid([&] { return oa::ml::conv_2d(x4, w4, b6, 1, 0, 1); }, c2, "[6, 2, 3, 3]");  // channels
  expect_invalid([&] { return oa::ml::conv_2d(x4, w4, b6, 1, 0, 3); }, c2, "[1, 4, 5, 5]");  // 4 % 3
  expect_invalid([&] { return oa::ml::conv_2d(x4, w4, b5, 1, 0, 2); }, c2, "[5]");           // bias
  expect_invalid([&] { return oa::ml::conv_2d(x4h, w4h, b5h, 1, 0, 2); }, c2, "[5]");
  expect_invalid([&] { return oa::ml::conv_2d(x4i, w4i, Matrix(), 1, 0, 2); }, c2, "i32");
  expect_invalid([&] { return oa::ml::conv_2d(x4, w4, b6, 0, 0, 2); }, c2, "[6, 2, 3, 3]");  // stride 0
  expect_invalid([&] { return oa::ml::conv_2d(x4, w4, b6, {.dilation = {1, 0}, .groups = 2}); }, c2, "[1, 4, 5, 5]");
  expect_invalid([&] { return oa::ml::conv_2d(x4, w4, b6, {.padding = {-1, 0}, .groups = 2}); }, c2, "[1, 4, 5, 5]");
  expect_invalid([&] { return oa::ml::conv_2d(x4, w4, b6, {.dilation = {3, 1}, .groups = 2}); }, c2, "[1, 4, 5, 5]");
  expect_invalid([&] { return oa::ml::conv_2d(x4, w4, b6, {.groups = 0}); }, c2, "[1, 4, 5, 5]");
  expect_invalid([&] { return oa::ml::conv_2d(x_empty, w4, b6, 1, 0, 2); }, c2, "[1, 4, 0, 5]");
  expect_invalid([&] { return oa::ml::conv_1d(x3, w3, Matrix(), 1, 0, 4); }, c1, "[3, 4, 3]");  // span 9 > 7
  expect_invalid([&] { return oa::ml::conv_1d(x3, w3_bad); }, c1, "[3, 2, 3]");
  expect_invalid([&] { return oa::ml::conv_1d(x3, w3, b31); }, c1, "[3, 1]");
  expect_invalid([&] { return oa::ml::conv_1d(x3, w_i32); }, c1, "weight");
  expect_invalid([&] { return oa::ml::conv_transpose_1d(x3, w3_bad, 1); }, t1, "[3, 2, 3]");
  expect_invalid([&] { return oa::ml::conv_transpose_1d(x3, wt3, Matrix(), {.stride = 2, .output_padding = 2}); }, t1,
                 "[2, 4, 7]");
  expect_invalid([&] { return oa::ml::conv_transpose_1d(x3, wt3, Matrix(), {.groups = 3}); }, t1, "[4, 2, 3]");
  expect_invalid([&] { return oa::ml::conv_transpose_2d(x4, wt4, b3, 1); }, t2, "[3]");
  expect_invalid([&] { return oa::ml::conv_transpose_2d(x4, wt4, Matrix(), 1, 4); }, t2, "[4, 2, 3, 3]");
  // Extents the shaders cannot index, and 64-bit overflow.
  expect_invalid([&] { return oa::ml::conv_1d(x3, w3, Matrix(), {.stride = huge}); }, c1, "[2, 4, 7]");
  expect_invalid([&] { return oa::ml::conv_1d(x3, w3, Matrix(), {.padding = std::int64_t(1) << 62}); }, c1, "[2, 4, 7]");
  expect_invalid([&] { return oa::ml::conv_transpose_1d(x3, wt3, Matrix(), {.stride = huge}); }, t1, "[2, 4, 7]");
}

TEST(ConvTrace, OneSemanticOpWithAttributes) {
  const Matrix x = Matrix::ones({1, 2, 6, 7}), w = Matrix::ones({3, 2, 3, 2});
  oa::TraceCapture trace(x.engine());
  (void)oa::ml::conv_2d(x, w, Matrix(), {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}});
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].label(), "oa::ml::conv_2d");
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(*ops[0].attribute("stride")), (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(*ops[0].attribute("dilation")), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(std::get<std::int64_t>(*ops[0].attribute("groups")), 1);
  EXPECT_EQ(ops[0].outputs[0], (Shape{1, 3, 3, 5}));
}

}  // namespace

namespace {

// ── Gradients: input, weight and bias against f64 finite differences ─────────

void check_gradients(const Case& k) {
  SCOPED_TRACE(describe(k));
  std::vector<oa::test::GradInput> inputs{oa::test::random_input(act_shape(k, k.c, k.h, k.w), 31),
                                          oa::test::random_input(weight_shape(k), 32)};
  if (k.bias) inputs.push_back(oa::test::random_input({k.o}, 33));
  oa::test::gradcheck(
      inputs, [&](const std::vector<Matrix>& m) { return call(k, m[0], m[1], k.bias ? m[2] : Matrix()); },
      [&](const std::vector<std::vector<double>>& v) {
        Dims out;
        return reference(k, v[0], v[1], k.bias ? v[2] : std::vector<double>{}, out);
      });
}

// Strides 1-3, paddings 0-2, dilations 1-3, groups 1, 2 and C, batch 1 and 3.
TEST(ConvGrad, Conv2d) {
  for (const auto& k : {conv2d(1, 3, 5, 7, 6, 3, 3, params({1, 1}, {1, 1}, {1, 1})),
                        conv2d(3, 4, 6, 7, 5, 3, 2, params({2, 2}, {0, 1}, {1, 1}, 2)),
                        conv2d(1, 3, 3, 9, 8, 3, 3, params({3, 3}, {2, 2}, {2, 3}, 3), false),
                        conv2d(3, 2, 3, 6, 7, 2, 3, params({1, 2}, {2, 1}, {3, 1})),
                        conv2d(1, 4, 18, 5, 5, 3, 3, params({1, 1}, {1, 1}, {1, 1}, 2)),
                        conv2d(1, 2, 64, 4, 3, 2, 2, params({2, 1}, {0, 0}, {1, 1}))})
    check_gradients(k);
}

// Winograd F(2x2, 3x3) forced: the forward and the input gradient (the
// stride-1 correlation of the output gradient, padded by 2 - padding, with
// the rotated weight transposed) through it, paddings 0-3, batch 1-2; the
// weight gradient keeps its own kernels. An input gradient alone takes the
// four Winograd dispatches where the implicit GEMM takes one.
TEST(ConvGrad, Winograd) {
  const auto input_grad_dispatches = [](const char* variant) {
    const oa_test::Forced forced("conv.kernel", variant);
    const Matrix x = oa::set_requires_grad(Matrix::from_vector({2, 3, 6, 5}, random_values(180, 47)));
    const Matrix y = oa::ml::conv_2d(x, Matrix::from_vector({4, 3, 3, 3}, random_values(108, 48)), Matrix(), {.padding = {1, 1}});
    oa::TraceCapture trace(x.engine());
    oa::backward(y, Matrix::ones(y.shape()));
    const auto ops = trace.ops();
    return ops.size() == 1 ? ops[0].dispatches : 0;
  };
  EXPECT_EQ(input_grad_dispatches("igemm"), 1u);
  EXPECT_EQ(input_grad_dispatches("winograd"), 4u);
  const oa_test::Forced forced("conv.kernel", "winograd");
  for (const auto& k : {conv2d(2, 3, 4, 6, 7, 3, 3, params({1, 1}, {1, 1}, {1, 1})),
                        conv2d(1, 5, 3, 7, 5, 3, 3, params({1, 1}, {0, 0}, {1, 1}), false),
                        conv2d(2, 2, 5, 5, 6, 3, 3, params({1, 1}, {2, 2}, {1, 1})),
                        conv2d(1, 3, 2, 4, 5, 3, 3, params({1, 1}, {3, 1}, {1, 1})),
                        tconv2d(2, 3, 5, 5, 4, 3, 3, params({1, 1}, {1, 1}, {1, 1}))})
    check_gradients(k);
}

// A transposed convolution of a 1 x 1 input (a DCGAN generator's first layer):
// its input gradient is a convolution over the whole output gradient, one GEMM.
TEST(ConvGrad, OneByOneInputTransposed) {
  for (const auto& k : {tconv2d(2, 6, 5, 1, 1, 4, 4, params({1, 1}, {0, 0}, {1, 1})),
                        conv2d(2, 3, 4, 3, 3, 3, 3, params({1, 1}, {0, 0}, {1, 1}))})
    check_gradients(k);
}

TEST(ConvGrad, ConvTranspose2d) {
  for (const auto& k : {tconv2d(1, 3, 4, 4, 3, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 1, {1, 1})),
                        tconv2d(3, 4, 6, 3, 4, 2, 3, params({3, 1}, {0, 2}, {1, 2}, 2, {2, 0})),
                        tconv2d(1, 3, 3, 3, 3, 3, 3, params({2, 2}, {2, 2}, {3, 3}, 3), false),
                        tconv2d(1, 4, 18, 3, 3, 3, 3, params({1, 2}, {1, 0}, {2, 1}, 2, {0, 1})),
                        tconv2d(1, 2, 3, 4, 4, 3, 2, params({2, 3}, {1, 1}, {2, 3}, 1, {1, 2}))})
    check_gradients(k);
}

TEST(ConvGrad, Conv1d) {
  for (const auto& k : {conv1d(3, 3, 4, 11, 3, params1(2, 1, 2)), conv1d(1, 4, 4, 9, 2, params1(3, 2, 3, 4), false),
                        conv1d(1, 4, 6, 13, 3, params1(1, 0, 1, 2)),
                        conv1d(1, 2, 2, 5, 3, params1(std::int64_t(1) << 20, 0, 1))})
    check_gradients(k);
}

TEST(ConvGrad, ConvTranspose1d) {
  for (const auto& k : {tconv1d(3, 3, 2, 5, 3, params1(2, 1, 1, 1, 1)), tconv1d(1, 4, 4, 6, 3, params1(3, 2, 2, 2, 2)),
                        tconv1d(1, 3, 3, 7, 2, params1(1, 0, 3, 3), false), tconv1d(3, 2, 3, 6, 3, params1(2, 1, 2))})
    check_gradients(k);
}

// Reductions long enough to be split across workgroups (partial sums), for
// the tiled weight gradient (K = 18), the per-channel one (K = 6) and the bias
// gradient; only the weight and bias gradients are checked here.
TEST(ConvGrad, LongReductions) {
  for (const auto& [c, l] : {std::pair<std::int64_t, std::int64_t>{6, 700}, {2, 700}, {2, 3000}}) {
    const Case k = conv1d(3, c, 3, l, 3, params1(1, 1, 1));
    SCOPED_TRACE(describe(k));
    oa::test::gradcheck({oa::test::random_input({3, c, l}, 34, -1, 1, false), oa::test::random_input({3, c, 3}, 35),
                         oa::test::random_input({3}, 36)},
                        [&](const std::vector<Matrix>& m) { return call(k, m[0], m[1], m[2]); },
                        [&](const std::vector<std::vector<double>>& v) {
                          Dims out;
                          return reference(k, v[0], v[1], v[2], out);
                        });
  }
}

// Depthwise weight gradients split across workgroups (partial sums added in
// a second pass), 1-D and 2-D; the input is taken as constant.
TEST(ConvGrad, DepthwiseLongReductions) {
  for (const auto& k : {conv1d(3, 2, 2, 3000, 4, params1(1, 3, 1, 2)),
                        conv2d(2, 3, 3, 61, 62, 3, 3, params({2, 1}, {1, 1}, {1, 2}, 3))}) {
    SCOPED_TRACE(describe(k));
    oa::test::gradcheck({oa::test::random_input(act_shape(k, k.c, k.h, k.w), 37, -1, 1, false),
                         oa::test::random_input(weight_shape(k), 38), oa::test::random_input({k.o}, 39)},
                        [&](const std::vector<Matrix>& m) { return call(k, m[0], m[1], m[2]); },
                        [&](const std::vector<std::vector<double>>& v) {
                          Dims out;
                          return reference(k, v[0], v[1], v[2], out);
                        });
  }
}

// Depthwise shapes through each form of the depthwise kernel (convolution;
// stride-1 gathers as the rotated-weight convolution; gathers at strides 2
// and 4 and where the padding exceeds the kernel) and the direct kernel
// (gathers at stride 3), and the depthwise weight gradient: forward, input
// and weight gradients; kernels 1-7, strides 1-4, dilations, paddings,
// batch 1-3, transposed included.
TEST(ConvGrad, DepthwiseTiles) {
  for (const auto& k : {conv1d(1, 2, 2, 1026, 3, params1(1, 0, 1, 2)), conv1d(1, 4, 4, 1100, 3, params1(1, 1, 1, 4)), conv1d(1, 4, 4, 1030, 4, params1(2, 3, 1, 4), false),
                        conv1d(1, 3, 3, 700, 5, params1(1, 4, 2, 3)), conv1d(1, 4, 4, 600, 7, params1(2, 3, 3, 4)),
                        conv1d(3, 2, 2, 520, 6, params1(1, 5, 1, 2)), tconv1d(1, 4, 4, 600, 3, params1(2, 1, 1, 4, 1)),
                        tconv1d(1, 2, 2, 530, 7, params1(1, 3, 2, 2), false),
                        conv2d(2, 6, 6, 7, 7, 7, 7, params({1, 1}, {3, 3}, {1, 1}, 6)),
                        conv2d(1, 4, 4, 14, 14, 5, 5, params({2, 2}, {2, 2}, {1, 1}, 4)),
                        conv2d(1, 3, 3, 40, 38, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 3)),
                        conv2d(1, 2, 2, 20, 70, 3, 3, params({1, 1}, {1, 1}, {2, 1}, 2), false),
                        conv2d(3, 2, 2, 6, 9, 4, 2, params({1, 1}, {2, 0}, {1, 3}, 2)),
                        conv1d(2, 3, 3, 11, 1, params1(1, 0, 1, 3)),
                        conv2d(1, 2, 2, 5, 6, 2, 2, params({1, 1}, {2, 1}, {1, 1}, 2)),
                        conv2d(2, 3, 3, 13, 11, 3, 3, params({3, 2}, {1, 2}, {1, 2}, 3)),
                        tconv1d(1, 3, 3, 9, 5, params1(4, 1, 1, 3, 2)),
                        conv1d(1, 2, 2, 30, 3, params1(3, 1, 1, 2))})
    check_gradients(k);
}

TEST(ConvExact, DepthwiseWeightGradient) {
  const Matrix x = Matrix::ones({1, 24, 6, 6});
  const oa::ml::Parameter w("weight", Matrix::ones({24, 1, 3, 3}));
  const Matrix y = oa::ml::conv_2d(x, w, oa::ml::Parameter(), {.stride = {2, 2}, .padding = {1, 1}, .groups = 24});
  ASSERT_EQ(y.shape(), (Shape{1, 24, 3, 3}));
  oa::backward(y, Matrix::ones(y.shape()));
  const auto dw = w.grad().to_vector();
  ASSERT_EQ(dw.size(), 24u * 9u);
  const std::vector<float> want{4, 6, 6, 6, 9, 9, 6, 9, 9};
  for (int c = 0; c < 24; ++c)
    EXPECT_EQ(std::vector<float>(dw.begin() + c * 9, dw.begin() + c * 9 + 9), want) << "channel " << c;
}

TEST(ConvGrad, ParameterFormsAndBackwardTrace) {
  const Matrix x = oa::set_requires_grad(Matrix::from_vector({2, 3, 5, 5}, random_values(150, 40)));
  const oa::ml::Parameter w("w", Matrix::from_vector({4, 3, 3, 3}, random_values(108, 41)));
  const oa::ml::Parameter b("b", Matrix::from_vector({4}, random_values(4, 42)));
  const Matrix y = oa::ml::conv_2d(x, w, b, {.padding = {1, 1}});
  EXPECT_EQ(y.to_vector(), oa::ml::conv_2d(x, w.value(), b.value(), {.padding = {1, 1}}).to_vector());
  oa::TraceCapture trace(x.engine());
  oa::backward(y, Matrix::ones(y.shape()));
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].label(), "oa::ml::conv_2d backward");
  EXPECT_EQ(ops[0].outputs.size(), 3u);
  ASSERT_TRUE(w.grad().defined());
  ASSERT_TRUE(b.grad().defined());
  EXPECT_EQ(b.grad().to_vector(), std::vector<float>(4, 50.0f));
  // The other three ops take Parameters too.
  const Matrix x1 = Matrix::from_vector({1, 2, 7}, random_values(14, 43));
  const oa::ml::Parameter w1("w1", Matrix::from_vector({3, 2, 3}, random_values(18, 44)));
  const oa::ml::Parameter wt1("wt1", Matrix::from_vector({2, 3, 3}, random_values(18, 45)));
  const oa::ml::Parameter wt2("wt2", Matrix::from_vector({3, 2, 2, 2}, random_values(24, 46)));
  oa::backward(oa::ml::conv_1d(x1, w1, oa::ml::Parameter(), {.padding = 1}), Matrix::ones({1, 3, 7}));
  oa::backward(oa::ml::conv_transpose_1d(x1, wt1, oa::ml::Parameter(), {.stride = 2}), Matrix::ones({1, 3, 15}));
  oa::backward(oa::ml::conv_transpose_2d(x, wt2, oa::ml::Parameter()), Matrix::ones({2, 2, 6, 6}));
  EXPECT_TRUE(w1.grad().defined());
  EXPECT_TRUE(wt1.grad().defined());
  EXPECT_TRUE(wt2.grad().defined());
}

}  // namespace

// ── F16 and BF16 ──────────────────────────────────────────────────────────────
// The forward against the f64 reference of the inputs as rounded to their
// dtype; the gradients against the f32 path on the same rounded values (a
// 16-bit output moves in steps too coarse for finite differences; those cover
// the f32 path). Tolerance: f32 accumulation over `terms` products, (terms +
// 4) 2^-24 of their magnitude (the same sum over absolute values), plus half
// an ulp of the dtype at the result (the output's one rounding).

namespace {

using oa::DType;
namespace ref = oa::reference;

const ref::Float16Format& format_of(DType d) { return d == DType::F16 ? ref::kF16 : ref::kBF16; }

// Values rounded to d, an f32 leaf holding them and its cast to d (a 16-bit
// Matrix is not a leaf: the leaf gets the 16-bit gradient widened exactly).
struct HalfInput {
  std::vector<float> v;
  Matrix leaf, m;
};

HalfInput half_input(const Shape& shape, DType d, std::uint32_t seed) {
  HalfInput h;
  h.v = ref::rounded(format_of(d), random_values(shape.numel(), seed));
  h.leaf = oa::set_requires_grad(Matrix::from_vector(shape, h.v));
  h.m = oa::matrix::cast(h.leaf, d);
  return h;
}

std::vector<double> absolute(const std::vector<float>& v) {
  std::vector<double> out;
  for (float x : v) out.push_back(std::abs(static_cast<double>(x)));
  return out;
}

// `unit`: the relative error of one f32 addition (2^-22 allows for tensor
// cores that align and truncate the addends).
void expect_half_close(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& magnitude,
                       double terms, DType d, const char* what, double unit = 0x1p-24) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double acc = (terms + 4) * unit * magnitude[i];
    const double tol = acc + 0.5 * ref::ulp(format_of(d), std::abs(want[i]) + acc);
    ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
  }
}

// One f32 call's gradients of sum(g * y) with respect to x, w and b (b absent without bias).
std::vector<std::vector<double>> f32_gradients(const Case& k, const std::vector<double>& x, const std::vector<double>& w,
                                               const std::vector<double>& b, const std::vector<double>& g) {
  auto leaf = [](const Shape& s, const std::vector<double>& v) {
    return oa::set_requires_grad(Matrix::from_vector(s, std::vector<float>(v.begin(), v.end())));
  };
  const Matrix xm = leaf(act_shape(k, k.c, k.h, k.w), x), wm = leaf(weight_shape(k), w);
  const Matrix bm = k.bias ? leaf({k.o}, b) : Matrix();
  const Matrix y = call(k, xm, wm, bm);
  oa::backward(y, Matrix::from_vector(y.shape(), std::vector<float>(g.begin(), g.end())));
  std::vector<std::vector<double>> out{widen(oa::grad(xm).to_vector()), widen(oa::grad(wm).to_vector())};
  if (k.bias) out.push_back(widen(oa::grad(bm).to_vector()));
  return out;
}

void check_half(const Case& k, DType d, double unit = 0x1p-24) {
  SCOPED_TRACE(describe(k) + " " + std::string(oa::to_string(d)));
  const HalfInput x = half_input(act_shape(k, k.c, k.h, k.w), d, 51), w = half_input(weight_shape(k), d, 52);
  const HalfInput b = k.bias ? half_input({k.o}, d, 53) : HalfInput{};
  oa::TraceCapture trace(x.m.engine());
  const Matrix y = call(k, x.m, w.m, b.m);
  const auto ops = trace.ops();
  EXPECT_EQ(oa_test::count_label(ops, std::string("oa::ml::") + (k.transposed ? "conv_transpose" : "conv") + (k.one_d ? "_1d" : "_2d")),
            1u);
  ASSERT_EQ(y.dtype(), d);
  Dims out;
  const auto want = reference(k, widen(x.v), widen(w.v), widen(b.v), out);
  const auto magnitude = reference(k, absolute(x.v), absolute(w.v), absolute(b.v), out);
  EXPECT_EQ(y.shape(), act_shape(k, out[1], out[2], out[3]));
  const double terms = static_cast<double>(std::max(k.c, k.o) / k.p.groups * k.kh * k.kw);
  expect_half_close(y.to_vector(), want, magnitude, terms, d, "forward", unit);

  // Backward from a seed of d's values; the f32 path twice (for the values and, over absolute values, the magnitudes).
  const auto g = ref::rounded(format_of(d), random_values(y.numel(), 54));
  oa::backward(oa::matrix::cast(y, DType::F32), Matrix::from_vector(y.shape(), g));
  const auto want_grads = f32_gradients(k, widen(x.v), widen(w.v), widen(b.v), widen(g));
  const auto magnitudes = f32_gradients(k, absolute(x.v), absolute(w.v), absolute(b.v), absolute(g));
  // Each side sums at most terms + one image's positions per batch item products; both sides accumulate.
  const double grad_terms = 2 * (terms + static_cast<double>(std::max(y.numel(), x.leaf.numel())));
  const char* names[] = {"input gradient", "weight gradient", "bias gradient"};
  const Matrix* leaves[] = {&x.leaf, &w.leaf, &b.leaf};
  for (std::size_t i = 0; i < want_grads.size(); ++i) {
    ASSERT_EQ(oa::grad(*leaves[i]).dtype(), DType::F32);
    expect_half_close(oa::grad(*leaves[i]).to_vector(), want_grads[i], magnitudes[i], grad_terms, d, names[i], unit);
  }
}

// Groups, depthwise, strides, paddings, dilations and output_padding, 1-D and
// 2-D, with and without bias, batch 1 and 3, odd element counts per image.
const std::vector<Case>& half_cases() {
  static const std::vector<Case> cases{
      conv2d(3, 4, 6, 7, 5, 3, 2, params({2, 1}, {1, 0}, {1, 2}, 2)),
      conv2d(1, 6, 6, 9, 8, 3, 3, params({1, 2}, {1, 1}, {2, 1}, 6), false),  // depthwise
      conv2d(2, 3, 20, 5, 6, 1, 1, params({1, 1}, {0, 0}, {1, 1})),
      tconv2d(3, 4, 6, 3, 4, 2, 3, params({3, 1}, {0, 2}, {1, 2}, 2, {2, 0})),
      tconv2d(1, 3, 3, 4, 5, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 3, {1, 1}), false),  // depthwise
      conv1d(3, 3, 4, 11, 3, params1(2, 1, 2)),
      tconv1d(3, 4, 4, 6, 3, params1(3, 2, 2, 2, 2)),
  };
  return cases;
}

TEST(ConvHalf, ForwardAndGradientsInF16AndBF16) {
  for (DType d : {DType::F16, DType::BF16})
    for (std::size_t i = 0; i < half_cases().size(); ++i)
      if (d == DType::F16 || i % 3 == 0) check_half(half_cases()[i], d);  // fewer pipelines to compile on lavapipe
}

// A 16-bit depthwise convolution runs the f32 op between casts (its operands
// widened, its result rounded once); under autocast, on the f32 operands. So
// do grouped ones with at most 16 channels per group, not wider groups.
TEST(ConvHalf, DepthwiseRunsTheF32KernelBetweenCasts) {
  const Matrix x = Matrix::from_vector({1, 4, 5, 5}, random_values(100, 61)), w = Matrix::from_vector({4, 1, 3, 3}, random_values(36, 62));
  const Matrix x16 = oa::matrix::cast(x, DType::F16), w16 = oa::matrix::cast(w, DType::F16);
  const oa::ml::Conv2dOptions o{.padding = {1, 1}, .groups = 4};
  const auto names = [](const auto& ops) {
    std::vector<std::string> out;
    for (const auto& op : ops) out.push_back(op.name);
    return out;
  };
  const std::vector<std::string> cast_conv_cast{"oa::matrix::cast", "oa::matrix::cast", "oa::ml::conv_2d", "oa::matrix::cast"};
  Matrix y16;
  {
    oa::TraceCapture trace(x.engine());
    y16 = oa::ml::conv_2d(x16, w16, Matrix(), o);
    EXPECT_EQ(names(trace.ops()), cast_conv_cast);
  }
  ASSERT_EQ(y16.dtype(), DType::F16);
  const Matrix want = oa::ml::conv_2d(oa::matrix::cast(x16, DType::F32), oa::matrix::cast(w16, DType::F32), Matrix(), o);
  EXPECT_EQ(y16.to_vector(), oa::matrix::cast(want, DType::F16).to_vector());
  const oa::AutocastGuard autocast(DType::F16);
  oa::TraceCapture trace(x.engine());
  const Matrix y = oa::ml::conv_2d(x, w, Matrix(), o);
  EXPECT_EQ(names(trace.ops()), (std::vector<std::string>{"oa::ml::conv_2d", "oa::matrix::cast"}));
  EXPECT_EQ(y.dtype(), DType::F16);
  // Groups of 16 and of 17 channels (one input, one output extent wider), forward and transposed.
  const auto half = [](const oa::Shape& s) { return oa::matrix::cast(Matrix::ones(s), DType::F16); };
  const auto traced = [&](const Matrix& in, const Matrix& weight, bool transposed) {
    oa::TraceCapture t(x.engine());
    (void)(transposed ? oa::ml::conv_transpose_2d(in, weight, Matrix(), {.groups = 2}) : oa::ml::conv_2d(in, weight, Matrix(), {.groups = 2}));
    return names(t.ops());
  };
  const Matrix x32 = half({1, 32, 3, 3}), x34 = half({1, 34, 3, 3});
  EXPECT_EQ(traced(x32, half({32, 16, 1, 1}), false), cast_conv_cast);
  EXPECT_EQ(traced(x34, half({32, 17, 1, 1}), false), (std::vector<std::string>{"oa::ml::conv_2d"}));
  EXPECT_EQ(traced(x32, half({34, 16, 1, 1}), false), (std::vector<std::string>{"oa::ml::conv_2d"}));
  const std::vector<std::string> cast_tconv_cast{"oa::matrix::cast", "oa::matrix::cast", "oa::ml::conv_transpose_2d",
                                                 "oa::matrix::cast"};
  EXPECT_EQ(traced(x32, half({32, 16, 2, 2}), true), cast_tconv_cast);
  EXPECT_EQ(traced(x32, half({32, 17, 2, 2}), true), (std::vector<std::string>{"oa::ml::conv_transpose_2d"}));
}

// Mixed dtypes are refused before anything is recorded, naming the op, the
// arguments and both dtypes.
TEST(ConvHalf, RejectsMixedDtypes) {
  const Matrix x16 = oa::matrix::cast(Matrix::ones({1, 4, 5, 5}), DType::F16), w32 = Matrix::ones({6, 4, 3, 3});
  const Matrix w16 = oa::matrix::cast(w32, DType::F16), b_bf16 = oa::matrix::cast(Matrix::ones({6}), DType::BF16);
  const Matrix x1 = Matrix::ones({1, 4, 7}), wt16 = oa::matrix::cast(Matrix::ones({4, 2, 3}), DType::F16);
  x16.engine().synchronize();
  for (const auto& [f, op, fragments] :
       {std::tuple{std::function<Matrix()>([&] { return oa::ml::conv_2d(x16, w32); }), "oa::ml::conv_2d",
                   std::vector<const char*>{"weight", "f16", "f32"}},
        std::tuple{std::function<Matrix()>([&] { return oa::ml::conv_2d(x16, w16, b_bf16); }), "oa::ml::conv_2d",
                   std::vector<const char*>{"bias", "bf16", "f16"}},
        std::tuple{std::function<Matrix()>([&] { return oa::ml::conv_transpose_1d(x1, wt16, Matrix(), {.stride = 2}); }), "oa::ml::conv_transpose_1d",
                   std::vector<const char*>{"weight", "f16", "f32"}}}) {
    expect_invalid(f, op, fragments[0]);
    for (const char* fragment : fragments) EXPECT_TRUE(oa_test::throws(f, oa::ErrorKind::InvalidArgument, {op, fragment}));
  }
}

// `count` values in {-1, 0, 1}: their products' sums are exact in f32.
std::vector<float> ternary(std::int64_t count, std::uint32_t seed) {
  auto v = random_values(count, seed);
  for (auto& x : v) x = x < -0.33f ? -1.0f : x > 0.33f ? 1.0f : 0.0f;
  return v;
}

// A batch of long 1-D images whose 16-bit workspaces take several chunks
// (24-36 MB an image against conv.cpp's 256 MB a chunk, and lavapipe's 128 MB
// maxStorageBufferRange): chunks of an even number of images (an odd element
// count per image), the weight
// gradient summed over them in f32. Values in {-1, 0, 1} keep every f32 sum
// exact, so each result is the exact sum rounded once to f16.
TEST(ConvHalf, ChunkedBatchIsExact) {
  const std::int64_t n = 12, l = 2'000'001;
  const auto xv = ternary(n * l, 61), wv = ternary(3, 62), gv = ternary(n * l, 63);
  const std::vector<float> bv{1.0f};
  const Matrix x = oa::set_requires_grad(Matrix::from_vector({n, 1, l}, xv));
  const Matrix w = oa::set_requires_grad(Matrix::from_vector({1, 1, 3}, wv));
  const Matrix b = oa::set_requires_grad(Matrix::from_vector({1}, bv));
  const Matrix y = oa::ml::conv_1d(oa::matrix::cast(x, DType::F16), oa::matrix::cast(w, DType::F16), oa::matrix::cast(b, DType::F16),
                                   {.padding = 1});
  oa::backward(oa::matrix::cast(y, DType::F32), Matrix::from_vector({n, 1, l}, gv));
  // y[i] = b + sum_t w[t] x[i + t - 1]; dx[i] = sum_t w[t] g[i - t + 1]; dw[t] = sum g[i] x[i + t - 1]; db = sum g.
  auto at = [&](const std::vector<float>& v, std::int64_t img, std::int64_t i) {
    return i < 0 || i >= l ? 0.0 : static_cast<double>(v[static_cast<std::size_t>(img * l + i)]);
  };
  std::vector<double> y_want(static_cast<std::size_t>(n * l)), dx_want(y_want.size()), dw_want(3, 0.0), db_want(1, 0.0);
  for (std::int64_t img = 0; img < n; ++img)
    for (std::int64_t i = 0; i < l; ++i) {
      double s = bv[0], dx = 0;
      for (std::int64_t t = 0; t < 3; ++t) {
        s += wv[t] * at(xv, img, i + t - 1);
        dx += wv[t] * at(gv, img, i - t + 1);
        dw_want[t] += at(gv, img, i) * at(xv, img, i + t - 1);
      }
      y_want[static_cast<std::size_t>(img * l + i)] = s;
      dx_want[static_cast<std::size_t>(img * l + i)] = dx;
      db_want[0] += at(gv, img, i);
    }
  auto rounded = [](const std::vector<double>& v) {
    return ref::rounded(ref::kF16, std::vector<float>(v.begin(), v.end()));  // exact integers below 2^24
  };
  EXPECT_EQ(y.to_vector(), rounded(y_want));
  EXPECT_EQ(oa::grad(x).to_vector(), rounded(dx_want));
  EXPECT_EQ(oa::grad(w).to_vector(), rounded(dw_want));
  EXPECT_EQ(oa::grad(b).to_vector(), rounded(db_want));
}

// The layout passes of the columns path (ml/conv/columns_half: 8 elements
// an invocation, walked across rows of the columns, channels and images, or
// read at once where they are consecutive in the source) on values in
// {-1, 0, 1}, whose sums are exact in f32: the 16-bit forward is the f64
// reference rounded once, each gradient the f32 path's rounded once, element
// for element. Column counts (batch x positions) not a multiple of 8, odd
// widths, dilations and paddings larger than the stride (the col2im pass's
// carried quotients), stride 3, output_padding, 1-D. At stride 1 (the
// consecutive reads of im2col and col2im): widths 19 and 29 (runs inside a
// row at every offset modulo 8, odd and even, and runs across a row's end),
// 7 and 1 (no run fits a row), taps partly outside the row (padding 2,
// dilation 2).
TEST(ConvHalf, ColumnsPassesAreExact) {
  const oa_test::Forced forced("conv.half_forward", "columns");
  const std::vector<Case> cases{
      conv2d(3, 3, 5, 7, 9, 3, 3, params({2, 2}, {3, 2}, {3, 2})),               // P 4 x 5, Q 60
      tconv2d(2, 5, 3, 5, 7, 3, 2, params({2, 3}, {3, 1}, {3, 2}, 1, {1, 2})),   // wide 10 x 21
      conv1d(3, 2, 3, 13, 4, params1(3, 4, 3)),                                  // Q 12
      tconv1d(3, 3, 2, 11, 3, params1(2, 3, 3, 1, 1), false),                    // wide 22
      conv2d(2, 3, 4, 5, 19, 3, 3, params({1, 1}, {1, 1}, {1, 1})),              // P 5 x 19
      conv2d(3, 2, 3, 6, 7, 3, 3, params({1, 1}, {1, 1}, {1, 1})),               // P 6 x 7
      conv2d(2, 3, 2, 9, 1, 3, 1, params({1, 1}, {1, 0}, {1, 1})),               // P 9 x 1
      tconv2d(2, 3, 4, 5, 13, 3, 3, params({1, 1}, {2, 2}, {2, 2})),             // wide 5 x 13
      conv1d(2, 3, 2, 29, 5, params1(1, 2, 1)),                                  // Q 58
  };
  for (const Case& k : cases)
    for (DType d : {DType::F16, DType::BF16}) {
      SCOPED_TRACE(describe(k) + " " + std::string(oa::to_string(d)));
      const auto rounded = [&](const std::vector<double>& v) { return ref::rounded(format_of(d), std::vector<float>(v.begin(), v.end())); };
      const Shape xs = act_shape(k, k.c, k.h, k.w), ws = weight_shape(k);
      const auto xv = ternary(xs.numel(), 101), wv = ternary(ws.numel(), 102);
      const auto bv = k.bias ? ternary(k.o, 103) : std::vector<float>{};
      const Matrix x = oa::set_requires_grad(Matrix::from_vector(xs, xv)), w = oa::set_requires_grad(Matrix::from_vector(ws, wv));
      const Matrix b = k.bias ? oa::set_requires_grad(Matrix::from_vector({k.o}, bv)) : Matrix();
      const auto half = [d](const Matrix& m) { return m.defined() ? oa::matrix::cast(m, d) : m; };
      const Matrix y = call(k, half(x), half(w), half(b));
      Dims out;
      EXPECT_EQ(y.to_vector(), rounded(reference(k, widen(xv), widen(wv), widen(bv), out)));
      const auto g = ternary(y.numel(), 104);
      oa::backward(oa::matrix::cast(y, DType::F32), Matrix::from_vector(y.shape(), g));
      const auto want = f32_gradients(k, widen(xv), widen(wv), widen(bv), widen(g));
      EXPECT_EQ(oa::grad(x).to_vector(), rounded(want[0])) << "input gradient";
      EXPECT_EQ(oa::grad(w).to_vector(), rounded(want[1])) << "weight gradient";
      if (k.bias) {
        EXPECT_EQ(oa::grad(b).to_vector(), rounded(want[2])) << "bias gradient";
      }
    }
}

// A small conv net (conv_2d, conv_transpose_1d, a linear classifier)
// trained a few SGD steps under F16 autocast (with the scaler) and BF16
// autocast ends near its F32 run; the convolutions run in the 16-bit dtype.
TEST(ConvHalf, AutocastConvNetTrainsNearF32) {
  const std::int64_t batch = 4;
  const Matrix x = Matrix::from_vector({batch, 1, 6, 6}, random_values(batch * 36, 71));
  const Matrix t = Matrix::from_i32({batch}, std::vector<std::int32_t>{0, 2, 1, 2});
  auto train = [&](std::optional<DType> precision) {
    const oa::ml::Parameter w1("w1", Matrix::from_vector({3, 1, 3, 3}, random_values(27, 72)));
    const oa::ml::Parameter b1("b1", Matrix::from_vector({3}, random_values(3, 73)));
    const oa::ml::Parameter w2("w2", Matrix::from_vector({3, 2, 3}, random_values(18, 74)));
    const oa::ml::Parameter w3("w3", Matrix::from_vector({3, 2 * 19}, random_values(114, 75)));
    oa::ml::optim::Sgd sgd({w1, b1, w2, w3}, {.lr = 0.05f});
    // A scale of 2^10: the default 2^16 overflows these f16 gradients and skips the first steps.
    oa::ml::amp::GradScaler scaler({.init_scale = 1024.0f, .enabled = precision == DType::F16});
    std::vector<float> losses;
    for (int step = 0; step < 3; ++step) {
      Matrix loss;
      {
        oa::AutocastGuard autocast(precision.value_or(DType::F16), precision.has_value());
        const Matrix h = oa::matrix::relu(oa::ml::conv_2d(x, w1, b1, {.stride = {2, 2}, .padding = {1, 1}}));  // [4, 3, 3, 3]
        const Matrix u = oa::ml::conv_transpose_1d(h.reshape({batch, 3, 9}), w2, oa::ml::Parameter(), {.stride = 2});  // [4, 2, 19]
        EXPECT_EQ(u.dtype(), precision.value_or(DType::F32));
        loss = oa::ml::cross_entropy(oa::ml::linear(u.reshape({batch, 38}), w3.value(), Matrix()), t);
      }
      sgd.zero_grad();
      oa::backward(scaler.scale(loss));
      EXPECT_EQ(w1.grad().dtype(), DType::F32);
      scaler.step(sgd);
      scaler.update();
      losses.push_back(loss.item());
    }
    return losses;
  };
  const auto loss32 = train(std::nullopt);
  EXPECT_LT(loss32.back(), loss32.front());
  for (DType low : {DType::F16, DType::BF16}) {
    const double tol = low == DType::F16 ? 5e-3 : 4e-2;
    const auto loss = train(low);
    for (std::size_t i = 0; i < loss.size(); ++i) EXPECT_NEAR(loss[i], loss32[i], tol * std::abs(loss32[i])) << "step " << i;
  }
}

// The dtypes whose cooperative matrices the device has.
std::vector<DType> coop_dtypes() {
  std::vector<DType> dtypes;
  for (DType d : {DType::F16, DType::BF16})
    if (oa::Engine::default_engine().device().has_cooperative_matrix({d, d, DType::F32, DType::F32, 16, 16, 16})) dtypes.push_back(d);
  return dtypes;
}

// Skips a test where the device has none of those cooperative matrices (lavapipe).
#define OA_SKIP_WITHOUT_COOP(dtypes) \
  if ((dtypes).empty())              \
  GTEST_SKIP() << "the device has no cooperative matrices (f16 or bf16 * the same + f32 -> f32, 16x16x16, subgroup scope)"

// The tensor cores, where the device has cooperative matrices for f16 or
// bf16 * the same + f32 -> f32 at 16 x 16 x 16 (the H200; the test skips on
// lavapipe): the GEMMs of a convolution with 32 channels and 64 positions
// per image (forward: W [32, 288] x columns [288, 128]; input gradient: W^T
// x rows [32, 128]; weight gradient: rows x columns^T) take the cooperative-
// matrix kernel, and the convolution (its forward through the path
// conv.half_forward takes) matches the f64 reference within the tensor
// cores' accumulation bound.
TEST(ConvHalf, TensorCoreGemms) {
  const oa::Engine engine = oa::Engine::default_engine();
  const std::vector<DType> dtypes = coop_dtypes();
  OA_SKIP_WITHOUT_COOP(dtypes);
  const Case k = conv2d(2, 32, 32, 8, 8, 3, 3, params({1, 1}, {1, 1}, {1, 1}));
  const std::int64_t cng = 32, kg = 32 * 9, q = 2 * 64;
  for (DType d : dtypes) {
    const Matrix weight = oa::detail::allocate(engine, {cng * kg}, d), cols = oa::detail::allocate(engine, {kg * q}, d);
    const Matrix rows = oa::detail::allocate(engine, {cng * q}, d);
    const Matrix narrow32 = oa::detail::allocate(engine, {cng * q}), cols32 = oa::detail::allocate(engine, {kg * q});
    const Matrix dw32 = oa::detail::allocate(engine, {cng * kg});
    const std::string_view kernel = d == DType::F16 ? oa::kernels::matrix_gemm_coopmat : oa::kernels::matrix_gemm_coopmat_bf16;
    for (const oa::detail::GemmProblem& p :
         {oa::detail::GemmProblem{.m = cng, .n = q, .k = kg, .a = {&weight}, .b = {&cols}, .c = {&narrow32}},
          oa::detail::GemmProblem{.m = kg, .n = q, .k = cng, .trans_a = true, .a = {&weight}, .b = {&rows}, .c = {&cols32}},
          oa::detail::GemmProblem{.m = cng, .n = kg, .k = q, .trans_b = true, .a = {&rows}, .b = {&cols}, .c = {&dw32}}}) {
      const auto ds = oa::detail::lower_gemm(engine, p);
      ASSERT_FALSE(ds.empty());
      EXPECT_EQ(ds[0].kernel, kernel) << "M " << p.m << " N " << p.n << " K " << p.k;
    }
    check_half(k, d, 0x1p-22);
  }
}

// ── The tensor-core implicit GEMM of the 16-bit forward ─────────────────────
// ml/conv/igemm_coopmat (conv.half_forward = implicit), where the device has
// f16 or bf16 cooperative matrices (the tests skip on lavapipe): one dispatch
// a call, against the f64 reference within the tensor cores' accumulation
// bound (as TensorCoreGemms), and against the columns path (conv.half_forward
// = columns: im2col, GEMM, bias pass) within both results' roundings.

// Strides, padding, dilation, a 7x7 stem of 3 channels (K = 147, not a
// multiple of 8), 1x1, 1-D, partial tiles along M (output channels), N
// (positions) and K (channels x taps), bias and none, batches of 2 and 3,
// odd element counts per output image (and per input image), rows of 8
// positions and more (the gather's contiguous runs at every alignment).
const std::vector<Case>& implicit_cases() {
  static const std::vector<Case> cases{
      conv2d(2, 32, 80, 8, 8, 3, 3, params({1, 1}, {1, 1}, {1, 1})),             // M 80, P 64, K 288
      conv2d(3, 21, 24, 13, 11, 3, 3, params({2, 2}, {1, 1}, {1, 1}), false),    // P 7 x 6, K 189, odd input image
      conv2d(2, 16, 33, 15, 9, 3, 3, params({1, 1}, {2, 1}, {2, 1})),            // dilation, P 135: 33 x 135 odd
      conv2d(2, 3, 64, 32, 32, 7, 7, params({2, 2}, {3, 3}, {1, 1})),            // stem: K 147, P 256
      conv2d(2, 64, 130, 7, 7, 1, 1, params({1, 1}, {0, 0}, {1, 1}), false),     // 1x1: M 130, P 49
      conv1d(3, 24, 41, 301, 5, params1(1, 2, 1)),                               // K 120, 41 x 301 odd
      conv1d(2, 8, 16, 100, 4, params1(3, 0, 2), false),                         // stride 3, dilation 2
      conv2d(2, 64, 200, 30, 30, 3, 3, params({1, 1}, {1, 1}, {1, 1})),          // M 200, P 900, K 576
      conv2d(2, 40, 136, 20, 19, 3, 2, params({1, 2}, {0, 1}, {1, 1})),          // rectangular, strides 1 x 2
  };
  return cases;
}

// The forward of k on x, w and b under conv.half_forward = `path` (and
// gemm.coopmat_tile = `tile` unless empty): the output's values and the
// dispatches its op recorded.
std::pair<std::vector<float>, std::uint32_t> half_forward(const Case& k, const HalfInput& x, const HalfInput& w, const HalfInput& b,
                                                           const std::string& path, const std::string& tile) {
  const oa_test::Forced forced("conv.half_forward", path);
  std::optional<oa_test::Forced> forced_tile;
  if (!tile.empty()) forced_tile.emplace("gemm.coopmat_tile", tile);
  oa::TraceCapture trace(x.m.engine());
  const Matrix y = call(k, x.m, w.m, b.m);
  const auto ops = trace.ops();
  const std::string name = std::string("oa::ml::conv") + (k.one_d ? "_1d" : "_2d");
  const auto op = std::find_if(ops.begin(), ops.end(), [&](const oa::SemanticOp& o) { return o.name == name; });
  EXPECT_NE(op, ops.end());
  return {y.to_vector(), op == ops.end() ? 0u : op->dispatches};
}

// The implicit GEMM's result against the columns path's: each rounds an f32
// sum within (terms + 4) unit of the magnitude once, so they differ by at
// most twice that and an ulp.
void expect_paths_agree(const std::vector<float>& got, const std::vector<float>& columns, const std::vector<double>& magnitude,
                        double terms, DType d, double unit) {
  ASSERT_EQ(got.size(), columns.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double acc = 2 * (terms + 4) * unit * magnitude[i];
    ASSERT_NEAR(got[i], columns[i], acc + ref::ulp(format_of(d), std::abs(static_cast<double>(columns[i])) + acc))
        << "element " << i << " of the implicit GEMM against the columns path";
  }
}

// Whether the implicit GEMM runs k channels last (the forward, or wide from
// narrow: `wide`), as the lowering decides: the gathered side's channels a
// multiple of 8, unless an unpadded 1x1 stride-1 problem reduces channels.
bool channels_last(const Case& k, bool wide) {
  const std::int64_t gathered = wide == k.transposed ? k.c : k.o, produced = wide == k.transposed ? k.o : k.c;
  const bool contiguous = k.kh * k.kw == 1 && k.p.stride[0] == 1 && k.p.stride[1] == 1 && k.p.padding[0] == 0 && k.p.padding[1] == 0;
  return gathered % 8 == 0 && !(contiguous && gathered > produced);
}

void check_implicit(const Case& k, DType d, const std::string& tile = "") {
  SCOPED_TRACE(describe(k) + " " + std::string(oa::to_string(d)) + (tile.empty() ? "" : " gemm.coopmat_tile " + tile));
  const HalfInput x = half_input(act_shape(k, k.c, k.h, k.w), d, 81), w = half_input(weight_shape(k), d, 82);
  const HalfInput b = k.bias ? half_input({k.o}, d, 83) : HalfInput{};
  const auto [got, dispatches] = half_forward(k, x, w, b, "implicit", tile);
  // One implicit GEMM (no column buffer, no bias pass); channels last after the input's and the weight's transposes.
  EXPECT_EQ(dispatches, channels_last(k, false) ? 3u : 1u);
  Dims out;
  const auto want = reference(k, widen(x.v), widen(w.v), widen(b.v), out);
  const auto magnitude = reference(k, absolute(x.v), absolute(w.v), absolute(b.v), out);
  const double terms = static_cast<double>(k.c * k.kh * k.kw), unit = 0x1p-22;
  expect_half_close(got, want, magnitude, terms, d, "implicit forward", unit);
  const auto [columns, column_dispatches] = half_forward(k, x, w, b, "columns", tile);
  EXPECT_GE(column_dispatches, 3u);  // im2col, GEMM, bias pass
  expect_paths_agree(got, columns, magnitude, terms, d, unit);
}

TEST(ConvHalf, ImplicitGemmForward) {
  const std::vector<DType> dtypes = coop_dtypes();
  OA_SKIP_WITHOUT_COOP(dtypes);
  for (DType d : dtypes)
    for (const Case& k : implicit_cases()) check_implicit(k, d);
}

// Every tile of gemm.coopmat_tile (which the implicit GEMM shares with the
// tensor-core GEMM): the K steps of 32, 48 and 64, one and two shared
// stages, 4 and 8 subgroups, on cases with partial tiles on every axis.
TEST(ConvHalf, ImplicitGemmForwardEveryTile) {
  const std::vector<DType> dtypes = coop_dtypes();
  OA_SKIP_WITHOUT_COOP(dtypes);
  for (std::string_view tile : oa::tuning_point("gemm.coopmat_tile").variants)
    for (DType d : dtypes)
      for (std::size_t i : {2u, 3u, 7u}) check_implicit(implicit_cases()[i], d, std::string(tile));
}

// ── The transposed gather: wide from narrow on the tensor cores ────────────
// Transposed convolutions' forwards and convolutions' input gradients through
// ml/conv/igemm_coopmat's transposed gather (conv.half_forward = implicit,
// key transposed 1), where the device has f16 or bf16 cooperative matrices
// (the tests skip on lavapipe): the weight's permute and one GEMM a call,
// against the f64 reference within the tensor cores' accumulation bound and
// against the columns path (gather, GEMM, col2im). An input gradient's
// reference is the transposed convolution of the output gradient through
// the same weight, output_padding restoring the input's extent.

// Strides 1 (contiguous runs), 2 and 3, padding, dilation, output_padding,
// 1-D, odd element counts per image, K = CN * taps not a multiple of 8, and
// partial tiles along M (output channels) and N (positions).
const std::vector<Case>& implicit_transposed_cases() {
  static const std::vector<Case> cases{
      tconv2d(2, 32, 48, 8, 8, 2, 2, params({2, 2}, {0, 0}, {1, 1})),                        // U-Net up: K 128, P 256
      tconv2d(3, 21, 24, 7, 6, 3, 3, params({2, 2}, {1, 1}, {1, 1}, 1, {1, 0}), false),      // output_padding, K 189
      tconv2d(2, 16, 33, 9, 11, 3, 3, params({1, 1}, {2, 1}, {2, 1})),                       // stride 1, dilation
      tconv2d(2, 40, 20, 10, 9, 3, 2, params({1, 2}, {0, 1}, {1, 1}, 1, {0, 1})),            // rectangular, strides 1 x 2
      tconv1d(3, 24, 41, 50, 5, params1(1, 2, 1)),                                            // 41 x 54 odd
      tconv1d(2, 8, 16, 33, 4, params1(3, 0, 2, 1, 2)),                                       // stride 3, dilation 2, op 2
  };
  return cases;
}

// The wide result of k under conv.half_forward = `path` (and
// gemm.coopmat_tile = `tile` unless empty): a transposed convolution's
// output, or a convolution's input gradient from the output gradient g (the
// only input needing a gradient); and the dispatches of the op (forward or
// backward) that computed it.
std::pair<std::vector<float>, std::uint32_t> half_wide(const Case& k, DType d, const HalfInput& x, const HalfInput& w,
                                                        const HalfInput& b, const std::vector<float>& g, const std::string& path,
                                                        const std::string& tile) {
  const oa_test::Forced forced("conv.half_forward", path);
  std::optional<oa_test::Forced> forced_tile;
  if (!tile.empty()) forced_tile.emplace("gemm.coopmat_tile", tile);
  const std::string name = std::string("oa::ml::conv") + (k.transposed ? "_transpose" : "") + (k.one_d ? "_1d" : "_2d");
  const auto dispatches = [&](const std::vector<oa::SemanticOp>& ops, const std::string& label) {
    const auto op = std::find_if(ops.begin(), ops.end(), [&](const oa::SemanticOp& o) { return o.label() == label; });
    EXPECT_NE(op, ops.end()) << label;
    return op == ops.end() ? 0u : op->dispatches;
  };
  if (k.transposed) {
    oa::TraceCapture trace(x.m.engine());
    const Matrix y = call(k, x.m, w.m, b.m);
    return {y.to_vector(), dispatches(trace.ops(), name)};
  }
  const Matrix leaf = oa::set_requires_grad(Matrix::from_vector(x.leaf.shape(), x.v));
  const Matrix y = call(k, oa::matrix::cast(leaf, d), oa::matrix::cast(Matrix::from_vector(w.leaf.shape(), w.v), d), Matrix());
  oa::TraceCapture trace(x.m.engine());
  oa::backward(oa::matrix::cast(y, DType::F32), Matrix::from_vector(y.shape(), g));
  return {oa::grad(leaf).to_vector(), dispatches(trace.ops(), name + " backward")};
}

void check_implicit_transposed(const Case& k, DType d, const std::string& tile = "") {
  SCOPED_TRACE(describe(k) + " " + std::string(oa::to_string(d)) + (tile.empty() ? "" : " gemm.coopmat_tile " + tile));
  const HalfInput x = half_input(act_shape(k, k.c, k.h, k.w), d, 91), w = half_input(weight_shape(k), d, 92);
  const HalfInput b = k.bias && k.transposed ? half_input({k.o}, d, 93) : HalfInput{};
  Dims out;
  std::vector<double> want, magnitude;
  std::vector<float> g;
  if (k.transposed) {
    want = reference(k, widen(x.v), widen(w.v), widen(b.v), out);
    magnitude = reference(k, absolute(x.v), absolute(w.v), absolute(b.v), out);
  } else {  // dx = conv_transpose(g) through w, [O, C, KH, KW] read as the transposed weight [in O, out C]
    reference(k, widen(x.v), widen(w.v), {}, out);
    g = ref::rounded(format_of(d), random_values(out[0] * out[1] * out[2] * out[3], 94));
    ConvParams p = k.p;
    for (std::size_t a = 0; a < 2; ++a) {
      const std::int64_t extent = a == 0 ? k.h : k.w, kernel = a == 0 ? k.kh : k.kw;
      p.output_padding[a] = extent - ((out[2 + a] - 1) * p.stride[a] - 2 * p.padding[a] + p.dilation[a] * (kernel - 1) + 1);
    }
    const Dims gs{out[0], out[1], out[2], out[3]}, ws{k.o, k.c, k.kh, k.kw};
    want = ref::conv_transpose2d(widen(g), gs, widen(w.v), ws, {}, p, out);
    magnitude = ref::conv_transpose2d(absolute(g), gs, absolute(w.v), ws, {}, p, out);
    EXPECT_EQ(out, (Dims{k.n, k.c, k.h, k.w}));
  }
  const auto [got, dispatches] = half_wide(k, d, x, w, b, g, "implicit", tile);
  if (k.p.stride[0] == 1 && k.p.stride[1] == 1) {
    // The weight's permute and one implicit GEMM; channels last (narrow channels a multiple of 8) the narrow side's transpose too.
    EXPECT_EQ(dispatches, channels_last(k, true) ? 3u : 2u);
  } else {
    EXPECT_GE(dispatches, 3u);  // the transposed gather runs at stride 1 only: the columns path
  }
  const double terms = static_cast<double>((k.transposed ? k.c : k.o) * k.kh * k.kw), unit = 0x1p-22;
  expect_half_close(got, want, magnitude, terms, d, k.transposed ? "implicit transposed forward" : "implicit input gradient", unit);
  const auto [columns, column_dispatches] = half_wide(k, d, x, w, b, g, "columns", tile);
  EXPECT_GE(column_dispatches, 3u);  // gather, GEMM, col2im
  expect_paths_agree(got, columns, magnitude, terms, d, unit);
}

// check(k, d) over both implicit-GEMM case lists, for each dtype in dtypes.
template <class Check>
void over_implicit_cases(const std::vector<DType>& dtypes, Check check) {
  for (DType d : dtypes) {
    for (const Case& k : implicit_transposed_cases()) check(k, d);
    for (const Case& k : implicit_cases()) check(k, d);
  }
}

TEST(ConvHalf, ImplicitGemmTransposedForwardAndInputGradient) {
  const std::vector<DType> dtypes = coop_dtypes();
  OA_SKIP_WITHOUT_COOP(dtypes);
  over_implicit_cases(dtypes, [](const Case& k, DType d) { check_implicit_transposed(k, d); });
}

// Without cooperative matrices (lavapipe) conv.half_forward = implicit never
// reaches the tensor-core lowering: wide from narrow takes the columns path
// (gather, GEMM, col2im) with the same result as under columns.
TEST(ConvHalf, ImplicitWithoutCooperativeMatricesTakesColumns) {
  if (!coop_dtypes().empty()) GTEST_SKIP() << "the device has cooperative matrices";
  const DType d = DType::F16;
  for (const Case& k : {implicit_transposed_cases()[1], implicit_cases()[1]}) {
    SCOPED_TRACE(describe(k));
    const HalfInput x = half_input(act_shape(k, k.c, k.h, k.w), d, 95), w = half_input(weight_shape(k), d, 96);
    const HalfInput b = k.bias && k.transposed ? half_input({k.o}, d, 97) : HalfInput{};
    Dims out;
    reference(k, widen(x.v), widen(w.v), {}, out);
    const auto g = ref::rounded(format_of(d), random_values(out[0] * out[1] * out[2] * out[3], 98));
    const auto [got, dispatches] = half_wide(k, d, x, w, b, g, "implicit", "");
    EXPECT_GE(dispatches, 3u);
    EXPECT_EQ(got, half_wide(k, d, x, w, b, g, "columns", "").first);
  }
}

// The transposed gather under every tile of gemm.coopmat_tile.
TEST(ConvHalf, ImplicitGemmTransposedEveryTile) {
  const std::vector<DType> dtypes = coop_dtypes();
  OA_SKIP_WITHOUT_COOP(dtypes);
  for (std::string_view tile : oa::tuning_point("gemm.coopmat_tile").variants)
    for (DType d : dtypes) {
      for (std::size_t i : {1u, 2u, 5u}) check_implicit_transposed(implicit_transposed_cases()[i], d, std::string(tile));
      check_implicit_transposed(implicit_cases()[2], d, std::string(tile));
    }
}

// ── The tensor-core implicit weight gradient ───────────────────────────────
// conv.half_wgrad = implicit: where the wide side's channels are a multiple of
// 8, ml/conv/igemm_coopmat (WGRAD) over the whole batch, channels last, K
// split (permute, transpose, GEMM, maybe the split's epilogue, transpose
// back); elsewhere the columns path. Against the f32 gradients of the same
// rounded values within the accumulation bound (as check_half), on the
// implicit forward's and the transposed gather's cases (those with stride 1
// and more included), where the device has f16 or bf16 cooperative matrices.

// The weight gradient of sum(g * y) for k on x and w (no bias) under
// conv.half_wgrad = `path`, and the dispatches of the backward op.
std::pair<std::vector<float>, std::uint32_t> half_weight_grad(const Case& k, DType d, const HalfInput& x, const HalfInput& w,
                                                               const std::vector<float>& g, const std::string& path) {
  const oa_test::Forced forced("conv.half_wgrad", path);
  const Matrix leaf = oa::set_requires_grad(Matrix::from_vector(w.leaf.shape(), w.v));
  const Matrix y = call(k, oa::matrix::cast(Matrix::from_vector(x.leaf.shape(), x.v), d), oa::matrix::cast(leaf, d), Matrix());
  oa::TraceCapture trace(x.m.engine());
  oa::backward(oa::matrix::cast(y, DType::F32), Matrix::from_vector(y.shape(), g));
  const auto ops = trace.ops();
  const std::string label = std::string("oa::ml::conv") + (k.transposed ? "_transpose" : "") + (k.one_d ? "_1d" : "_2d") + " backward";
  const auto op = std::find_if(ops.begin(), ops.end(), [&](const oa::SemanticOp& o) { return o.label() == label; });
  EXPECT_NE(op, ops.end()) << label;
  return {oa::grad(leaf).to_vector(), op == ops.end() ? 0u : op->dispatches};
}

void check_implicit_wgrad(Case k, DType d) {
  k.bias = false;
  SCOPED_TRACE(describe(k) + " " + std::string(oa::to_string(d)));
  const HalfInput x = half_input(act_shape(k, k.c, k.h, k.w), d, 61), w = half_input(weight_shape(k), d, 62);
  Dims out;
  reference(k, widen(x.v), widen(w.v), {}, out);
  const auto g = ref::rounded(format_of(d), random_values(out[0] * out[1] * out[2] * out[3], 64));
  const auto want = f32_gradients(k, widen(x.v), widen(w.v), {}, widen(g))[1];
  const auto magnitude = f32_gradients(k, absolute(x.v), absolute(w.v), {}, absolute(g))[1];
  const double terms = 2 * static_cast<double>(out[0] * out[2] * out[3] + x.leaf.numel());
  const auto [implicit, dispatches] = half_weight_grad(k, d, x, w, g, "implicit");
  const std::int64_t wide_channels = k.transposed ? k.o : k.c;
  if (wide_channels % 8 == 0) {
    EXPECT_GE(dispatches, 4u);  // permute, transpose, GEMM (and an epilogue), transpose back
    EXPECT_LE(dispatches, 5u);
  } else {
    EXPECT_GE(dispatches, 3u);  // columns: two column passes and a GEMM (and its split's epilogue)
    EXPECT_LE(dispatches, 4u);
  }
  expect_half_close(implicit, want, magnitude, terms, d, "implicit weight gradient", 0x1p-22);
  const auto [columns, column_dispatches] = half_weight_grad(k, d, x, w, g, "columns");
  EXPECT_GE(column_dispatches, 3u);
  EXPECT_LE(column_dispatches, 4u);
  expect_half_close(columns, want, magnitude, terms, d, "columns weight gradient", 0x1p-22);
}

TEST(ConvHalf, ImplicitWeightGradient) {
  const std::vector<DType> dtypes = coop_dtypes();
  OA_SKIP_WITHOUT_COOP(dtypes);
  over_implicit_cases(dtypes, check_implicit_wgrad);
  // A long K (4 images of 48 x 40 positions) that splits, 64 wide channels.
  for (DType d : dtypes) check_implicit_wgrad(conv2d(4, 64, 32, 48, 40, 3, 3, params({1, 1}, {1, 1}, {1, 1})), d);
}

// ── Convolutions whose stride equals their kernel (conv.patch) ──────────────

// Stride equal to the kernel, no padding, dilation 1, groups 1: 1-D kernels 2-4,
// 2-D 2x2, 4x4, 16x16 and 2x3, odd extents (a convolution's input rows and
// columns past its last patch), batch 1 and 3, with and without bias.
const std::vector<Case>& patch_cases() {
  static const std::vector<Case> cases{
      conv1d(1, 3, 5, 8, 2, params1(2, 0, 1)),
      conv1d(3, 4, 2, 13, 3, params1(3, 0, 1), false),
      conv1d(1, 2, 7, 17, 4, params1(4, 0, 1)),
      tconv1d(3, 3, 4, 5, 2, params1(2, 0, 1)),
      tconv1d(1, 5, 2, 7, 3, params1(3, 0, 1), false),
      tconv1d(1, 2, 3, 3, 4, params1(4, 0, 1)),
      conv2d(3, 3, 5, 7, 9, 2, 2, params({2, 2}, {0, 0}, {1, 1})),
      conv2d(1, 2, 6, 9, 8, 4, 4, params({4, 4}, {0, 0}, {1, 1}), false),
      conv2d(1, 3, 4, 33, 35, 16, 16, params({16, 16}, {0, 0}, {1, 1})),
      conv2d(3, 2, 3, 5, 7, 2, 3, params({2, 3}, {0, 0}, {1, 1})),
      tconv2d(3, 4, 3, 5, 3, 2, 2, params({2, 2}, {0, 0}, {1, 1})),
      tconv2d(1, 3, 2, 3, 2, 4, 4, params({4, 4}, {0, 0}, {1, 1}), false),
      tconv2d(1, 2, 3, 2, 3, 16, 16, params({16, 16}, {0, 0}, {1, 1})),
      tconv2d(3, 2, 4, 3, 4, 2, 3, params({2, 3}, {0, 0}, {1, 1})),
  };
  return cases;
}

// Forced, each case takes the patch lowering: a rearrangement, the GEMM and
// a transpose for a convolution (its GEMM may split K: one epilogue more), the
// GEMM and a rearrangement for a transposed one (with bias, a copy of it per
// tap first); forced general, the implicit GEMM's one dispatch.
TEST(ConvPatch, ForwardMatchesReference) {
  for (const auto& k : patch_cases()) {
    {
      const oa_test::Forced forced("conv.patch", "patch");
      check_forward(k, 1e-4, k.transposed ? Dispatches{k.bias ? 3u : 2u, k.bias ? 4u : 3u} : Dispatches{3, 4});
    }
    const oa_test::Forced general("conv.patch", "general");
    const oa_test::Forced igemm("conv.kernel", "igemm");
    check_forward(k, 1e-4);
  }
}

// The input gradients (the other direction's patch lowering), weight and bias
// gradients against finite differences.
TEST(ConvPatch, Gradients) {
  const oa_test::Forced forced("conv.patch", "patch");
  for (std::size_t i : {0u, 3u, 6u, 9u, 10u, 13u}) check_gradients(patch_cases()[i]);
}

// The backward of a k2 s2 convolution, forced: through the patch GEMMs, the
// input gradient's GEMM and rearrangement and the weight gradient's two
// rearrangements and GEMM (at least five dispatches); through the general
// kernels, the implicit GEMM and the weight-gradient reduction (at most
// three with its partial sums).
TEST(ConvPatch, BackwardTakesThePatchGemms) {
  const auto backward_dispatches = [](const char* variant) {
    const oa_test::Forced forced("conv.patch", variant);
    const oa_test::Forced igemm("conv.kernel", "igemm");
    const Matrix x = oa::set_requires_grad(Matrix::from_vector({2, 3, 6, 6}, random_values(216, 71)));
    const Matrix w = oa::set_requires_grad(Matrix::from_vector({4, 3, 2, 2}, random_values(48, 72)));
    const Matrix y = oa::ml::conv_2d(x, w, Matrix(), {.stride = {2, 2}});
    oa::TraceCapture trace(x.engine());
    oa::backward(y, Matrix::ones(y.shape()));
    const auto ops = trace.ops();
    return ops.size() == 1 ? ops[0].dispatches : 0;
  };
  EXPECT_GE(backward_dispatches("patch"), 5u);
  const std::uint64_t general = backward_dispatches("general");
  EXPECT_GE(general, 2u);
  EXPECT_LE(general, 3u);
}

// Padding 1, dilation 2, groups 2 and output_padding 1 with strides equal to
// the kernels are no patch relations: they pass to the general kernels (one
// dispatch) and keep their answers.
TEST(ConvPatch, OtherGeometriesTakeTheGeneralKernels) {
  const oa_test::Forced forced("conv.patch", "patch");
  const oa_test::Forced igemm("conv.kernel", "igemm");
  for (const auto& k : {conv2d(1, 2, 3, 8, 8, 2, 2, params({2, 2}, {1, 1}, {1, 1})),
                        conv2d(3, 2, 3, 9, 9, 2, 2, params({2, 2}, {0, 0}, {2, 2})),
                        conv2d(1, 4, 4, 8, 6, 2, 2, params({2, 2}, {0, 0}, {1, 1}, 2)),
                        tconv2d(1, 2, 3, 3, 4, 2, 2, params({2, 2}, {0, 0}, {1, 1}, 1, {1, 1})),
                        tconv1d(3, 2, 3, 5, 2, params1(2, 1, 1))}) {
    check_forward(k);
    check_gradients(k);
  }
}

// F16 and BF16 through the patch lowering (the GEMM rounds once) against the
// f64 reference, forward and gradients; BF16 on two cases (fewer pipelines
// to compile on lavapipe).
TEST(ConvPatch, HalfMatchesReference) {
  const oa_test::Forced forced("conv.patch", "patch");
  for (std::size_t i : {0u, 4u, 6u, 10u, 13u}) check_half(patch_cases()[i], DType::F16);
  for (std::size_t i : {6u, 13u}) check_half(patch_cases()[i], DType::BF16);
}

}  // namespace
