OA_PUSH(matrix_accumulate)
  OA_FIELD(uint, n)
OA_PUSH_END
