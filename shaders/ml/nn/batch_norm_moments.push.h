OA_PUSH(ml_nn_batch_norm_moments)
  OA_FIELD(uint, C)
  OA_FIELD(uint, S)
  OA_FIELD(uint, M)
  OA_FIELD(float, inv_m)
OA_PUSH_END
