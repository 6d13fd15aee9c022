OA_PUSH(matrix_one_hot)
  OA_FIELD(uint, n)
  OA_FIELD(uint, base)
  OA_FIELD(uint, classes)
  OA_FIELD(uint, check_id)
OA_PUSH_END
