OA_PUSH(matrix_reduce_cols)
  OA_FIELD(uint, R)
  OA_FIELD(uint, C)
  OA_FIELD(uint, x_off)
  OA_FIELD(uint, y_off)
OA_PUSH_END
