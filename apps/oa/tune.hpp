#pragma once
// oa tune: times each tuning point's variants (oa/runtime/tuning.hpp) over
// layer shapes of real models (bench/model_shapes.hpp) on one device and
// writes the table of the fastest, which engines on that device then load.
#include <optional>
#include <string>
#include <vector>

namespace oa_cli {

struct TuneArgs {
  std::optional<std::string> device;  // index or name substring; unset: the default device
  std::string out;                    // the table's file; empty: the user table of the device
  bool quick = false;                 // two tiny shapes per point, one repetition (a check that it runs)
  std::vector<std::string> points;    // the tuning points to time (known ones: main checks); empty: all
  int repetitions = 5;                // timed runs per variant and shape (the median counts)
  double max_seconds = 0;             // stop timing new shapes after this long (0: no limit)
  // A measured winner replaces the variant in effect only when it is at
  // least this much faster (a ratio of times, above 1).
  double min_gain = 1.05;
};

// Runs the sweep, prints per shape the variant in effect and the fastest with
// their times, and writes the table. Returns the exit code.
int tune(const TuneArgs& args);

}  // namespace oa_cli
