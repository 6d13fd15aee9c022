#include "ml/attention/flash_problem.push.h"
OA_PUSH(ml_attention_flash_backward_scores)
  OA_PART(ml_attention_flash_problem, problem)
  OA_FIELD(uint, head0)
  OA_FIELD(uint, query0)
  OA_FIELD(uint, queries)
  OA_FIELD(uint, cols)
  OA_FIELD(uint, rows)
  OA_FIELD(uint, has_lse_grad)
OA_PUSH_END
