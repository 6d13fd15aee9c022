#include "ml/attention/flash_problem.push.h"
#include "ml/attention/flash_block.push.h"
OA_PUSH(ml_attention_flash_forward_scores)
  OA_PART(ml_attention_flash_problem, problem)
  OA_PART(ml_attention_flash_block, block)
OA_PUSH_END
