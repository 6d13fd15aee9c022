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
};

// Writes panels side by side into a PNG at `path` (via a temporary file and a
// rename). Throws oa::Error (InvalidArgument) when the file cannot be written.
void write_line_chart(const std::string& path, const std::vector<Panel>& panels);

}  // namespace oa_cli
