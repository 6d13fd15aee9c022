OA_PUSH(ml_nn_log_softmax)
  OA_FIELD(uint, R)
  OA_FIELD(uint, L)
OA_PUSH_END
