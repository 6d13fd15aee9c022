OA_PUSH(matrix_strided_copy)
  OA_FIELD(uint, n)
  OA_FIELD(uint, base)
  OA_ARRAY(uint, ext, 8)
  OA_ARRAY(uint, stride, 8)
OA_PUSH_END
