#include "ml/optim/update_items.push.h"
OA_PUSH(ml_optim_adamw_step)
  OA_FIELD(float, beta1)
  OA_FIELD(float, beta2)
  OA_FIELD(float, eps)
  OA_FIELD(float, log_beta1)
  OA_FIELD(float, log_beta2)
  OA_FIELD(float, count)
  OA_FIELD(float, lr)
  OA_FIELD(float, decay_factor)
  OA_PART(ml_optim_update_items, items)
OA_PUSH_END
