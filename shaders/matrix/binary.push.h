// binary.comp and binary_backward.comp; base is the first element's index, channels and
// inner the broadcast geometry (src/matrix/elementwise.cpp).
OA_PUSH(matrix_binary)
  OA_FIELD(uint, n)
  OA_FIELD(uint, base)
  OA_FIELD(uint, channels)
  OA_FIELD(uint, inner)
OA_PUSH_END
