OA_PUSH(matrix_nonzero)
  OA_FIELD(uint, n)
  OA_FIELD(uint, blocks)
  OA_FIELD(uint, rank)
  OA_ARRAY(uint, ext, 8)
OA_PUSH_END
