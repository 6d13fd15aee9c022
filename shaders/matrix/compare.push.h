OA_PUSH(matrix_compare)
  OA_FIELD(uint, n)
  OA_FIELD(float, value)
OA_PUSH_END
