OA_PUSH(ml_conv_bias_grad)
  OA_FIELD(uint, channels)
  OA_FIELD(uint, positions)
  OA_FIELD(uint, batch)
  OA_FIELD(uint, per_split)
OA_PUSH_END
