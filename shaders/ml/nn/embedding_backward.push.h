OA_PUSH(ml_nn_embedding_backward)
  OA_FIELD(uint, N)
  OA_FIELD(uint, D)
  OA_FIELD(uint, tiles)
OA_PUSH_END
