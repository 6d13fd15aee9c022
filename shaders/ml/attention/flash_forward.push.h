// flash_forward.comp, flash_decode.comp and flash_forward_coopmat.comp.
#include "ml/attention/flash_problem.push.h"
OA_PUSH(ml_attention_flash_forward)
  OA_PART(ml_attention_flash_problem, problem)
  OA_FIELD(uint, key_split)
  OA_FIELD(uint, part_rows)
OA_PUSH_END
