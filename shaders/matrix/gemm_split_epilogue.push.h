// gemm_split_epilogue.comp: the split f32 GEMM's scales undone, alpha, beta and bias.
#include "matrix/gemm_update.push.h"
OA_PUSH(matrix_gemm_split_epilogue)
  OA_FIELD(uint, count)      // items * M * N outputs
  OA_FIELD(uint, M)
  OA_FIELD(uint, N)
  OA_FIELD(uint, K)
  OA_FIELD(uint, w_off)      // W's item b, row i at w_off + b * w_stride + i * w_row
  OA_FIELD(uint, w_stride)
  OA_FIELD(uint, w_row)
  OA_FIELD(uint, sa_off)     // A's exponents of item b at sa_off + b * sa_stride (0: shared)
  OA_FIELD(uint, sa_stride)
  OA_FIELD(uint, sb_off)
  OA_FIELD(uint, sb_stride)
  OA_FIELD(uint, a_off)      // the f32 operands, as matrix/gemm takes them
  OA_FIELD(uint, a_stride)
  OA_FIELD(uint, b_off)
  OA_FIELD(uint, b_stride)
  OA_PART(matrix_gemm_update, update)
OA_PUSH_END
