OA_PUSH(ml_nn_layer_norm)
  OA_FIELD(uint, R)
  OA_FIELD(uint, D)
  OA_FIELD(float, eps)
  OA_FIELD(uint, G)
  OA_FIELD(uint, S)
  OA_FIELD(uint, row0)
OA_PUSH_END
