#include "ml/optim/update_items.push.h"
OA_PUSH(ml_optim_sgd_step)
  OA_FIELD(float, momentum)
  OA_FIELD(float, dampening)
  OA_FIELD(float, weight_decay)
  OA_FIELD(float, count)
  OA_FIELD(float, lr)
  OA_PART(ml_optim_update_items, items)
OA_PUSH_END
