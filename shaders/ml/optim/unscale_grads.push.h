OA_PUSH(ml_optim_unscale_grads)
  OA_FIELD(uint, n)
OA_PUSH_END
