#include "ml/optim/update_items.push.h"
// With amsgrad a dispatch holds up to this many items: the running maxima of
// items 0..5 take the bindings of items 6 and 7 (adamw_step.comp).
#define OA_ADAM_AMSGRAD_ITEMS 6
OA_PUSH(ml_optim_adamw_step)
  OA_FIELD(float, beta1)
  OA_FIELD(float, beta2)
  OA_FIELD(float, eps)
  OA_FIELD(float, log_beta1)
  OA_FIELD(float, log_beta2)
  OA_FIELD(float, count)
  OA_FIELD(float, lr)
  OA_FIELD(float, decay)
  OA_PART(ml_optim_update_items, items)
OA_PUSH_END
