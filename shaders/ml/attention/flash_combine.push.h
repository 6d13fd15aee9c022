OA_PUSH(ml_attention_flash_combine)
  OA_FIELD(uint, rows)
  OA_FIELD(uint, sq)
  OA_FIELD(uint, dv)
  OA_FIELD(uint, heads)
  OA_FIELD(uint, ranges)
  OA_FIELD(float, u)
  OA_FIELD(float, lse_scale)
OA_PUSH_END
