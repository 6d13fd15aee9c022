OA_PUSH(ml_nn_cross_entropy_backward)
  OA_FIELD(uint, n)
  OA_FIELD(uint, C)
  OA_FIELD(int, ignore_index)
  OA_FIELD(float, smoothing)
  OA_FIELD(uint, check_id)
OA_PUSH_END
