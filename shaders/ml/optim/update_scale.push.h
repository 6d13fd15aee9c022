OA_PUSH(ml_optim_update_scale)
  OA_FIELD(float, growth)
  OA_FIELD(float, backoff)
  OA_FIELD(int, growth_interval)
OA_PUSH_END
