OA_PUSH(ml_nn_layer_norm_backward)
  OA_FIELD(uint, R)
  OA_FIELD(uint, D)
OA_PUSH_END
