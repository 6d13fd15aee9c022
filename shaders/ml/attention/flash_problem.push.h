// The members every flash kernel's push constants start with: the problem's
// extents, scale, causality and mask layout (src/ml/attention/flash.cpp).
#ifndef OA_ML_ATTENTION_FLASH_PROBLEM_PUSH_H
#define OA_ML_ATTENTION_FLASH_PROBLEM_PUSH_H
#define OA_PART_FIELDS_ml_attention_flash_problem \
  OA_FIELD(uint, heads)                            \
  OA_FIELD(uint, sq)                               \
  OA_FIELD(uint, sk)                               \
  OA_FIELD(uint, dh)                               \
  OA_FIELD(uint, dv)                               \
  OA_FIELD(float, scale)                           \
  OA_FIELD(uint, causal)                           \
  OA_FIELD(int, diag)                              \
  OA_FIELD(uint, mask_heads)                       \
  OA_FIELD(uint, mask_sb)                          \
  OA_FIELD(uint, mask_sh)                          \
  OA_FIELD(uint, mask_sq)
OA_PUSH_PART(ml_attention_flash_problem)
#endif
