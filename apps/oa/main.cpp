// The oa command line.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "oa/oa.hpp"
#include "oa/runtime/tuning.hpp"
#include "run_dir.hpp"
#include "step_profile.hpp"
#include "train.hpp"
#include "tune.hpp"

namespace {

void print_device(const oa::DeviceInfo& d, bool chosen) {
  fmt::print("{} [{}] {} ({}), driver {} {}, Vulkan {}\n", chosen ? "*" : " ", d.index, d.name, oa::to_string(d.type),
             d.driver_name, d.driver_info, d.api_version);
}

int info() {
  auto devices = oa::Engine::devices();
  oa::Engine engine = oa::Engine::default_engine();
  const auto& d = engine.device();
  fmt::print("oa {} — Vulkan devices ({}; * = chosen, override with OA_DEVICE=<index or name>):\n", OA_VERSION, devices.size());
  for (auto& dev : devices) print_device(dev, dev.index == d.index);
  fmt::print("\nengine device: {}\n", d.name);
  fmt::print("  subgroup size                {}\n", d.subgroup_size);
  fmt::print("  shared memory per workgroup  {} bytes\n", d.max_shared_memory_bytes);
  fmt::print("  max workgroup count          {} x {} x {}\n", d.max_workgroup_count[0], d.max_workgroup_count[1],
             d.max_workgroup_count[2]);
  fmt::print("  max workgroup size           {} x {} x {} ({} invocations)\n", d.max_workgroup_size[0], d.max_workgroup_size[1],
             d.max_workgroup_size[2], d.max_workgroup_invocations);
  fmt::print("  max push constants           {} bytes\n", d.max_push_constants_bytes);
  fmt::print("  max storage buffer range     {} bytes\n", d.max_storage_buffer_range);
  fmt::print("  max memory allocation        {} bytes\n", d.max_memory_allocation_bytes);
  fmt::print("  device-local memory          {:.1f} GiB\n", static_cast<double>(d.device_local_bytes) / (1ull << 30));
  fmt::print("  timestamps                   {}{}\n", d.timestamps ? "yes" : "no",
             d.timestamps ? fmt::format(" ({} ns per tick)", d.timestamp_period_ns) : "");
  fmt::print("  unified memory               {}\n", d.unified_memory ? "yes" : "no");
  std::string shapes;
  for (const auto& s : d.cooperative_matrix)
    shapes += fmt::format("{}{}*{}+{}->{} {}x{}x{}", shapes.empty() ? "" : ", ", oa::to_string(s.a), oa::to_string(s.b),
                          oa::to_string(s.c), oa::to_string(s.result), s.m, s.n, s.k);
  fmt::print("  cooperative matrices         {}\n", shapes.empty() ? "none" : shapes);
  std::string workgroup;
  for (const auto& w : d.workgroup_cooperative_matrix)
    workgroup += fmt::format("{}{}*{}+{}->{} granularity {}x{}x{} on {} invocations", workgroup.empty() ? "" : ", ", oa::to_string(w.a),
                             oa::to_string(w.b), oa::to_string(w.c), oa::to_string(w.result), w.m_granularity, w.n_granularity,
                             w.k_granularity, w.invocations);
  fmt::print("  workgroup-scope matrices     {}\n",
             workgroup.empty() ? "none" : fmt::format("{} (up to {})", workgroup, d.workgroup_cooperative_matrix_max_dimension));
  const auto& world = oa::dist::Communicator::world();
  fmt::print("  MPI                          {}\n",
             std::getenv("OMPI_COMM_WORLD_SIZE")
                 ? fmt::format("rank {} of {} (local rank {})", world.rank(), world.size(), world.local_rank())
                 : std::string("not launched by mpirun (a world of 1)"));
  return 0;
}

// Errors are one line: "oa: <what is wrong>", without the name of the library
// function that found it, written at once (so that the lines of MPI ranks
// failing together do not interleave).
void print_error(std::string message) {
  std::string line = "oa: " + std::string(oa_cli::without_function(message)) + "\n";
  std::replace(line.begin(), line.end() - 1, '\n', ' ');
  std::fwrite(line.data(), 1, line.size(), stderr);
}

// Under MPI a rank that fails ends the whole job, so that no peer waits for
// it; a single process returns `code`.
int stop_job(int code) {
  try {
    if (oa::dist::Communicator::world().size() > 1) oa::dist::Communicator::world().abort(code);
  } catch (const oa::Error&) {  // the world itself failed to start (a bad OA_DIST_TIMEOUT): nothing to end
  }
  return code;
}

// A finite number (never NaN or an infinity) from `low` to `high`, or above
// `low` when `above`: every float flag's check.
CLI::Validator finite_number(double low, double high, bool above = false) {
  return CLI::Validator(
      [=](std::string& v) {
        double x = 0;
        try {
          x = std::stod(v);
        } catch (...) {
          return std::string("must be a number");
        }
        if (std::isfinite(x) && (above ? x > low : x >= low) && x <= high) return std::string();
        return above ? fmt::format("must be a finite number above {}", low)
                     : fmt::format("must be a finite number from {} to {}", low, high);
      },
      above ? fmt::format("NUMBER > {}", low) : fmt::format("NUMBER in [{}, {}]", low, high));
}

// A finite number above 0.
CLI::Validator positive_number() { return finite_number(0, std::numeric_limits<double>::max(), true); }

// One of the tuning points (oa::tuning_points()).
CLI::Validator tuning_point_name() {
  return CLI::Validator(
      [](std::string& v) {
        std::string names;
        for (const oa::TuningPoint& p : oa::tuning_points()) {
          if (p.name == v) return std::string();
          names += (names.empty() ? "" : ", ") + std::string(p.name);
        }
        return fmt::format("unknown tuning point '{}'; the points are: {}", v, names);
      },
      "POINT");
}

// A seed is a decimal integer from 0 to 2^64 - 1 (no sign, no wrap-around).
CLI::Validator seed_number() {
  return CLI::Validator(
      [](std::string& v) {
        std::uint64_t x = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        return !v.empty() && v[0] != '-' && ec == std::errc() && end == v.data() + v.size()
                   ? std::string()
                   : fmt::format("must be an integer from 0 to {}", std::numeric_limits<std::uint64_t>::max());
      },
      "SEED");
}

// The help of the flags where the tasks say it differently.
struct RunFlagHelp {
  const char *batch, *lr, *seed, *device, *out, *resume;  // batch: what a batch holds, "images"
};

// Without --batch-size, a task's default batch is the global batch of a step:
// under mpirun each rank takes its share, rounded up, so that N ranks train as
// one process does (the same steps an epoch, the same learning rate).
void split_default_batch(const CLI::App& task, oa_cli::RunArgs& args) {
  if (task.count("--batch-size") > 0) return;
  const std::int64_t ranks = oa::dist::Communicator::world().size();
  args.batch_size = (args.batch_size + ranks - 1) / ranks;
}

// The flags of oa_cli::RunArgs on the subcommand of one `oa train` task.
void add_run_flags(CLI::App& task, oa_cli::RunArgs& args, const RunFlagHelp& help) {
  task.add_option("--batch-size", args.batch_size,
                  fmt::format("{} per step; under mpirun: per rank, so a step sees --batch-size x ranks, and without the "
                              "flag each rank takes its share of the default, rounded up",
                              help.batch))
      ->check(CLI::Range(1, 1 << 20));
  task.add_option("--lr", args.lr, help.lr)->check(positive_number());
  task.add_option("--seed", args.seed, help.seed)->check(seed_number());
  task.add_option("--device", args.device, help.device);
  task.add_option("--out", args.out, help.out);
  task.add_option("--bucket-mb", args.bucket_mb,
                  "under mpirun: MiB of gradients per all-reduce bucket (smaller buckets start during backward sooner)")
      ->check(positive_number());
  task.add_option("--precision", args.precision,
                  "arithmetic: fp32, or mixed precision with F32 master weights: fp16 (autocast to F16 around the forward pass and "
                  "the loss, dynamic loss scaling) or bf16 (autocast to BF16); recorded in the checkpoint, and --resume refuses "
                  "another")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  auto* resume = task.add_flag("--resume", args.resume, help.resume);
  task.add_flag("--overwrite", args.overwrite, "start afresh over a checkpoint in --out, replacing it")->excludes(resume);
  task.add_flag("--profile", args.profile,
                fmt::format("time each op of the training steps on the GPU (leaving out the first {} steps and the evaluations); at "
                            "the end print the GPU ms per step of each op and write them to profile.json in --out (rank 0 under "
                            "mpirun)",
                            oa_cli::StepProfile::kWarmupSteps));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"oa: a GPU-first machine-learning matrix engine on Vulkan"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // --help shows each default
  auto* info_cmd = app.add_subcommand("info", "List Vulkan devices and the chosen engine's limits");

  auto* train_cmd = app.add_subcommand("train", "Train a model");
  train_cmd->require_subcommand(1);
  oa_cli::TrainImagesArgs images;
  auto* fmnist = train_cmd->add_subcommand("fashion-mnist", "Classify Fashion-MNIST (Debian's dataset-fashion-mnist)");
  fmnist->add_option("--model", images.model, "convnet or vit (a small vision transformer)")
      ->check(CLI::IsMember({"convnet", "vit"}));
  fmnist->add_option("--epochs", images.epochs,
                     "training epochs (with --resume, a larger value extends the run: its new steps get a warmup-cosine cycle of "
                     "their own, 5% warmup, then cosine to 0)")
      ->check(CLI::Range(1, 100000));
  add_run_flags(*fmnist, images,
                {.batch = "images",
                 .lr = "AdamW learning rate",
                 .seed = "seed for initialisation and shuffling",
                 .device = "device index or name substring (default: OA_DEVICE, then the best)",
                 .out = "output directory, locked while a run trains in it (default runs/fashion-mnist-<model>, with --quick "
                        "runs/fashion-mnist-<model>-quick)",
                 .resume = "continue the run whose checkpoint is in --out (same flags, but a larger --epochs extends it; another "
                           "--batch-size or number of MPI ranks continues from the next image of the epoch's shuffled order not "
                           "trained on, sharded over the new ranks, at the learning rate of that point of the epoch)"});
  fmnist->add_option("--data", images.data_dir, "directory holding the Fashion-MNIST IDX files");
  fmnist->add_flag("--quick", images.quick,
                   "a small network, for one epoch unless --epochs is given (on a 2-core CPU: convnet about a minute an epoch, vit about ten)");

  oa_cli::TrainTextArgs text;
  auto* text_cmd = train_cmd->add_subcommand("text", "Train a character-level transformer (default: Debian's fortunes)");
  text_cmd->add_option("--input", text.input, "a text file (default: /usr/share/games/fortunes, concatenated)");
  text_cmd->add_option("--context", text.context, "tokens per window")->check(CLI::Range(1, 65536));
  text_cmd->add_option("--layers", text.layers, "transformer blocks")->check(CLI::Range(1, 256));
  text_cmd->add_option("--heads", text.heads, "attention heads")->check(CLI::Range(1, 256));
  text_cmd->add_option("--width", text.width, "model width")->check(CLI::Range(1, 65536));
  text_cmd->add_option("--steps", text.steps,
                       "optimizer steps (with --resume, a larger value extends the run: its new steps get a warmup-cosine cycle of "
                       "their own, 5% warmup, then cosine to --lr / 10)")
      ->check(CLI::Range(1, 100000000));
  text_cmd->add_option("--eval-every", text.eval_every, "steps between validations")->check(CLI::Range(1, 100000000));
  add_run_flags(*text_cmd, text,
                {.batch = "windows",
                 .lr = "peak AdamW learning rate (warmup, then cosine)",
                 .seed = "seed",
                 .device = "device index or name substring",
                 .out = "output directory, locked while a run trains in it",
                 .resume = "continue the run whose checkpoint is in --out (same flags but --eval-every; a larger --steps extends it; "
                           "another --batch-size or number of MPI ranks draws that many windows a step)"});
  auto* step_graph = text_cmd->add_flag("--step-graph", text.step_graph,
                     "capture the second step as a StepGraph and replay it after (the same result; pays where recording, "
                     "not the GPU, bounds a step; one process only, not under mpirun)");
  text_cmd->get_option("--profile")->excludes(step_graph);

  std::string sample_dir, sample_prompt, sample_device;
  std::int64_t sample_length = 400;
  double sample_temperature = 0.8;
  std::uint64_t sample_seed = 0;
  auto* sample_cmd = app.add_subcommand("sample", "Print text sampled from a checkpoint of oa train text");
  sample_cmd->add_option("--checkpoint", sample_dir, "the run directory")->required();
  sample_cmd->add_option("--prompt", sample_prompt, "text to continue");
  sample_cmd->add_option("--length", sample_length, "characters to generate")->check(CLI::Range(1, 1000000));
  sample_cmd->add_option("--temperature", sample_temperature, "softmax temperature; 0 picks the most likely character (greedy)")
      ->check(finite_number(0, 100));
  sample_cmd->add_option("--seed", sample_seed, "sampling seed")->check(seed_number());
  sample_cmd->add_option("--device", sample_device, "device index or name substring");

  std::string eval_dir, eval_device, eval_data = images.data_dir;
  auto* eval_cmd = app.add_subcommand("eval", "Evaluate a checkpoint written by oa train fashion-mnist");
  eval_cmd->add_option("--checkpoint", eval_dir, "the run directory")->required();
  eval_cmd->add_option("--device", eval_device, "device index or name substring");
  eval_cmd->add_option("--data", eval_data, "directory holding the Fashion-MNIST IDX files");
  oa_cli::TuneArgs tune_args;
  std::string tune_device;
  auto* tune_cmd = app.add_subcommand(
      "tune",
      "Time each tuning point's variants (GEMM tiles, K splits, convolution kernels, attention lowerings, ...) over layer shapes of real models on "
      "one device and write the table of the fastest, which later engines on that device load (the variant in effect stays "
      "unless another is --min-gain faster)");
  tune_cmd->add_option("--device", tune_device, "device index or name substring (default: the engine's default device)");
  tune_cmd->add_option("--out", tune_args.out, "the table to write (default: ~/.cache/oa/tuning/<device>.json, the user table)");
  tune_cmd->add_flag("--quick", tune_args.quick, "three tiny shapes per point (the first two and the last), one repetition: checks that every variant runs; "
                     "writes a table only to --out");
  tune_cmd->add_option("--points", tune_args.points, "the tuning points to time, comma-separated (default: all)")
      ->delimiter(',')
      ->check(tuning_point_name());
  tune_cmd->add_option("--repetitions", tune_args.repetitions, "timed runs per variant and shape (the median counts)")
      ->check(CLI::Range(1, 1000));
  tune_cmd->add_option("--max-seconds", tune_args.max_seconds, "stop timing new shapes after this long (0: no limit)")
      ->check(finite_number(0, 1e9));
  tune_cmd->add_option("--min-gain", tune_args.min_gain, "how much faster (a ratio of times) a variant must be to replace the one in effect")
      ->check(finite_number(1, 100));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help
    // No subcommand, or an unknown one: name those that exist.
    for (CLI::App* parent : {train_cmd, &app}) {
      if (!*parent || !parent->get_subcommands().empty()) continue;
      const bool top = parent == &app;
      std::string names;
      for (const auto* c : parent->get_subcommands({})) names += (names.empty() ? "" : ", ") + c->get_name();
      const auto given = parent->remaining();
      print_error(given.empty() || given.front().starts_with("-")
                      ? fmt::format("{}, one of: {} (see {} --help)", top ? "a command is needed" : "train needs a dataset", names,
                                    top ? "oa" : "oa train")
                      : fmt::format("unknown {} '{}'; the {} are: {} (see {} --help)", top ? "command" : "dataset", given.front(),
                                    top ? "commands" : "datasets", names, top ? "oa" : "oa train"));
      return 2;
    }
    print_error(fmt::format("{} (see --help)", e.what()));
    return 2;
  }
  // Flag values that only make sense together.
  if (*text_cmd && text.width % text.heads != 0) {
    print_error(fmt::format("--width {} is not divisible by --heads {} (see --help)", text.width, text.heads));
    return 2;
  }
  try {
    if (*info_cmd) return info();
    if (*fmnist) {
      if (images.quick && fmnist->count("--epochs") == 0) images.epochs = 1;  // the quick run: one epoch by default
      split_default_batch(*fmnist, images);
      return oa_cli::train_images(images);
    }
    if (*text_cmd) {
      // Every rank refuses alike before any work, so each ends cleanly (rank 0 says why).
      if (text.step_graph && oa::dist::Communicator::world().size() > 1) {
        if (oa::dist::Communicator::world().rank() == 0)
          print_error("--step-graph trains in one process only (a captured step cannot hold the all-reduces of gradients); run it "
                      "without mpirun or without --step-graph");
        return 2;
      }
      split_default_batch(*text_cmd, text);
      return oa_cli::train_text(text);
    }
    if (*sample_cmd)
      return oa_cli::sample_text(sample_dir, sample_prompt, sample_length, sample_temperature, sample_seed, sample_device);
    if (*eval_cmd) return oa_cli::eval_images(eval_dir, eval_device, eval_data);
    if (*tune_cmd) {
      if (!tune_device.empty()) tune_args.device = tune_device;
      return oa_cli::tune(tune_args);
    }
  } catch (const oa::Error& e) {
    print_error(std::string(e.message()));
    return stop_job(1);
  } catch (const std::exception& e) {
    print_error(e.what());
    return stop_job(1);
  }
  return 0;
}
