// The problem of the GEMM kernels (matrix/gemm.push.h), a part so that a
// kernel built on matrix/gemm_coopmat.glsl (ml/conv/igemm_coopmat) can add
// fields of its own: C_b = alpha * op(A_b) op(B_b) + beta * C_b (+ bias),
// [M, N] by depth K; batch item b of A at a_off + b * a_stride (likewise B
// and C), offsets and strides in elements; K split in `splits` ranges of
// kchunk, split s of C at + s * c_split_stride; the bias from bias_off when
// has_bias.
#ifndef OA_MATRIX_GEMM_PROBLEM_PUSH_H
#define OA_MATRIX_GEMM_PROBLEM_PUSH_H
#define OA_PART_FIELDS_matrix_gemm_problem \
  OA_FIELD(uint, M)                        \
  OA_FIELD(uint, N)                        \
  OA_FIELD(uint, K)                        \
  OA_FIELD(uint, splits)                   \
  OA_FIELD(uint, kchunk)                   \
  OA_FIELD(uint, a_off)                    \
  OA_FIELD(uint, a_stride)                 \
  OA_FIELD(uint, b_off)                    \
  OA_FIELD(uint, b_stride)                 \
  OA_FIELD(uint, c_off)                    \
  OA_FIELD(uint, c_stride)                 \
  OA_FIELD(uint, c_split_stride)           \
  OA_FIELD(uint, bias_off)                 \
  OA_FIELD(float, alpha)                   \
  OA_FIELD(float, beta)                    \
  OA_FIELD(uint, has_bias)
OA_PUSH_PART(matrix_gemm_problem)
#endif
