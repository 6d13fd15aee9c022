#pragma once
// Training progress: a redrawn bar with loss, throughput and ETA on a
// terminal; plain periodic lines when stdout is not a terminal.
#include <chrono>
#include <cstdint>
#include <string>

namespace oa_cli {

class Progress {
 public:
  // `total` steps of `unit` items each (e.g. images per batch) in a phase called `label`.
  Progress(std::string label, std::int64_t total, std::string unit);
  // Reports step `done` (1-based) with `items` processed so far and the latest loss.
  void update(std::int64_t done, std::int64_t items, double loss);
  // Ends the phase (newline on a terminal).
  void finish();

 private:
  std::string label_, unit_;
  std::int64_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_print_;
};

}  // namespace oa_cli
