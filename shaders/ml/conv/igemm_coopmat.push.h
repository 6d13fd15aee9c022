// ml/conv/igemm_coopmat(_bf16): the GEMM problem of matrix/gemm_coopmat.glsl
// (matrix/gemm_problem.push.h) per image b, C_b [M, N] = A [M, K] x
// gathered B_b [K, N], B_b's source being image b of the input (b_off +
// b * b_stride); then the gathered image's height and width (in_h, in_w),
// the output image's width (out_w) and the convolution's geometry
// (ml/conv/geometry.glsl), the pairs (height, width) packed as
// height | width << 16, and the output positions of an image (the weight
// gradient's). The forward gathers from the wide image (in = wide,
// out = narrow), the transposed gather from the narrow one (in = narrow,
// out = wide), the weight gradient from the wide one (in = wide, out =
// narrow, its K running over the batch's output positions).
#include "matrix/gemm_problem.push.h"
OA_PUSH(ml_conv_igemm_coopmat)
  OA_PART(matrix_gemm_problem, gemm)
  OA_FIELD(uint, in_h)
  OA_FIELD(uint, in_w)
  OA_FIELD(uint, out_w)
  OA_FIELD(uint, kernel_hw)
  OA_FIELD(uint, stride_hw)
  OA_FIELD(uint, padding_hw)
  OA_FIELD(uint, dilation_hw)
  OA_FIELD(uint, positions)
OA_PUSH_END
