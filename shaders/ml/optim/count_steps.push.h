OA_PUSH(ml_optim_count_steps)
  OA_FIELD(uint, n)
  OA_FIELD(uint, stride)
OA_PUSH_END
