OA_PUSH(matrix_cast)
  OA_FIELD(uint, n)
OA_PUSH_END
