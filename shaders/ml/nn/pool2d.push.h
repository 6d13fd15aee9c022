// pool2d.comp and pool2d_backward.comp.
OA_PUSH(ml_nn_pool2d)
  OA_FIELD(uint, n)
  OA_FIELD(uint, H)
  OA_FIELD(uint, W)
  OA_FIELD(uint, OH)
  OA_FIELD(uint, OW)
  OA_FIELD(int, KH)
  OA_FIELD(int, KW)
  OA_FIELD(int, SH)
  OA_FIELD(int, SW)
  OA_FIELD(int, PH)
  OA_FIELD(int, PW)
OA_PUSH_END
