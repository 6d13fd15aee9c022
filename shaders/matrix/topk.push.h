OA_PUSH(matrix_topk)
  OA_FIELD(uint, n)
  OA_FIELD(uint, extent)
  OA_FIELD(uint, inner)
  OA_FIELD(uint, k)
OA_PUSH_END
