OA_PUSH(ml_attention_softmax_backward)
  OA_FIELD(uint, rows)
  OA_FIELD(uint, cols)
  OA_FIELD(float, scale)
OA_PUSH_END
