OA_PUSH(ml_optim_sum_squares)
  OA_FIELD(uvec4, count_lo)
  OA_FIELD(uvec4, count_hi)
OA_PUSH_END
