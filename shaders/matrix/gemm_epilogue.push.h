// gemm_epilogue.comp and gemm_epilogue_half.comp: the split-K sum, alpha, beta and bias.
OA_PUSH(matrix_gemm_epilogue)
  OA_FIELD(uint, count)
  OA_FIELD(uint, MN)
  OA_FIELD(uint, N)
  OA_FIELD(uint, splits)
  OA_FIELD(uint, w_off)
  OA_FIELD(uint, c_off)
  OA_FIELD(uint, c_stride)
  OA_FIELD(uint, bias_off)
  OA_FIELD(float, alpha)
  OA_FIELD(float, beta)
  OA_FIELD(uint, has_bias)
OA_PUSH_END
