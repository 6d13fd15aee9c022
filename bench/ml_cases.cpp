// Convolution, batched-algebra and attention cases (issues 4 and 5), each
// with its PyTorch twin in bench/torch_compare.py.
#include "bench.hpp"

namespace {
using oa::Matrix;
using nlohmann::json;

Matrix input(const oa::Shape& s, std::uint64_t seed, const oa::Engine& e, bool grad = false) {
  Matrix m = Matrix::uniform(s, -1, 1, seed, e);
  if (grad) oa::set_requires_grad(m);
  return m;
}

// Forward, or forward + backward with dY = ones when `backward`.
std::function<void()> step(std::function<Matrix()> forward, bool backward, const oa::Engine& e) {
  if (!backward) return [forward] { (void)forward(); };
  return [forward, e] {
    Matrix y = forward();
    oa::backward(y, Matrix::ones(y.shape(), e));
  };
}

oa_bench::Case conv2d(std::string name, std::int64_t groups, bool backward) {
  json p = {{"n", 32}, {"c_in", 64}, {"c_out", 64}, {"h", 56}, {"w", 56}, {"k", 3}, {"padding", 1}, {"groups", groups}, {"backward", backward}};
  const double flops = 2.0 * 32 * 64 * 56 * 56 * (64 / groups) * 9 * (backward ? 3 : 1);
  return {std::move(name), "conv2d", p, flops, 0, [groups, backward](const oa::Engine& e) {
            auto x = input({32, 64, 56, 56}, 1, e, backward), w = input({64, 64 / groups, 3, 3}, 2, e, backward),
                 b = input({64}, 3, e, backward);
            return step([=] { return oa::ml::conv_2d(x, w, b, 1, 1, groups); }, backward, e);
          }};
}

const oa_bench::Register kConv1d{{"conv1d_n32_c256_l4096_k3", "conv1d",
                                  {{"n", 32}, {"c_in", 256}, {"c_out", 256}, {"l", 4096}, {"k", 3}, {"padding", 1}},
                                  2.0 * 32 * 256 * 4096 * 256 * 3, 0, [](const oa::Engine& e) {
                                    auto x = input({32, 256, 4096}, 1, e), w = input({256, 256, 3}, 2, e), b = input({256}, 3, e);
                                    return step([=] { return oa::ml::conv_1d(x, w, b, 1, 1, 1); }, false, e);
                                  }}};
const oa_bench::Register kConv2d{conv2d("conv2d_n32_c64_56x56_k3", 1, false)};
const oa_bench::Register kConv2dBwd{conv2d("conv2d_n32_c64_56x56_k3_fwd_bwd", 1, true)};
const oa_bench::Register kDepthwise{conv2d("depthwise_conv2d_n32_c64_56x56_k3", 64, false)};
const oa_bench::Register kConvT2d{{"conv_transpose2d_n32_c64to32_28x28_k4_s2", "conv_transpose2d",
                                   {{"n", 32}, {"c_in", 64}, {"c_out", 32}, {"h", 28}, {"w", 28}, {"k", 4}, {"stride", 2}, {"padding", 1}},
                                   2.0 * 32 * 64 * 28 * 28 * 32 * 16, 0, [](const oa::Engine& e) {
                                     auto x = input({32, 64, 28, 28}, 1, e), w = input({64, 32, 4, 4}, 2, e), b = input({32}, 3, e);
                                     return step([=] { return oa::ml::conv_transpose_2d(x, w, b, 2, 1); }, false, e);
                                   }}};
const oa_bench::Register kConvT1d{{"conv_transpose1d_n32_c128to64_l1024_k4_s2", "conv_transpose1d",
                                   {{"n", 32}, {"c_in", 128}, {"c_out", 64}, {"l", 1024}, {"k", 4}, {"stride", 2}, {"padding", 1}},
                                   2.0 * 32 * 128 * 1024 * 64 * 4, 0, [](const oa::Engine& e) {
                                     auto x = input({32, 128, 1024}, 1, e), w = input({128, 64, 4}, 2, e), b = input({64}, 3, e);
                                     return step([=] { return oa::ml::conv_transpose_1d(x, w, b, {.stride = 2, .padding = 1}); }, false, e);
                                   }}};

oa_bench::Case bmm(const char* kind) {
  const std::string k = kind;
  return {std::string(kind) + "_64x512^3", kind, {{"batch", 64}, {"m", 512}, {"n", 512}, {"k", 512}}, 2.0 * 64 * 512 * 512 * 512, 0,
          [k](const oa::Engine& e) {
            auto a = input({64, 512, 512}, 1, e), b = input({64, 512, 512}, 2, e);
            if (k == "bmm") return step([=] { return oa::ml::bmm(a, b); }, false, e);
            if (k == "bmm_nt") return step([=] { return oa::ml::bmm_nt(a, b); }, false, e);
            return step([=] { return oa::ml::bmm_tn(a, b); }, false, e);
          }};
}
const oa_bench::Register kBmm{bmm("bmm")};
const oa_bench::Register kBmmNt{bmm("bmm_nt")};
const oa_bench::Register kBmmTn{bmm("bmm_tn")};

// Causal attention on [B*H, S, D] (PyTorch's twin uses 4-D [B, H, S, D]).
oa_bench::Case attention(std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d, bool backward) {
  const double flops = 2.0 * 2 * b * h * s * s * d / 2 * (backward ? 3.5 : 1);
  return {fmt::format("sdpa_causal_b{}_h{}_s{}_d{}{}", b, h, s, d, backward ? "_fwd_bwd" : ""), "sdpa_causal",
          {{"b", b}, {"h", h}, {"s", s}, {"d", d}, {"backward", backward}}, flops, 0, [=](const oa::Engine& e) {
            auto q = input({b * h, s, d}, 1, e, backward), k = input({b * h, s, d}, 2, e, backward), v = input({b * h, s, d}, 3, e, backward);
            return step([=] { return oa::ml::scaled_dot_product_attention(q, k, v, Matrix(), std::nullopt, true); }, backward, e);
          }};
}
const oa_bench::Register kSdpa{attention(32, 16, 1024, 64, false)};
const oa_bench::Register kSdpaBwd{attention(32, 16, 1024, 64, true)};
const oa_bench::Register kSdpa4k{attention(1, 16, 4096, 64, false)};
const oa_bench::Register kSdpa16k{attention(1, 16, 16384, 64, false)};

const oa_bench::Register kSoftmax{{"softmax_masked_524288x1024", "softmax_masked", {{"rows", 524288}, {"cols", 1024}, {"scale", 0.125}},
                                   0, 3.0 * 4 * 524288.0 * 1024, [](const oa::Engine& e) {
                                     auto s = input({524288, 1024}, 1, e), m = input({524288, 1024}, 2, e);
                                     return step([=] { return oa::ml::softmax_scaled_masked(s, m, 0.125f); }, false, e);
                                   }}};

}  // namespace
