#ifndef OA_ELEMENTWISE_CODES_GLSL
#define OA_ELEMENTWISE_CODES_GLSL
// The elementwise op codes as GLSL constants (case labels of the OP switch).
#define OA_UNARY_CODE(name, value) const uint name = value;
#define OA_BINARY_CODE(name, value) const uint name = value;
#define OA_COMPARE_CODE(name, value) const uint name = value;
#include "common/elementwise_codes.h"
#undef OA_UNARY_CODE
#undef OA_BINARY_CODE
#undef OA_COMPARE_CODE
#endif
