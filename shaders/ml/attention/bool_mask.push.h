OA_PUSH(ml_attention_bool_mask)
  OA_FIELD(uint, n)
OA_PUSH_END
