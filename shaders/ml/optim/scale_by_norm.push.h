OA_PUSH(ml_optim_scale_by_norm)
  OA_FIELD(uint, n)
  OA_FIELD(float, max_norm)
OA_PUSH_END
