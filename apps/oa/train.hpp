#pragma once
// `oa train fashion-mnist` and `oa eval`, `oa train text` and `oa sample`.
#include <cstdint>
#include <string>

namespace oa_cli {

// The flags every `oa train` task takes (the run protocol of training_run.hpp).
struct RunArgs {
  std::int64_t batch_size = 0;  // per rank; each task sets its default
  double lr = 1e-3;
  std::uint64_t seed = 0;
  std::string device;
  std::string out;         // the run directory (each task has its default)
  bool resume = false;     // continue from the checkpoint in out
  bool overwrite = false;  // replace a checkpoint in out
  double bucket_mb = 25;   // under MPI: MiB of gradients per all-reduce bucket
  bool profile = false;    // GPU time per op of the training steps (step_profile.hpp)
  std::string precision = "fp32";  // fp32, fp16 or bf16 (autocast; fp16 with loss scaling)
};

struct TrainImagesArgs : RunArgs {
  TrainImagesArgs() { batch_size = 128; }
  std::string model = "convnet";
  std::int64_t epochs = 10;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  bool quick = false;
};

int train_images(TrainImagesArgs args);
// Evaluates a checkpoint directory written by train_images on the test split,
// under the autocast of the --precision it records (as the run validated).
int eval_images(const std::string& checkpoint_dir, const std::string& device, const std::string& data_dir);

}  // namespace oa_cli

namespace oa_cli {

struct TrainTextArgs : RunArgs {
  TrainTextArgs() {
    batch_size = 64;
    out = "runs/text";
  }
  std::string input;  // default: Debian's fortunes, concatenated
  std::int64_t context = 128, layers = 4, heads = 4, width = 256;
  std::int64_t steps = 3000, eval_every = 250;
  bool step_graph = false;  // replay a captured step instead of recording each one (one process only: main refuses it under mpirun)
};

int train_text(const TrainTextArgs& args);
// Prints `prompt` and `length` characters drawn from the softmax of the
// logits over `temperature` (0: greedy, the most likely character each time).
int sample_text(const std::string& checkpoint_dir, const std::string& prompt, std::int64_t length, double temperature,
                std::uint64_t seed, const std::string& device);

}  // namespace oa_cli
