OA_PUSH(ml_optim_adamw_step)
  OA_FIELD(uint, n)
  OA_FIELD(float, beta1)
  OA_FIELD(float, beta2)
  OA_FIELD(float, eps)
  OA_FIELD(uint, slot)
OA_PUSH_END
