#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace oa_cli {
namespace {
std::string clock(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60) : fmt::format("{:02}:{:02}", s / 60, s % 60);
}
}  // namespace

Progress::Progress(std::string label, std::int64_t total, std::string unit)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), tty_(::isatty(STDOUT_FILENO) != 0),
      start_(std::chrono::steady_clock::now()), last_print_(start_) {}

void Progress::update(std::int64_t done, std::int64_t items, double loss) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  const bool last = done >= total_;
  if (tty_ ? (since < 0.1 && !last) : (since < 10.0 && !last)) return;
  last_print_ = now;
  const double rate = elapsed > 0 ? static_cast<double>(items) / elapsed : 0.0;
  const double eta = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total_ - done) : 0.0;
  if (tty_) {
    constexpr int kWidth = 28;
    const int fill = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
    fmt::print("\r{} [{}{}] {}/{} loss {:.4f} | {:.0f} {}/s | {} < {}   ", label_, std::string(fill, '#'),
               std::string(kWidth - fill, '.'), done, total_, loss, rate, unit_, clock(elapsed), clock(eta));
  } else {
    fmt::print("{} step {}/{} loss {:.4f} {:.0f} {}/s elapsed {} eta {}\n", label_, done, total_, loss, rate, unit_, clock(elapsed),
               clock(eta));
  }
  std::fflush(stdout);
}

void Progress::finish() {
  if (tty_) fmt::print("\n");
  std::fflush(stdout);
}

}  // namespace oa_cli
