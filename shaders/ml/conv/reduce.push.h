OA_PUSH(ml_conv_reduce)
  OA_FIELD(uint, count)
  OA_FIELD(uint, splits)
OA_PUSH_END
