OA_PUSH(ml_nn_embedding)
  OA_FIELD(uint, n)
  OA_FIELD(uint, D)
  OA_FIELD(int, V)
  OA_FIELD(uint, check_id)
OA_PUSH_END
