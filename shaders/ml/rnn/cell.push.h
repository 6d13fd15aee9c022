// lstm_cell, gru_cell and their backward kernels: n elements of the [B, H] state.
OA_PUSH(ml_rnn_cell)
  OA_FIELD(uint, n)
  OA_FIELD(uint, H)
OA_PUSH_END
