OA_PUSH(matrix_reduce_map)
  OA_FIELD(uint, n)
  OA_FIELD(uint, base)
  OA_FIELD(uint, channels)
  OA_FIELD(uint, inner)
OA_PUSH_END
