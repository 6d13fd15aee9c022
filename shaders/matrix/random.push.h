OA_PUSH(matrix_random)
  OA_FIELD(uint, n)
  OA_FIELD(uint, base)
  OA_FIELD(uint, seed_lo)
  OA_FIELD(uint, seed_hi)
  OA_FIELD(float, a)
  OA_FIELD(float, b)
OA_PUSH_END
