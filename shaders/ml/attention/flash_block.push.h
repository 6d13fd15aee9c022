// The members after the problem's that both steps between the GEMMs of the
// flash lowerings through GEMMs take (flash_forward_scores.comp,
// flash_backward_scores.comp): one block of `queries` query rows (query0 ..)
// of each batch-head head0 .. against its first `cols` keys, `rows` rows in all.
#ifndef OA_ML_ATTENTION_FLASH_BLOCK_PUSH_H
#define OA_ML_ATTENTION_FLASH_BLOCK_PUSH_H
#define OA_PART_FIELDS_ml_attention_flash_block \
  OA_FIELD(uint, head0)                          \
  OA_FIELD(uint, query0)                         \
  OA_FIELD(uint, queries)                        \
  OA_FIELD(uint, cols)                           \
  OA_FIELD(uint, rows)
OA_PUSH_PART(ml_attention_flash_block)
#endif
