// gemm_split.comp: one operand of an f32 GEMM split into f16 parts.
OA_PUSH(matrix_gemm_split)
  OA_FIELD(uint, lines)       // rows of op(A) (M) or columns of op(B) (N)
  OA_FIELD(uint, len)         // K
  OA_FIELD(uint, lines_p)     // lines and len padded to multiples of 8
  OA_FIELD(uint, len_p)
  OA_FIELD(uint, x_off)       // X's item b at element x_off + b * x_stride
  OA_FIELD(uint, x_stride)
  OA_FIELD(uint, hi_off)      // the parts' item b at word *_off + b * part_stride
  OA_FIELD(uint, lo_off)
  OA_FIELD(uint, part_stride)
  OA_FIELD(uint, scale_off)   // the exponents' item b at scale_off + b * lines_p
OA_PUSH_END
