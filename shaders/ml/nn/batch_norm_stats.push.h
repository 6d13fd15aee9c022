OA_PUSH(ml_nn_batch_norm_stats)
  OA_FIELD(uint, C)
  OA_FIELD(uint, S)
  OA_FIELD(float, inv_m)
  OA_FIELD(float, unbias)
  OA_FIELD(float, eps)
  OA_FIELD(float, momentum)
OA_PUSH_END
