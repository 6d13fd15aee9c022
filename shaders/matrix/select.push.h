OA_PUSH(matrix_select)
  OA_FIELD(uint, n)
  OA_FIELD(uint, flags)
  OA_FIELD(float, value)
  OA_ARRAY(uint, ext, 8)
  OA_ARRAY(uint, cstride, 8)
OA_PUSH_END
