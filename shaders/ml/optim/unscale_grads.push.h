#include "ml/optim/update_items.push.h"
OA_PUSH(ml_optim_unscale_grads)
  OA_PART(ml_optim_update_items, items)
OA_PUSH_END
