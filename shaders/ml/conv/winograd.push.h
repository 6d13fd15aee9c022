// The Winograd F(2x2, 3x3) kernels (winograd_input, winograd_weight,
// winograd_output): a 3x3 stride-1 correlation of a source [n, c, h, w] with
// a weight, padded by (ph, pw) (negative: cropped), into an output [n, k, oh,
// ow], through tiles_pad 4x4 input tiles (tiles real ones, tiles_w per row,
// tiles_hw per image) and k_pad output channels (both rounded up to 4 for
// the GEMM's vector loads). The weight tap (c, k, i, j) is element
// k * wk_stride + c * wc_stride + (flip ? 8 - 3i - j : 3i + j).
OA_PUSH(ml_conv_winograd)
  OA_FIELD(uint, n)
  OA_FIELD(uint, c)
  OA_FIELD(uint, h)
  OA_FIELD(uint, w)
  OA_FIELD(uint, k)
  OA_FIELD(uint, oh)
  OA_FIELD(uint, ow)
  OA_FIELD(int, ph)
  OA_FIELD(int, pw)
  OA_FIELD(uint, tiles_w)
  OA_FIELD(uint, tiles_hw)
  OA_FIELD(uint, tiles)
  OA_FIELD(uint, tiles_pad)
  OA_FIELD(uint, k_pad)
  OA_FIELD(uint, has_bias)
  OA_FIELD(uint, wk_stride)
  OA_FIELD(uint, wc_stride)
  OA_FIELD(uint, flip)
OA_PUSH_END
