#pragma once
// Constants shared by the f64 references (one definition, so that references
// can be included together).
#include <algorithm>
#include <cmath>
#include <limits>

namespace oa::reference {

inline constexpr double kNegInf = -std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// max(a, b) with NaN propagating, as torch.amax and torch.maximum (std::max
// keeps its first argument when the second is NaN).
inline double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }

}  // namespace oa::reference
