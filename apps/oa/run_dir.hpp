#pragma once
// The run directory `oa train` writes its checkpoints, metrics and plot to.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <vector>

#include <nlohmann/json.hpp>

namespace oa_cli {

// Creates `dir` (with its parents) and checks that a file can be created in
// it, so that an unusable --out fails before any training; returns the
// outermost directory it created (empty when `dir` existed). Throws oa::Error
// (InvalidArgument) naming the directory and the reason.
std::filesystem::path prepare_run_dir(const std::filesystem::path& dir);

// Leaves no trace of a run that fails before it writes anything: destroyed
// while an exception propagates, it removes an empty metrics.jsonl from `dir`
// and then the empty directories up to `created` (prepare_run_dir's result).
class RunDirCleanup {
 public:
  RunDirCleanup(std::filesystem::path dir, std::filesystem::path created);
  ~RunDirCleanup();
  RunDirCleanup(const RunDirCleanup&) = delete;
  RunDirCleanup& operator=(const RunDirCleanup&) = delete;

 private:
  std::filesystem::path dir_;
  std::filesystem::path created_;
  int exceptions_;  // std::uncaught_exceptions() at construction
};

// The rows of a metrics.jsonl file whose integer `key` ("epoch", "step") is at
// most `last` and whose `numbers` are all numbers; a missing file has none,
// and a line cut short by an interrupted write is dropped.
std::vector<nlohmann::json> read_metrics(const std::filesystem::path& file, const char* key, std::int64_t last,
                                         std::initializer_list<const char*> numbers);
// Replaces `file` with `rows` (a temporary file, then a rename) and opens it
// for appending. Throws oa::Error (InvalidArgument) when it cannot be written.
std::ofstream rewrite_metrics(const std::filesystem::path& file, const std::vector<nlohmann::json>& rows);
// Appends `row` as one line to `out` (opened by rewrite_metrics on `file`) and
// flushes; throws oa::Error (InvalidArgument) naming `file` when that fails.
void append_metrics(std::ofstream& out, const std::filesystem::path& file, const nlohmann::json& row);

}  // namespace oa_cli
