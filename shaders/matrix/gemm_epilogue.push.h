// gemm_epilogue.comp and gemm_epilogue_half.comp: the split-K sum, alpha, beta and bias.
#include "matrix/gemm_update.push.h"
OA_PUSH(matrix_gemm_epilogue)
  OA_FIELD(uint, count)
  OA_FIELD(uint, MN)
  OA_FIELD(uint, N)
  OA_FIELD(uint, splits)
  OA_FIELD(uint, w_off)
  OA_PART(matrix_gemm_update, update)
OA_PUSH_END
