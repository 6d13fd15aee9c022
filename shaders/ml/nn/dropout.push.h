OA_PUSH(ml_nn_dropout)
  OA_FIELD(uint, n)
  OA_FIELD(uint, base)
  OA_FIELD(uint, seed_lo)
  OA_FIELD(uint, seed_hi)
  OA_FIELD(float, p)
  OA_FIELD(float, scale)
OA_PUSH_END
