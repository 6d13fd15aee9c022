OA_PUSH(ml_optim_sgd_step)
  OA_FIELD(uint, n)
  OA_FIELD(float, momentum)
  OA_FIELD(float, dampening)
  OA_FIELD(float, weight_decay)
  OA_FIELD(uint, slot)
  OA_FIELD(float, count)
  OA_FIELD(float, lr)
OA_PUSH_END
