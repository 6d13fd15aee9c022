OA_PUSH(ml_nn_embedding_sort)
  OA_FIELD(uint, N)
  OA_FIELD(int, V)
  OA_FIELD(uint, k)
  OA_FIELD(uint, j)
OA_PUSH_END
