// ml/conv/igemm_coopmat(_bf16): the GEMM problem of matrix/gemm_coopmat.glsl
// (matrix/gemm_problem.push.h) per image b, C_b [M = CN, N = HN * WN] =
// W [CN, K = CW * KH * KW] x cols_b [K, N], B being wide image b (b_off +
// b * b_stride); then the convolution's geometry (ml/conv/geometry.glsl),
// the pairs (height, width) packed as height | width << 16.
#include "matrix/gemm_problem.push.h"
OA_PUSH(ml_conv_igemm_coopmat)
  OA_PART(matrix_gemm_problem, gemm)
  OA_FIELD(uint, hw)
  OA_FIELD(uint, ww)
  OA_FIELD(uint, wn)
  OA_FIELD(uint, kernel_hw)
  OA_FIELD(uint, stride_hw)
  OA_FIELD(uint, padding_hw)
  OA_FIELD(uint, dilation_hw)
OA_PUSH_END
