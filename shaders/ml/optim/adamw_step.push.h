#include "ml/optim/update_items.push.h"
// Items a dispatch holds: 7 (not OA_OPTIM_ITEMS), so that its 4 buffers an
// item and the 3 step buffers, 31 bindings, can be pushed (maxPushDescriptors
// is 32 on NVIDIA and lavapipe) rather than written into a descriptor set
// per dispatch. With amsgrad up to 5: the running maxima of items 0..4 take
// the bindings of items 5 and 6 (adamw_step.comp).
#define OA_ADAM_ITEMS 7
#define OA_ADAM_AMSGRAD_ITEMS 5
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
