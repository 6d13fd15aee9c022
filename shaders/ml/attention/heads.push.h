OA_PUSH(ml_attention_heads)
  OA_FIELD(uint, n)
  OA_FIELD(uint, seq)
  OA_FIELD(uint, heads)
  OA_FIELD(uint, dh)
OA_PUSH_END
