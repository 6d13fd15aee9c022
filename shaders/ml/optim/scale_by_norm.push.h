#include "ml/optim/update_items.push.h"
OA_PUSH(ml_optim_scale_by_norm)
  OA_FIELD(float, max_norm)
  OA_PART(ml_optim_update_items, items)
OA_PUSH_END
