OA_PUSH(ml_nn_mse)
  OA_FIELD(uint, n)
  OA_FIELD(float, scale)
OA_PUSH_END
