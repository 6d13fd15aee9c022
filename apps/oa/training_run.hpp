#pragma once
// The run protocol every `oa train` task shares: the run directory (its lock,
// the refusal to start afresh over a checkpoint, --overwrite, --resume with
// the same flags), the checkpoint and its metadata, learning-rate cycles for
// a run extended by --resume, metrics.jsonl, divergence, Ctrl-C and the plot.
// A task (train_images.cpp, train_text.cpp) describes its flags in a RunSpec
// and writes only its data, model and training loop.
//
// Checkpoint metadata: model.safetensors holds one JSON string under the key
// "oa.run":
//   task         the dataset of `oa train` ("fashion-mnist", "text")
//   model        {key: value} of the flags that define the model
//   training     {key: value} of the flags a --resume run must repeat (--precision
//                among them), and the length flag (--epochs, --steps)
//   data_size    the size of the training data (images, bytes)
//   step         the steps of the schedule done (length x steps per unit in all)
//   optimizer_steps  the optimizer's steps (the same as step unless a --resume
//                changed the steps per unit)
//   total_steps  the steps of the run (length x steps per unit)
//   lr_cycles    the steps where a warmup-cosine cycle starts (see cycle_lr)
//   state        the task's own state at `step` (an object)
//
// Under MPI (`mpirun -np N oa train ...`) rank 0 alone is the writer: it locks
// and checks the run directory, writes metrics, checkpoints and the plot, and
// prints; the other ranks touch no file but the checkpoint they resume from
// (read after rank 0 has checked it) and print nothing.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oa/dist/communicator.hpp"
#include "oa/dist/data_parallel.hpp"
#include "oa/matrix/autocast.hpp"
#include "oa/ml/amp.hpp"
#include "oa/ml/nn/module.hpp"
#include "oa/ml/optim.hpp"
#include "plot.hpp"
#include "run_dir.hpp"

namespace oa_cli {

// A flag as a checkpoint records it: `key` in the metadata, `flag` in messages.
struct RunFlag {
  std::string key, flag;
  nlohmann::json value;
  // A training flag's value in a checkpoint that does not record it (one
  // written before the flag existed); null: such a checkpoint is refused.
  nlohmann::json unrecorded = nullptr;
};

// "--context 8 --layers 1" for `flags`: a true boolean is its flag alone, a
// false one is left out.
std::string describe_flags(const std::vector<RunFlag>& flags);

// DataParallel's work summed over the steps since the last report (an epoch,
// the steps between validations), for rank 0 to print.
class AllReduceTally {
 public:
  // After each all_reduce_gradients().
  void add(const oa::dist::DataParallelStats& step);
  // "all-reduce per step: <KiB> in <n> bucket(s), <mean> of them started
  // during backward; <ms> not hidden behind backward (rank 0)" over the steps
  // added since the last report, which it then forgets; empty when none were.
  std::string report();

 private:
  oa::dist::DataParallelStats last_;
  double exposed_ = 0, started_early_ = 0;
  std::int64_t steps_ = 0;
};

// What a task tells TrainingRun about itself.
struct RunSpec {
  std::string task;  // "fashion-mnist", "text": named in messages as `oa train <task>`
  std::filesystem::path out;
  bool resume = false;     // continue from the checkpoint in `out`
  bool overwrite = false;  // start afresh over a checkpoint in `out`
  std::vector<RunFlag> model;     // the flags that define the model
  std::vector<RunFlag> training;  // the flags a --resume run must repeat (--lr, --seed, ...)
  RunFlag length;                 // --epochs or --steps: a --resume run may raise it to extend the run
  // The unit of `length`, also the integer key of a metrics row ("epoch",
  // "step"), and the numbers each row holds.
  std::string unit;
  std::vector<const char*> metrics;
  double lr = 0, lr_floor = 0;  // each warmup-cosine cycle runs from `lr` down to `lr_floor`
  // The plot of the metrics rows, written to plot.png.
  std::function<std::vector<Panel>(const std::vector<nlohmann::json>&)> plot;
};

// The "oa.run" metadata of `file` written by `oa train <task>`, its "model"
// holding a value of the JSON type of each of `model` (a task's flags, to
// type-check the checkpoint). Throws InvalidArgument naming `file` when there
// is no checkpoint, when it holds metadata of another task, of an older oa
// (the keys "oa.train", "oa.text") or none.
nlohmann::json read_run_metadata(const std::filesystem::path& file, const std::string& task, const std::vector<RunFlag>& model);

// --precision of `oa train`: fp32, fp16 (F16 autocast around the forward
// pass and the loss, with dynamic loss scaling by oa::ml::amp::GradScaler) or
// bf16 (BF16 autocast, no scaler). A task lists flag() among its training
// flags, so that the checkpoint records it and --resume refuses another one
// (a checkpoint written before the flag existed is fp32), and keeps the
// scaler's state in its checkpoint state under "grad_scaler".
class Precision {
 public:
  // The scaler's state lives on `engine`. Throws InvalidArgument naming
  // --precision for a name other than fp32, fp16 and bf16.
  Precision(const std::string& name, const oa::Engine& engine);
  // The training flag (the same check).
  static RunFlag flag(const std::string& name);
  // The guard to hold around the forward pass and the loss (disabled for fp32).
  oa::AutocastGuard autocast() const;
  // F16 or BF16; nullopt for fp32.
  std::optional<oa::DType> dtype() const { return dtype_; }
  // Enabled for fp16 only: backward(scaler().scale(loss)), scaler().step(optimizer), scaler().update().
  oa::ml::amp::GradScaler& scaler() { return scaler_; }
  // `state` with the scaler's state added (fp16; a host read), and its
  // restoration from the state resumed from `file` (InvalidArgument naming
  // `file` for a malformed one).
  nlohmann::json with_scaler(nlohmann::json state) const;
  void restore_scaler(const nlohmann::json& state, const std::filesystem::path& file);

 private:
  std::optional<oa::DType> dtype_;
  oa::ml::amp::GradScaler scaler_;
};

class TrainingRun {
 public:
  // Creates and locks spec.out (held until the run ends), completes a
  // checkpoint commit cut short, and refuses a fresh run over a checkpoint.
  // For --resume, reads the checkpoint's metadata and refuses another model,
  // other training flags, a smaller length and a finished run. Throws
  // oa::Error (InvalidArgument; FailedPrecondition while another run holds the
  // lock) naming the flag or file; nothing is written before start().
  explicit TrainingRun(RunSpec spec);
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  bool resuming() const { return spec_.resume; }
  // The training data holds `size` units (`what`: e.g. "bytes of --input
  // x.txt"), recorded in each checkpoint; --resume refuses another size.
  void set_data_size(std::uint64_t size, const std::string& what);

  // Sets up the schedule for `steps_per_unit` optimizer steps per unit of the
  // length flag and prints it. --resume: loads `model` and `optimizer` from
  // the checkpoint (refusing an optimizer state of another step) and keeps the
  // metrics rows up to it; --overwrite: removes the old checkpoint. Rewrites
  // metrics.jsonl and installs the Ctrl-C handler. `model` and `optimizer`
  // must outlive the run.
  // A checkpoint of another number of steps per unit (another global batch:
  // other --batch-size or number of ranks) resumes at the same unit: its
  // schedule's cycle starts (unit boundaries) are mapped unit for unit, and a
  // checkpoint saved within a unit continues at `steps_into_unit(state)` steps
  // into it (the task's reading of its saved state; without it such a
  // checkpoint is refused). `check_state(state, first_step)` (rank 0, --resume)
  // refuses a saved task state that disagrees with the step resumed at, before
  // anything is loaded or rewritten.
  void start(oa::ml::nn::Module& model, oa::ml::optim::Optimizer& optimizer, std::int64_t steps_per_unit,
             const std::function<std::int64_t(const nlohmann::json&)>& steps_into_unit = {},
             const std::function<void(const nlohmann::json&, std::int64_t)>& check_state = {});

  // Schedule steps done at start() (0 for a fresh run) and of the whole run.
  std::int64_t first_step() const { return first_step_; }
  std::int64_t total_steps() const { return total_steps_; }
  // The learning rate of step `step` (0-based, over the whole run).
  float lr(std::int64_t step) const;
  // The metrics rows so far (with those kept from the run resumed).
  const std::vector<nlohmann::json>& history() const { return history_; }
  // The task's state saved with the checkpoint resumed (an empty object for a fresh run).
  const nlohmann::json& resumed_state() const { return resumed_state_; }
  // The position after `step` steps: "epoch 2 step 3" (the 1-based unit and
  // the steps done in it), or "step 5" when the unit is "step".
  std::string where(std::int64_t step) const;

  // Whether a loop should read the loss after its step `step` (0-based) of a
  // phase (an epoch, the run) that ends at step `end`: every 25 steps (a read
  // waits for the device) and at the phase's last step.
  static bool reads_loss(std::int64_t step, std::int64_t end) { return (step + 1) % 25 == 0 || step + 1 == end; }
  // Ctrl-C or SIGTERM came. The loops poll it every step: the engine queues
  // only a few batches ahead of the device, so a run stops promptly.
  static bool interrupted();
  // interrupted() on any rank of the job (a collective under MPI: every rank
  // polls it at the same points, so that all stop at the same step).
  bool stop_requested() const;
  // Under MPI, the DataParallel of `parameters` and `buffers`: rank 0's
  // weights and buffers everywhere, gradients averaged over the ranks in
  // buckets of `bucket_mb` MiB (buffers are averaged before evaluations and
  // checkpoints). Null in a single process.
  std::unique_ptr<oa::dist::DataParallel> data_parallel(std::vector<oa::ml::Parameter> parameters, oa::ml::NamedMatrices buffers,
                                                        double bucket_mb) const;
  // Rank 0 (the only rank of a single process): the rank that writes and prints.
  bool writer() const { return world_.rank() == 0; }
  oa::dist::Communicator& world() const { return world_; }

  // Appends `row` to metrics.jsonl and to the plotted history.
  void record(const nlohmann::json& row);
  // Saves the checkpoint after `step` steps with the task's `state`. Under
  // MPI, first checks on every rank that all hold the same parameters, bit
  // for bit (Internal error otherwise, and nothing is saved).
  void save(std::int64_t step, const nlohmann::json& state = nlohmann::json::object());
  // Throws FailedPrecondition unless `value` (`what`: "loss", ...) after
  // `step` steps is finite, so that a diverged run saves nothing; the message
  // names the last checkpoint of the run, if any.
  void require_finite(double value, const char* what, std::int64_t step) const;
  // After Ctrl-C at `step` steps: saves the checkpoint with `state`, the plot
  // when there are metrics, prints how to resume; returns the exit code 128 + the signal.
  int stop(std::int64_t step, const nlohmann::json& state = nlohmann::json::object());
  // At the end: writes the plot and prints "done: <summary>" with the files; returns 0.
  int finish(const std::string& summary);

 private:
  std::filesystem::path file(const char* name) const { return spec_.out / name; }
  nlohmann::json metadata(std::int64_t step, const nlohmann::json& state) const;
  void write_plot() const;
  void require_identical_replicas(std::int64_t step) const;

  RunSpec spec_;
  oa::dist::Communicator& world_ = oa::dist::Communicator::world();
  std::filesystem::path created_;  // by prepare_run_dir
  std::optional<RunDirLock> lock_;
  std::optional<RunDirCleanup> cleanup_;
  nlohmann::json meta_;  // of the checkpoint resumed
  std::uint64_t data_size_ = 0;
  std::int64_t steps_per_unit_ = 1, first_step_ = 0, total_steps_ = 0;
  std::vector<std::int64_t> cycles_{0};
  nlohmann::json resumed_state_ = nlohmann::json::object();
  std::vector<nlohmann::json> history_;
  std::ofstream metrics_;
  std::int64_t saved_step_ = -1;  // of the run's latest checkpoint (-1: none)
  oa::ml::nn::Module* model_ = nullptr;
  oa::ml::optim::Optimizer* optimizer_ = nullptr;
};

}  // namespace oa_cli
