// The op codes of matrix/unary.comp, matrix/unary_backward.comp (OA_UNARY_CODE),
// matrix/binary.comp, matrix/binary_backward.comp (OA_BINARY_CODE) and
// matrix/compare.comp (OA_COMPARE_CODE): one list that C++
// (src/matrix/elementwise.cpp, as enums) and GLSL (as constants) both expand;
// the includer defines the three macros. A new op appends its code here and
// its case in the shaders.
OA_UNARY_CODE(Neg, 0u)
OA_UNARY_CODE(Exp, 1u)
OA_UNARY_CODE(Log, 2u)
OA_UNARY_CODE(Sqrt, 3u)
OA_UNARY_CODE(Relu, 4u)
OA_UNARY_CODE(Gelu, 5u)
OA_UNARY_CODE(Tanh, 6u)
OA_UNARY_CODE(Sigmoid, 7u)
OA_UNARY_CODE(Clamp, 8u)
OA_UNARY_CODE(Affine, 9u)
OA_UNARY_CODE(Abs, 10u)
OA_UNARY_CODE(Square, 11u)
OA_UNARY_CODE(Rsqrt, 12u)
OA_UNARY_CODE(Reciprocal, 13u)
OA_UNARY_CODE(Silu, 14u)
OA_BINARY_CODE(Add, 0u)
OA_BINARY_CODE(Sub, 1u)
OA_BINARY_CODE(Mul, 2u)
OA_BINARY_CODE(Div, 3u)
OA_BINARY_CODE(Max, 4u)
OA_BINARY_CODE(Min, 5u)
OA_COMPARE_CODE(Eq, 0u)
OA_COMPARE_CODE(Ne, 1u)
OA_COMPARE_CODE(Lt, 2u)
OA_COMPARE_CODE(Le, 3u)
OA_COMPARE_CODE(Gt, 4u)
OA_COMPARE_CODE(Ge, 5u)
