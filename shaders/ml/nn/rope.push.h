OA_PUSH(ml_nn_rope)
  OA_FIELD(uint, pairs)
  OA_FIELD(uint, S)
  OA_FIELD(uint, half_d)
  OA_FIELD(uint, offset)
  OA_FIELD(float, log2_base)
OA_PUSH_END
