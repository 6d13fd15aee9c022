#pragma once
// The run directory `oa train` writes its checkpoints, metrics and plot to:
// the pieces TrainingRun (training_run.hpp) is made of.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "oa/core/error.hpp"
#include "oa/ml/checkpoint.hpp"
#include "oa/ml/optim.hpp"
#include "oa/runtime/engine.hpp"

namespace oa_cli {

// Creates `dir` (with its parents), so that an unusable --out fails before any
// training; returns the outermost directory it created (empty when `dir`
// existed). Throws oa::Error (InvalidArgument) naming the directory and the
// reason.
std::filesystem::path prepare_run_dir(const std::filesystem::path& dir);

// An exclusive lock (flock) on the run directory `dir`, held while the object
// lives, so that two runs never write one directory; once it holds the lock it
// checks that a file can be created in `dir`. Throws oa::Error
// (FailedPrecondition) at once, naming `dir`, when another process holds it,
// and InvalidArgument naming `dir` and the reason when `dir` is unusable.
class RunDirLock {
 public:
  explicit RunDirLock(const std::filesystem::path& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_;
};

// A checkpoint in a run directory is one unit: model.safetensors (the weights
// and the run's metadata) and optimizer.safetensors. save_checkpoint writes
// both under temporary names (<name>.new), then creates the marker
// checkpoint.commit, renames both over the old pair and removes the marker;
// if a write fails, the temporaries are removed and the old pair is left as it
// was (the error names the file). A process that dies during the renames
// leaves the marker, and recover_checkpoint (run under the RunDirLock before a
// checkpoint is read) finishes them; without the marker it removes the
// temporaries of a write that never completed.
void save_checkpoint(const std::filesystem::path& dir, const oa::ml::NamedMatrices& model, const oa::ml::Metadata& metadata,
                     const oa::ml::optim::Optimizer& optimizer);
void recover_checkpoint(const std::filesystem::path& dir);
// Whether `dir` holds a checkpoint (either file of one).
bool has_checkpoint(const std::filesystem::path& dir);
// Throws FailedPrecondition naming `file` and the first tensor with a NaN or
// an infinity (a diverged run's weights), which cannot be `used` ("evaluated",
// "resumed").
void require_finite_weights(const std::filesystem::path& file, const oa::ml::NamedMatrices& tensors, std::string_view used);
// Removes the checkpoint and plot of `dir` (for --overwrite, once the new run
// is set up).
void remove_checkpoint(const std::filesystem::path& dir);

// The learning rate of `step` under a warmup-cosine schedule restarted at each
// of `starts` (ascending, the first 0): the cycle from starts[i] to the next
// start (the last one to `total`) warms up linearly over its first 5% of steps
// to `peak`, then follows a cosine down to `floor` at its end. One start is
// the plain schedule of a run of `total` steps; extending a run by --epochs or
// --steps adds a cycle for the added steps.
double cycle_lr(const std::vector<std::int64_t>& starts, std::int64_t total, std::int64_t step, double peak, double floor);
// The cycle starts of a resumed run: those in the checkpoint metadata `meta`
// ("lr_cycles"; [0] when absent), plus `recorded_total` (the steps the run was
// started for) when `total` extends it. Throws InvalidArgument naming `file`
// when they are not ascending from 0 and below `total`.
std::vector<std::int64_t> lr_cycles(const nlohmann::json& meta, std::int64_t recorded_total, std::int64_t total,
                                    const std::filesystem::path& file);

// `message` without a leading library function name ("oa::...: ").
std::string_view without_function(std::string_view message);
// Runs `body`; an oa::Error it throws is thrown again with the library's
// function name ("oa::ml::data::read_idx: ") replaced by `what` (the flag and
// value the user passed, e.g. "--data dir").
template <typename Body>
decltype(auto) about(const std::string& what, Body&& body) {
  try {
    return body();
  } catch (const oa::Error& e) {
    throw oa::Error(e.kind(), what + ": " + std::string(without_function(e.message())));
  }
}

// The engine of the --device flag (empty: OA_DEVICE, then the best device, or
// under MPI the local rank-th of the best type);
// its errors name the flag.
oa::Engine make_engine(const std::string& device);

// Leaves no trace of a run that fails before it writes anything: destroyed
// while an exception propagates, it removes an empty metrics.jsonl from `dir`
// that was not there at construction, and then the empty directories up to
// `created` (prepare_run_dir's result).
class RunDirCleanup {
 public:
  RunDirCleanup(std::filesystem::path dir, std::filesystem::path created);
  ~RunDirCleanup();
  RunDirCleanup(const RunDirCleanup&) = delete;
  RunDirCleanup& operator=(const RunDirCleanup&) = delete;

 private:
  std::filesystem::path dir_;
  std::filesystem::path created_;
  bool had_metrics_;  // metrics.jsonl existed at construction
  int exceptions_;    // std::uncaught_exceptions() at construction
};

// The rows of a metrics.jsonl file whose integer `key` ("epoch", "step") is at
// most `last` and whose `numbers` are all numbers; a missing file has none,
// and a line cut short by an interrupted write is dropped.
std::vector<nlohmann::json> read_metrics(const std::filesystem::path& file, const char* key, std::int64_t last,
                                         const std::vector<const char*>& numbers);
// Replaces `file` with `rows` (a temporary file, then a rename) and opens it
// for appending. Throws oa::Error (InvalidArgument) when it cannot be written.
std::ofstream rewrite_metrics(const std::filesystem::path& file, const std::vector<nlohmann::json>& rows);
// Appends `row` as one line to `out` (opened by rewrite_metrics on `file`) and
// flushes; throws oa::Error (InvalidArgument) naming `file` when that fails.
void append_metrics(std::ofstream& out, const std::filesystem::path& file, const nlohmann::json& row);

}  // namespace oa_cli

