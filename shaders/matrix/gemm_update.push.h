// The update of C that the GEMM epilogues (gemm_epilogue.comp,
// gemm_split_epilogue.comp) apply to a product p: element r of C's item b,
// at c_off + b * c_stride + r, becomes alpha * p + beta * C (C read only when
// beta != 0) + bias[bias_off + r % N] when has_bias.
#ifndef OA_MATRIX_GEMM_UPDATE_PUSH_H
#define OA_MATRIX_GEMM_UPDATE_PUSH_H
#define OA_PART_FIELDS_matrix_gemm_update \
  OA_FIELD(uint, c_off)                   \
  OA_FIELD(uint, c_stride)                \
  OA_FIELD(uint, bias_off)                \
  OA_FIELD(float, alpha)                  \
  OA_FIELD(float, beta)                   \
  OA_FIELD(uint, has_bias)
OA_PUSH_PART(matrix_gemm_update)
#endif
