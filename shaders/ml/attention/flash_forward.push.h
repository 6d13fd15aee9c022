// flash_forward.comp and flash_decode.comp.
#include "ml/attention/flash_problem.push.h"
OA_PUSH(ml_attention_flash_forward)
  OA_PART(ml_attention_flash_problem, problem)
  OA_FIELD(uint, key_split)
  OA_FIELD(uint, part_rows)
OA_PUSH_END
