// ml/rnn/recurrent_step: B rows; H hidden units (cell modes) or N output
// columns (GEMM mode); K the length of the dot products; element offsets of
// the operands (ml/rnn/recurrent_step.comp names them); beta of GEMM mode.
OA_PUSH(ml_rnn_recurrent_step)
  OA_FIELD(uint, B)
  OA_FIELD(uint, H)
  OA_FIELD(uint, K)
  OA_FIELD(uint, o_a)
  OA_FIELD(uint, o_gx)
  OA_FIELD(uint, o_c_prev)
  OA_FIELD(uint, o_h)
  OA_FIELD(uint, o_c)
  OA_FIELD(uint, o_act)
  OA_FIELD(uint, o_gh)
  OA_FIELD(float, beta)
OA_PUSH_END
