// gemm, gemm_half, gemm_skinny(_half) and gemm_coopmat(_bf16): C = alpha * op(A) op(B) +
// beta * C (+ bias), offsets and batch strides in elements (matrix/gemm_problem.push.h).
#include "matrix/gemm_problem.push.h"
OA_PUSH(matrix_gemm)
  OA_PART(matrix_gemm_problem, gemm)
OA_PUSH_END
