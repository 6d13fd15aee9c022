#pragma once
// Tuning tables: which variant an op uses for a problem, chosen by
// measurement per device (as cuDNN's benchmark mode and Triton's autotuner
// choose kernels), never by a device-type branch in an op.
//
// An op asks a named decision point ("gemm.tile", "attention.forward_lowering",
// ...) for one of that point's variants, passing the problem's key values
// (its shape: M, N, K, head dim, ...). A table maps each point to an ordered
// list of rules; a rule is a bucket (an inclusive range per key, unbounded
// where left out) and the variant for problems inside it; the first matching
// rule wins. The tables of an engine are layered: a user table (the file named
// by OA_TUNING, else ~/.cache/oa/tuning/<device>.json when it exists, as
// `oa tune` writes it), then the shipped tables that match the device (files
// under tuning/ of the source tree, compiled in: the NVIDIA H200's, lavapipe's
// and other CPU drivers', and the generic table for any device), most specific
// first; a point without a matching rule in one layer asks the next. The
// generic table ends every point with a rule for all problems.
//
// Table format (JSON):
//   {"oa_tuning": 1,
//    "device": {"name": "H200"},           // optional: case-insensitive substrings of
//                                          //   the device's name / driver_name, or its
//                                          //   type ("discrete", "cpu", ...)
//    "points": {"gemm.tile": [{"when": {"k": [null, 1024]}, "use": "busy"},
//                             {"use": "busy-square"}], ...},
//    "measurements": ...}                  // optional, free-form (oa tune's timings)
// A key's range is [lo, hi] (null: unbounded) or one integer.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oa {

struct DeviceInfo;
class Engine;

// One decision an op makes per problem: its name, the problem keys its rules
// may test (in the order the op passes their values) and its variants.
struct TuningPoint {
  std::string_view name;
  std::vector<std::string_view> keys;
  std::vector<std::string_view> variants;
  std::string_view description;
};

// Every decision point of oa's ops.
const std::vector<TuningPoint>& tuning_points();
// The point named `name`; Error(InvalidArgument) naming the known points otherwise.
const TuningPoint& tuning_point(std::string_view name);

struct TuningRule {
  // Per key of the point (in its order): the inclusive bounds, unbounded when unset.
  std::vector<std::pair<std::optional<std::int64_t>, std::optional<std::int64_t>>> when;
  std::string variant;
  bool matches(std::span<const std::int64_t> keys) const;
};

// One parsed table.
class TuningTable {
 public:
  TuningTable() = default;
  // Parses a table; `source` (a file name) is named in errors. Throws
  // Error(InvalidArgument) naming the source and the entry for malformed
  // JSON, a wrong format version, an unknown point, key or variant, or a
  // range that is not [lo, hi] with lo <= hi.
  static TuningTable parse(std::string_view json, std::string source);
  // Reads and parses a file; Error(InvalidArgument) naming it when it cannot be read.
  static TuningTable load(const std::filesystem::path& file);

  const std::string& source() const { return source_; }
  // Whether the table's "device" filter accepts `device` (a table without one accepts all).
  bool matches(const DeviceInfo& device) const;
  // Whether the table has no device filter.
  bool any_device() const { return name_filter_.empty() && driver_filter_.empty() && type_filter_.empty(); }
  // The rules for `point` (empty when the table has none).
  const std::vector<TuningRule>& rules(std::string_view point) const;
  // Appends a rule for `point` (checked as parse checks it).
  void add_rule(std::string_view point, TuningRule rule);
  // Sets the free-form "measurements" entry (JSON text) that to_json writes.
  void set_measurements(std::string json) { measurements_ = std::move(json); }
  // The table as JSON that parse reads back; `device_name` fills the device filter when not empty.
  std::string to_json(std::string_view device_name = {}) const;

 private:
  std::string source_;
  std::string name_filter_, driver_filter_, type_filter_;
  std::vector<std::pair<std::string, std::vector<TuningRule>>> points_;
  std::string measurements_;
};

// The shipped tables (tuning/*.json, compiled in), the generic one last.
const std::vector<TuningTable>& shipped_tuning_tables();

// The layered tables an engine consults.
class Tuning {
 public:
  // `layers` first to last; every lookup finally falls back to the generic shipped table.
  explicit Tuning(std::vector<TuningTable> layers = {});
  // The user table (OA_TUNING, else ~/.cache/oa/tuning/<device>.json when it
  // exists), then the shipped tables matching `device`. Throws the parse errors
  // of a bad user table.
  static Tuning for_device(const DeviceInfo& device);
  // The variant of `point` for a problem with `keys` (as many as the point has).
  // Error(Internal) for an unknown point or a wrong key count.
  std::string_view choose(std::string_view point, std::initializer_list<std::int64_t> keys) const;
  std::string_view choose(std::string_view point, std::span<const std::int64_t> keys) const;
  const std::vector<TuningTable>& layers() const { return layers_; }

 private:
  std::vector<TuningTable> layers_;
};

// The tables `engine`'s ops consult: loaded for its device when it starts
// (Tuning::for_device). set_tuning replaces them for ops recorded afterwards
// (`oa tune` and tests force variants this way).
std::shared_ptr<const Tuning> tuning_of(const Engine& engine);
void set_tuning(const Engine& engine, Tuning tuning);

// The user table's file name for `device`: its name in lower case with runs of
// other characters than letters and digits as one '-', plus ".json".
std::string tuning_file_name(const DeviceInfo& device);
// oa's cache folder ($XDG_CACHE_HOME/oa, else ~/.cache/oa; empty without
// either variable): compiled pipelines, and user tables under tuning/.
std::filesystem::path cache_folder();

}  // namespace oa
