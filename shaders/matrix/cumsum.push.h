OA_PUSH(matrix_cumsum)
  OA_FIELD(uint, lines)
  OA_FIELD(uint, L)
  OA_FIELD(uint, inner)
OA_PUSH_END
