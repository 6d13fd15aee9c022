OA_PUSH(matrix_triangle)
  OA_FIELD(uint, n)
  OA_FIELD(uint, base)
  OA_FIELD(uint, rows)
  OA_FIELD(uint, cols)
  OA_FIELD(int, diagonal)
OA_PUSH_END
