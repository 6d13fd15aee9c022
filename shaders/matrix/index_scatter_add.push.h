OA_PUSH(matrix_index_scatter_add)
  OA_FIELD(uint, n)
  OA_FIELD(uint, K)
  OA_FIELD(uint, N)
  OA_FIELD(uint, inner)
  OA_FIELD(uint, check_id)
OA_PUSH_END
