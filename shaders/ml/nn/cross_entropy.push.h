OA_PUSH(ml_nn_cross_entropy)
  OA_FIELD(uint, R)
  OA_FIELD(uint, L)
  OA_FIELD(int, ignore_index)
  OA_FIELD(float, smoothing)
  OA_FIELD(uint, check_id)
OA_PUSH_END
