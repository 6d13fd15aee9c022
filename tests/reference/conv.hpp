#pragma once
// Plain f64 oracles for the convolution family, written from the definitions
// (PyTorch's conv1d/conv2d/conv_transpose1d/conv_transpose2d): the convolution
// as a direct sum over taps, the transposed convolution as the scatter of each
// input element through the kernel. 1-D is 2-D with height 1.
#include <array>
#include <cstdint>
#include <vector>

namespace oa::reference {

struct ConvParams {
  std::array<std::int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1}, output_padding{0, 0};
  std::int64_t groups = 1;
};

// x [N, C, H, W]; w [O, C / groups, KH, KW]; b [O] or empty. Returns [N, O, OH, OW] in `out_shape`.
inline std::vector<double> conv2d(const std::vector<double>& x, std::array<std::int64_t, 4> xs, const std::vector<double>& w,
                                  std::array<std::int64_t, 4> ws, const std::vector<double>& b, const ConvParams& p,
                                  std::array<std::int64_t, 4>& out_shape) {
  const auto [n, c, h, wd] = xs;
  const auto [o, cg, kh, kw] = ws;
  const std::int64_t og = o / p.groups;
  const std::int64_t oh = (h + 2 * p.padding[0] - p.dilation[0] * (kh - 1) - 1) / p.stride[0] + 1;
  const std::int64_t ow = (wd + 2 * p.padding[1] - p.dilation[1] * (kw - 1) - 1) / p.stride[1] + 1;
  out_shape = {n, o, oh, ow};
  std::vector<double> y(static_cast<std::size_t>(n * o * oh * ow), 0.0);
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t oc = 0; oc < o; ++oc) {
      const std::int64_t g = oc / og;
      for (std::int64_t yy = 0; yy < oh; ++yy)
        for (std::int64_t xx = 0; xx < ow; ++xx) {
          double s = b.empty() ? 0.0 : b[oc];
          for (std::int64_t ic = 0; ic < cg; ++ic)
            for (std::int64_t a = 0; a < kh; ++a)
              for (std::int64_t bb = 0; bb < kw; ++bb) {
                const std::int64_t iy = yy * p.stride[0] - p.padding[0] + a * p.dilation[0];
                const std::int64_t ix = xx * p.stride[1] - p.padding[1] + bb * p.dilation[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                s += x[((in * c + g * cg + ic) * h + iy) * wd + ix] * w[((oc * cg + ic) * kh + a) * kw + bb];
              }
          y[((in * o + oc) * oh + yy) * ow + xx] = s;
        }
    }
  return y;
}

// x [N, C, H, W]; w [C, O / groups, KH, KW]; b [O] or empty. Returns [N, O, OH, OW] in `out_shape`.
inline std::vector<double> conv_transpose2d(const std::vector<double>& x, std::array<std::int64_t, 4> xs,
                                            const std::vector<double>& w, std::array<std::int64_t, 4> ws,
                                            const std::vector<double>& b, const ConvParams& p,
                                            std::array<std::int64_t, 4>& out_shape) {
  const auto [n, c, h, wd] = xs;
  const auto [ci, og, kh, kw] = ws;
  (void)ci;
  const std::int64_t cg = c / p.groups, o = og * p.groups;
  const std::int64_t oh = (h - 1) * p.stride[0] - 2 * p.padding[0] + p.dilation[0] * (kh - 1) + p.output_padding[0] + 1;
  const std::int64_t ow = (wd - 1) * p.stride[1] - 2 * p.padding[1] + p.dilation[1] * (kw - 1) + p.output_padding[1] + 1;
  out_shape = {n, o, oh, ow};
  std::vector<double> y(static_cast<std::size_t>(n * o * oh * ow), 0.0);
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t oc = 0; oc < o; ++oc)
      for (std::int64_t i = 0; i < oh * ow; ++i) y[(in * o + oc) * oh * ow + i] = b.empty() ? 0.0 : b[oc];
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t ic = 0; ic < c; ++ic) {
      const std::int64_t g = ic / cg;
      for (std::int64_t iy = 0; iy < h; ++iy)
        for (std::int64_t ix = 0; ix < wd; ++ix) {
          const double v = x[((in * c + ic) * h + iy) * wd + ix];
          for (std::int64_t oc = 0; oc < og; ++oc)
            for (std::int64_t a = 0; a < kh; ++a)
              for (std::int64_t bb = 0; bb < kw; ++bb) {
                const std::int64_t yy = iy * p.stride[0] - p.padding[0] + a * p.dilation[0];
                const std::int64_t xx = ix * p.stride[1] - p.padding[1] + bb * p.dilation[1];
                if (yy < 0 || yy >= oh || xx < 0 || xx >= ow) continue;
                y[((in * o + g * og + oc) * oh + yy) * ow + xx] += v * w[((ic * og + oc) * kh + a) * kw + bb];
              }
        }
    }
  return y;
}

// The weight gradient of the convolution relation: narrow [N, CN, HN, WN]
// (a convolution's output gradient, or a transposed convolution's input) and
// wide [N, CW, HW, WW] (the convolution's input, or the transposed
// convolution's output gradient) meet where yw = yn * stride - padding + kh *
// dilation (likewise along x). Returns dW [CN, CW / groups, KH, KW].
inline std::vector<double> conv_weight_grad(const std::vector<double>& narrow, std::array<std::int64_t, 4> ns,
                                            const std::vector<double>& wide, std::array<std::int64_t, 4> ws, std::int64_t kh,
                                            std::int64_t kw, const ConvParams& p) {
  const auto [n, cn, hn, wn] = ns;
  const auto [n2, cw, hw, ww] = ws;
  (void)n2;
  const std::int64_t cng = cn / p.groups, cwg = cw / p.groups;
  std::vector<double> dw(static_cast<std::size_t>(cn * cwg * kh * kw), 0.0);
  for (std::int64_t o = 0; o < cn; ++o)
    for (std::int64_t ci = 0; ci < cwg; ++ci)
      for (std::int64_t th = 0; th < kh; ++th)
        for (std::int64_t tw = 0; tw < kw; ++tw) {
          double s = 0;
          for (std::int64_t b = 0; b < n; ++b)
            for (std::int64_t yn = 0; yn < hn; ++yn)
              for (std::int64_t xn = 0; xn < wn; ++xn) {
                const std::int64_t yw = yn * p.stride[0] - p.padding[0] + th * p.dilation[0];
                const std::int64_t xw = xn * p.stride[1] - p.padding[1] + tw * p.dilation[1];
                if (yw < 0 || yw >= hw || xw < 0 || xw >= ww) continue;
                s += narrow[((b * cn + o) * hn + yn) * wn + xn] * wide[((b * cw + (o / cng) * cwg + ci) * hw + yw) * ww + xw];
              }
          dw[((o * cwg + ci) * kh + th) * kw + tw] = s;
        }
  return dw;
}

}  // namespace oa::reference
