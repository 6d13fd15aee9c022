OA_PUSH(ml_optim_adamw_step)
  OA_FIELD(uint, n)
  OA_FIELD(float, beta1)
  OA_FIELD(float, beta2)
  OA_FIELD(float, eps)
  OA_FIELD(uint, slot)
  OA_FIELD(float, log_beta1)
  OA_FIELD(float, log_beta2)
OA_PUSH_END
