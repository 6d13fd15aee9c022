#pragma once
// Constants shared by the f64 references (one definition, so that references
// can be included together).
#include <limits>

namespace oa::reference {

inline constexpr double kNegInf = -std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace oa::reference
