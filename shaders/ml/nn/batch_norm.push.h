OA_PUSH(ml_nn_batch_norm)
  OA_FIELD(uint, n)
  OA_FIELD(uint, C)
  OA_FIELD(uint, S)
  OA_FIELD(float, inv_m)
OA_PUSH_END
