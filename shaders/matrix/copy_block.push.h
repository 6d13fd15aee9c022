OA_PUSH(matrix_copy_block)
  OA_FIELD(uint, n)
  OA_FIELD(uint, cols)
  OA_FIELD(uint, src_stride)
  OA_FIELD(uint, src_offset)
  OA_FIELD(uint, dst_stride)
  OA_FIELD(uint, dst_offset)
OA_PUSH_END
