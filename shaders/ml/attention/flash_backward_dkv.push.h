#include "ml/attention/flash_problem.push.h"
OA_PUSH(ml_attention_flash_backward_dkv)
  OA_PART(ml_attention_flash_problem, problem)
  OA_FIELD(uint, query_split)
  OA_FIELD(uint, part_k)
  OA_FIELD(uint, part_v)
OA_PUSH_END
