// lstm_cell, gru_cell and their backward kernels: n elements of the [B, H]
// state; oK is the element offset of the operand at binding K (0 for the
// single-step ops; the layer ops address step t of [T, ...] buffers).
OA_PUSH(ml_rnn_cell)
  OA_FIELD(uint, n)
  OA_FIELD(uint, H)
  OA_FIELD(uint, o0)
  OA_FIELD(uint, o1)
  OA_FIELD(uint, o2)
  OA_FIELD(uint, o3)
  OA_FIELD(uint, o4)
  OA_FIELD(uint, o5)
  OA_FIELD(uint, o6)
OA_PUSH_END
