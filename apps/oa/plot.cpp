#include "plot.hpp"

#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "oa/core/error.hpp"

namespace oa_cli {
namespace {

constexpr int kPanelW = 480, kPanelH = 360, kMargin = 48;

// 5x7 glyphs, one byte per row (low 5 bits, MSB left).
const std::array<std::pair<char, std::array<std::uint8_t, 7>>, 47> kGlyphs = {{
    {'0', {14, 17, 19, 21, 25, 17, 14}}, {'1', {4, 12, 4, 4, 4, 4, 14}},    {'2', {14, 17, 1, 2, 4, 8, 31}},
    {'3', {30, 1, 1, 14, 1, 1, 30}},     {'4', {2, 6, 10, 18, 31, 2, 2}},   {'5', {31, 16, 30, 1, 1, 17, 14}},
    {'6', {6, 8, 16, 30, 17, 17, 14}},   {'7', {31, 1, 2, 4, 8, 8, 8}},     {'8', {14, 17, 17, 14, 17, 17, 14}},
    {'9', {14, 17, 17, 15, 1, 2, 12}},   {'.', {0, 0, 0, 0, 0, 12, 12}},    {'-', {0, 0, 0, 31, 0, 0, 0}},
    {'a', {0, 0, 14, 1, 15, 17, 15}},    {'b', {16, 16, 30, 17, 17, 17, 30}}, {'c', {0, 0, 14, 16, 16, 17, 14}},
    {'d', {1, 1, 15, 17, 17, 17, 15}},   {'e', {0, 0, 14, 17, 31, 16, 14}}, {'f', {6, 9, 8, 28, 8, 8, 8}},
    {'g', {0, 15, 17, 17, 15, 1, 14}},   {'h', {16, 16, 22, 25, 17, 17, 17}}, {'i', {4, 0, 12, 4, 4, 4, 14}},
    {'k', {16, 16, 18, 20, 24, 20, 18}}, {'l', {12, 4, 4, 4, 4, 4, 14}},    {'m', {0, 0, 26, 21, 21, 17, 17}},
    {'n', {0, 0, 22, 25, 17, 17, 17}},   {'o', {0, 0, 14, 17, 17, 17, 14}}, {'p', {0, 0, 30, 17, 30, 16, 16}},
    {'r', {0, 0, 22, 25, 16, 16, 16}},   {'s', {0, 0, 15, 16, 14, 1, 30}},  {'t', {8, 8, 28, 8, 8, 9, 6}},
    {'u', {0, 0, 17, 17, 17, 19, 13}},   {'v', {0, 0, 17, 17, 17, 10, 4}},  {'w', {0, 0, 17, 17, 21, 21, 10}},
    {'x', {0, 0, 17, 10, 4, 10, 17}},    {'y', {0, 0, 17, 17, 15, 1, 14}},  {'z', {0, 0, 31, 2, 4, 8, 31}},
    {' ', {0, 0, 0, 0, 0, 0, 0}},        {'/', {1, 1, 2, 4, 8, 16, 16}},    {'(', {2, 4, 8, 8, 8, 4, 2}},
    {')', {8, 4, 2, 2, 2, 4, 8}},        {'%', {24, 25, 2, 4, 8, 19, 3}},   {':', {0, 12, 12, 0, 12, 12, 0}},
    {'_', {0, 0, 0, 0, 0, 0, 31}},       {'j', {2, 0, 6, 2, 2, 18, 12}},    {'q', {0, 0, 15, 17, 15, 1, 1}},
    {'E', {31, 16, 16, 30, 16, 16, 31}}, {'+', {0, 4, 4, 31, 4, 4, 0}},
}};

const std::array<std::array<std::uint8_t, 3>, 6> kColors = {{{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}, {148, 103, 189}, {140, 86, 75}}};

struct Canvas {
  int w, h;
  std::vector<std::uint8_t> rgb;
  Canvas(int width, int height) : w(width), h(height), rgb(static_cast<std::size_t>(width) * height * 3, 255) {}
  void put(int x, int y, std::array<std::uint8_t, 3> c) {
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    auto* p = &rgb[(static_cast<std::size_t>(y) * w + x) * 3];
    p[0] = c[0], p[1] = c[1], p[2] = c[2];
  }
  void line(double x0, double y0, double x1, double y1, std::array<std::uint8_t, 3> c, int thick = 1) {
    const int steps = static_cast<int>(std::max(std::abs(x1 - x0), std::abs(y1 - y0))) + 1;
    for (int i = 0; i <= steps; ++i) {
      const double t = static_cast<double>(i) / steps;
      const int x = static_cast<int>(std::lround(x0 + (x1 - x0) * t)), y = static_cast<int>(std::lround(y0 + (y1 - y0) * t));
      for (int dx = 0; dx < thick; ++dx)
        for (int dy = 0; dy < thick; ++dy) put(x + dx, y + dy, c);
    }
  }
  void text(int x, int y, const std::string& s, std::array<std::uint8_t, 3> c = {40, 40, 40}) {
    for (char ch : s) {
      auto it = std::find_if(kGlyphs.begin(), kGlyphs.end(), [&](auto& g) { return g.first == ch; });
      if (it == kGlyphs.end()) it = std::find_if(kGlyphs.begin(), kGlyphs.end(), [&](auto& g) { return g.first == std::tolower(ch); });
      if (it != kGlyphs.end())
        for (int r = 0; r < 7; ++r)
          for (int b = 0; b < 5; ++b)
            if (it->second[r] & (16 >> b)) put(x + b, y + r, c);
      x += 6;
    }
  }
};

std::string tick(double v) {
  char buf[32];
  if (v == std::floor(v) && std::abs(v) < 1e7) std::snprintf(buf, sizeof buf, "%.0f", v);  // steps, epochs
  else if (std::abs(v) >= 1000 || (std::abs(v) < 0.01 && v != 0)) std::snprintf(buf, sizeof buf, "%.1e", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

void draw_panel(Canvas& cv, int ox, const Panel& p) {
  std::vector<double> xs, ys;
  for (auto& s : p.series)
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) xs.push_back(s.x[i]), ys.push_back(s.y[i]);
  const AxisRange xr = axis_range(xs, false), yr = axis_range(ys, true);
  const double xmin = xr.lo, xmax = xr.hi, ymin = yr.lo, ymax = yr.hi;
  const int left = ox + kMargin + 12, right = ox + kPanelW - 12, top = 28, bottom = kPanelH - kMargin;
  auto X = [&](double v) { return left + (v - xmin) / (xmax - xmin) * (right - left); };
  auto Y = [&](double v) { return bottom - (v - ymin) / (ymax - ymin) * (bottom - top); };
  cv.text(ox + (kPanelW - static_cast<int>(p.title.size()) * 6) / 2, 8, p.title);
  const bool whole_x = std::all_of(xs.begin(), xs.end(), [](double v) { return v == std::floor(v); });
  for (double yv : axis_ticks(yr, false)) {
    cv.line(left, Y(yv), right, Y(yv), {225, 225, 225});
    cv.text(ox + 4, static_cast<int>(Y(yv)) - 3, tick(yv));
  }
  for (double xv : axis_ticks(xr, whole_x)) {
    const std::string xt = tick(xv);
    const int width = static_cast<int>(xt.size()) * 6;  // centred under its tick, kept inside the panel
    cv.text(std::min(static_cast<int>(X(xv)) - width / 2, ox + kPanelW - width), bottom + 6, xt);
  }
  cv.text(right - static_cast<int>(p.x_label.size()) * 6, bottom + 17, p.x_label);
  cv.line(left, top, left, bottom, {0, 0, 0});
  cv.line(left, bottom, right, bottom, {0, 0, 0});
  for (std::size_t si = 0; si < p.series.size(); ++si) {
    const auto& s = p.series[si];
    const auto c = kColors[si % kColors.size()];
    for (std::size_t i = 1; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.y[i - 1]) && std::isfinite(s.y[i])) cv.line(X(s.x[i - 1]), Y(s.y[i - 1]), X(s.x[i]), Y(s.y[i]), c, 2);
    if (s.x.size() == 1 && std::isfinite(s.y[0]))  // a lone point: a 7x7 square
      for (int d = -3; d <= 3; ++d) cv.line(X(s.x[0]) - 3, Y(s.y[0]) + d, X(s.x[0]) + 3, Y(s.y[0]) + d, c);
    const int ly = bottom + 22 + static_cast<int>(si % 2) * 10, lx = left + static_cast<int>(si / 2) * 150;
    cv.line(lx, ly + 3, lx + 14, ly + 3, c, 2);
    cv.text(lx + 18, ly, s.label);
  }
}

}  // namespace

std::vector<double> axis_ticks(AxisRange range, bool integers) {
  // The smallest step of 1, 2 or 5 times a power of ten that gives at most 5 ticks.
  double step = std::pow(10.0, std::floor(std::log10((range.hi - range.lo) / 5)));
  auto count = [&](double s) { return std::floor(range.hi / s + 1e-9) - std::ceil(range.lo / s - 1e-9) + 1; };
  for (double base = step;; base *= 10) {
    double chosen = 0;
    for (double m : {1.0, 2.0, 5.0})
      if ((!integers || m * base >= 1) && count(m * base) <= 5) {
        chosen = m * base;
        break;
      }
    if (chosen > 0) {
      step = chosen;
      break;
    }
  }
  std::vector<double> ticks;
  for (double k = std::ceil(range.lo / step - 1e-9); k * step <= range.hi + step * 1e-9; ++k)
    ticks.push_back(k == 0 ? 0.0 : k * step);  // no "-0"
  return ticks;
}

AxisRange axis_range(const std::vector<double>& values, bool pad) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (lo > hi) return {};
  const double data_lo = lo, data_hi = hi;
  if (lo == hi) {
    const double half = pad ? (lo == 0 ? 1.0 : std::abs(lo) / 10) : std::max(1.0, std::abs(lo) / 20);
    lo -= half, hi += half;
  } else if (pad) {
    const double margin = (hi - lo) * 0.05;
    lo -= margin, hi += margin;
  }
  if (pad && data_lo >= 0) lo = std::max(lo, 0.0);
  if (pad && data_hi <= 1) hi = std::min(hi, 1.0);
  return {lo, hi};
}

void write_line_chart(const std::string& path, const std::vector<Panel>& panels) {
  Canvas cv(kPanelW * static_cast<int>(std::max<std::size_t>(panels.size(), 1)), kPanelH + 16);
  for (std::size_t i = 0; i < panels.size(); ++i) draw_panel(cv, static_cast<int>(i) * kPanelW, panels[i]);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) oa::fail(oa::ErrorKind::InvalidArgument, "cannot write plot {}", tmp);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    std::remove(tmp.c_str());
    oa::fail(oa::ErrorKind::InvalidArgument, "libpng failed writing {}", path);
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(cv.w), static_cast<png_uint_32>(cv.h), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < cv.h; ++y) png_write_row(png, &cv.rgb[static_cast<std::size_t>(y) * cv.w * 3]);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  const bool ok = std::fclose(f) == 0;
  std::error_code ec;
  if (ok) std::filesystem::rename(tmp, path, ec);
  if (!ok || ec) {
    std::remove(tmp.c_str());
    oa::fail(oa::ErrorKind::InvalidArgument, "cannot write plot {}", path);
  }
}

}  // namespace oa_cli
