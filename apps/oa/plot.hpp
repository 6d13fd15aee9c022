#pragma once
// Line charts written as PNG (libpng): one panel per metric group, one line
// per series, axis ticks labelled with a built-in 5x7 bitmap font.
#include <string>
#include <vector>

namespace oa_cli {

struct Series {
  std::string label;
  std::vector<double> x, y;
};

struct Panel {
  std::string title;
  std::vector<Series> series;
  std::string x_label;  // written under the x axis, e.g. "epoch"
};

// The range an axis shows for `values` (non-finite ones are ignored); always
// lo < hi. A y axis (`pad`) adds 5% of the data's span on each side, and a
// constant series v gets v +- |v| / 10 (0 gets [-1, 1]) before that; but the
// axis never reaches below 0 when the data do not, nor above 1 when the data
// do not, so accuracies and fractions stay within [0, 1]. An x axis is the
// data's span; a single value v gets v +- max(1, |v| / 20). No value gives [0, 1].
struct AxisRange {
  double lo = 0, hi = 1;
};
AxisRange axis_range(const std::vector<double>& values, bool pad);

// Tick positions for an axis over `range`: the multiples within it of the
// smallest step of 1, 2 or 5 times a power of ten that gives at most 5 ticks
// (a step of at least 1 when `integers`: epochs, steps).
std::vector<double> axis_ticks(AxisRange range, bool integers);

// Writes panels side by side into a PNG at `path` (via a temporary file and a
// rename). Throws oa::Error (InvalidArgument) when the file cannot be written.
void write_line_chart(const std::string& path, const std::vector<Panel>& panels);

}  // namespace oa_cli
