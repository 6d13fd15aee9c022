// Convolution modules: forward against the f64 reference and gradients of the
// input, weight and bias; weight layouts and default initialisation.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "oa/ml/nn/conv.hpp"
#include "oa/oa.hpp"
#include "reference/conv.hpp"
#include "support/expect.hpp"
#include "support/module_check.hpp"

namespace {

using namespace oa::test::module_names;
namespace ref = oa::reference;

TEST(NnConvModule, Conv1d) {
  oa::ml::Generator g(1);
  Conv1d conv(4, 6, 3, g, {.stride = 2, .padding = 1, .dilation = 1, .groups = 2});
  EXPECT_EQ(conv.weight().shape(), Shape({6, 2, 3}));
  EXPECT_EQ(conv.bias().shape(), Shape({6}));
  ref::ConvParams p;
  p.stride = {1, 2};
  p.padding = {0, 1};
  p.groups = 2;
  const auto y = oa::test::module_gradcheck(conv, oa::test::random_input({2, 4, 7}, 2), [&](const Args& v) {
    std::array<std::int64_t, 4> out;
    return ref::conv2d(v[0], {2, 4, 1, 7}, v[1], {6, 2, 1, 3}, v[2], p, out);
  });
  EXPECT_EQ(y.shape(), Shape({2, 6, 4}));
}

// Output t reads inputs t - d (K - 1) .. t: the reference convolves the input
// left-padded by d (K - 1) zeros, without padding.
TEST(NnConvModule, CausalConv1d) {
  oa::ml::Generator g(7);
  CausalConv1d conv(4, 6, 3, g, 2, 2);
  EXPECT_EQ(conv.weight().shape(), Shape({6, 2, 3}));
  const std::int64_t L = 9, pad = 4;
  ref::ConvParams p;
  p.dilation = {1, 2};
  p.groups = 2;
  const auto y = oa::test::module_gradcheck(conv, oa::test::random_input({2, 4, L}, 8), [&](const Args& v) {
    std::vector<double> padded(2 * 4 * (L + pad), 0.0);
    for (std::int64_t r = 0; r < 2 * 4; ++r)
      for (std::int64_t t = 0; t < L; ++t) padded[r * (L + pad) + pad + t] = v[0][r * L + t];
    std::array<std::int64_t, 4> out;
    return ref::conv2d(padded, {2, 4, 1, L + pad}, v[1], {6, 2, 1, 3}, v[2], p, out);
  });
  EXPECT_EQ(y.shape(), Shape({2, 6, L}));
  // A kernel of 1 needs no padding; a dilation below 1 is refused, naming the module.
  CausalConv1d pointwise(3, 2, 1, g);
  EXPECT_EQ(pointwise.forward(oa::Matrix::uniform(Shape{1, 3, 5}, -1, 1, 9)).shape(), Shape({1, 2, 5}));
  EXPECT_TRUE(oa_test::throws([&] { CausalConv1d(2, 2, 3, g, 0); }, oa::ErrorKind::InvalidArgument, {"CausalConv1d", "dilation"}));
}

TEST(NnConvModule, Conv2dRectangularKernelNoBias) {
  oa::ml::Generator g(2);
  Conv2d conv(3, 4, {3, 2}, g, {.stride = {2, 1}, .padding = {1, 0}}, false);
  EXPECT_EQ(conv.weight().shape(), Shape({4, 3, 3, 2}));
  EXPECT_FALSE(conv.bias().defined());
  ref::ConvParams p;
  p.stride = {2, 1};
  p.padding = {1, 0};
  const auto y = oa::test::module_gradcheck(conv, oa::test::random_input({2, 3, 5, 4}, 3), [&](const Args& v) {
    std::array<std::int64_t, 4> out;
    return ref::conv2d(v[0], {2, 3, 5, 4}, v[1], {4, 3, 3, 2}, {}, p, out);
  });
  EXPECT_EQ(y.shape(), Shape({2, 4, 3, 3}));
}

TEST(NnConvModule, ConvTranspose1d) {
  oa::ml::Generator g(3);
  ConvTranspose1d conv(3, 2, 3, g, {.stride = 2, .padding = 1, .output_padding = 1});
  EXPECT_EQ(conv.weight().shape(), Shape({3, 2, 3}));  // IOK
  ref::ConvParams p;
  p.stride = {1, 2};
  p.padding = {0, 1};
  p.output_padding = {0, 1};
  const auto y = oa::test::module_gradcheck(conv, oa::test::random_input({2, 3, 5}, 4), [&](const Args& v) {
    std::array<std::int64_t, 4> out;
    return ref::conv_transpose2d(v[0], {2, 3, 1, 5}, v[1], {3, 2, 1, 3}, v[2], p, out);
  });
  EXPECT_EQ(y.shape(), Shape({2, 2, 10}));
}

TEST(NnConvModule, ConvTranspose2dGrouped) {
  oa::ml::Generator g(4);
  ConvTranspose2d conv(4, 6, {3, 3}, g, {.stride = {2, 2}, .padding = {1, 1}, .groups = 2});
  EXPECT_EQ(conv.weight().shape(), Shape({4, 3, 3, 3}));  // IOHW with O / groups
  ref::ConvParams p;
  p.stride = {2, 2};
  p.padding = {1, 1};
  p.groups = 2;
  const auto y = oa::test::module_gradcheck(conv, oa::test::random_input({1, 4, 3, 2}, 5), [&](const Args& v) {
    std::array<std::int64_t, 4> out;
    return ref::conv_transpose2d(v[0], {1, 4, 3, 2}, v[1], {4, 3, 3, 3}, v[2], p, out);
  });
  EXPECT_EQ(y.shape(), Shape({1, 6, 5, 3}));
}

TEST(NnConvModule, DefaultInitialisationBounds) {
  // PyTorch: weight and bias within 1/sqrt(fan_in), fan_in = weight.shape[1] * kernel elements.
  oa::ml::Generator g(5);
  Conv2d conv(8, 16, {3, 3}, g, {.groups = 2});
  ConvTranspose2d convt(8, 4, {2, 2}, g);
  const double conv_bound = 1.0 / std::sqrt(4.0 * 9.0), convt_bound = 1.0 / std::sqrt(4.0 * 4.0);
  for (const auto& [p, bound] : {std::pair{conv.weight(), conv_bound}, std::pair{conv.bias(), conv_bound},
                                 std::pair{convt.weight(), convt_bound}, std::pair{convt.bias(), convt_bound}}) {
    double lo = 1, hi = -1;
    for (float x : p.value().to_vector()) {
      lo = std::min(lo, static_cast<double>(x));
      hi = std::max(hi, static_cast<double>(x));
    }
    EXPECT_GE(lo, -bound) << p.name();
    EXPECT_LT(hi, bound) << p.name();
    if (p.value().numel() > 100) {  // a large uniform sample comes close to both bounds
      EXPECT_LT(lo, -0.9 * bound) << p.name();
      EXPECT_GT(hi, 0.9 * bound) << p.name();
    }
  }
}

}  // namespace
