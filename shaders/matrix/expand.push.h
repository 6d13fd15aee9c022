OA_PUSH(matrix_expand)
  OA_FIELD(uint, n)
  OA_FIELD(uint, base)
  OA_FIELD(uint, channels)
  OA_FIELD(uint, inner)
  OA_FIELD(float, scale)
OA_PUSH_END
