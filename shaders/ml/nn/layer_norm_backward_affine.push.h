OA_PUSH(ml_nn_layer_norm_backward_affine)
  OA_FIELD(uint, R)
  OA_FIELD(uint, L)
  OA_FIELD(uint, D)
  OA_FIELD(uint, G)
  OA_FIELD(uint, slab_rows)
  OA_FIELD(uint, slab0)
OA_PUSH_END
