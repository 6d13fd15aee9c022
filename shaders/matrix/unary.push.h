// unary.comp and unary_backward.comp.
OA_PUSH(matrix_unary)
  OA_FIELD(uint, n)
  OA_FIELD(float, a)
  OA_FIELD(float, b)
OA_PUSH_END
