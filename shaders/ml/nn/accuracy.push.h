OA_PUSH(ml_nn_accuracy)
  OA_FIELD(uint, n)
OA_PUSH_END
