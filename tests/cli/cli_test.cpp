// The oa command line on bad input: a missing dataset or input
// file, a corrupt IDX header, an unreadable or mismatched checkpoint, a bad
// flag value, an unwritable output. Each run must exit nonzero with exactly
// one line on stderr that says what is wrong, fail before any training, and
// leave nothing behind in its working directory.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_support.hpp"
#include "models.hpp"
#include "oa/oa.hpp"

namespace {

namespace fs = std::filesystem;
using namespace oa::test::cli;
using oa::test::write_file;

TEST(Cli, MissingDatasetOrInputFile) {
  CliDir d;
  const auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--data", "absent-dir", "--out", "run"}), {"absent-dir"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"eval", "--checkpoint", "run"}), {"run"}));
  EXPECT_TRUE(fails_cleanly(d.oa(std::vector<std::string>{"train", "text", "--input", "absent.txt", "--out", "run"} + kTinyText),
                            {"absent.txt", "cannot open"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "run"}), {"no checkpoint", "run"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(Cli, TextTooShortForTheContext) {
  CliDir d;
  write_file(d / "short.txt", std::vector<std::uint8_t>(100, 'a'));
  const auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "text", "--input", "short.txt", "--context", "64", "--out", "run"}), {"short.txt", "--context"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(Cli, CorruptIdxHeader) {
  CliDir d;
  write_fashion_mnist(d / "data");
  // Bad magic: the element-type byte says 0x0d (f32).
  auto bad = idx({2, 28, 28});
  bad[2] = 0x0d;
  write_idx_gz(d / "data" / "train-images-idx3-ubyte.gz", bad);
  auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--data", "data", "--out", "run"}),
                            {"train-images-idx3-ubyte.gz", "element type"}));
  // A header cut short: rank 3 but one extent.
  write_idx_gz(d / "data" / "train-images-idx3-ubyte.gz", {0, 0, 0x08, 3, 0, 0, 0, 2});
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--data", "data", "--out", "run"}),
                            {"train-images-idx3-ubyte.gz", "truncated header"}));
  // Not gzip, not IDX: text in a .gz file.
  write_fashion_mnist(d / "data2");
  write_file(d / "data2" / "t10k-labels-idx1-ubyte.gz", {'h', 'e', 'l', 'l', 'o', '\n', 'x', 'y'});
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--data", "data2", "--out", "run"}), {"t10k-labels-idx1-ubyte.gz", "magic"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(Cli, UnreadableCheckpoint) {
  CliDir d;
  fs::create_directories(d / "run");
  std::vector<std::uint8_t> garbage(300);
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<std::uint8_t>(i * 37 + 11);
  write_file(d / "run" / "model.safetensors", garbage);
  const auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"eval", "--checkpoint", "run"}), {"model.safetensors"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "run"}), {"model.safetensors"}));
  // A valid header with a truncated payload.
  oa::ml::save_safetensors(d / "run" / "model.safetensors", {{"w", oa::Matrix::ones({64})}},
                           run_metadata({{"task", "text"}, {"model", kTinyTextModel}}));
  fs::resize_file(d / "run" / "model.safetensors", fs::file_size(d / "run" / "model.safetensors") - 10);
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "run"}), {"model.safetensors", "truncated"}));
  EXPECT_EQ(d.listing().size(), before.size());
}

TEST(Cli, CheckpointThatDoesNotMatch) {
  CliDir d;
  const oa::Engine engine = oa::Engine::default_engine();
  oa::ml::Generator generator(0);
  fs::create_directories(d / "text");
  fs::create_directories(d / "images");
  // A text checkpoint whose metadata says width 32 but whose tensors are width 16.
  auto text_model = oa_cli::make_text_model({8, 1, 2, 16}, generator, engine);
  oa::ml::save_safetensors(d / "text" / "model.safetensors", text_model->named_tensors(),
                           run_metadata({{"task", "text"}, {"model", {{"context", 8}, {"layers", 1}, {"heads", 2}, {"width", 32}}}}));
  // The quick convnet's weights under metadata of the full one.
  auto image_model = oa_cli::make_image_model({"convnet", true}, generator, engine);
  oa::ml::save_safetensors(d / "images" / "model.safetensors", image_model->named_tensors(),
                           run_metadata({{"task", "fashion-mnist"}, {"model", {{"model", "convnet"}, {"quick", false}}}}));
  write_fashion_mnist(d / "data");
  const auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "text"}), {"model.safetensors", "mismatches"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"eval", "--checkpoint", "images", "--data", "data"}), {"model.safetensors"}));
  // Each command refuses the other's checkpoints.
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "images"}), {"not written by oa train text"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"eval", "--checkpoint", "text", "--data", "data"}), {"not written by oa train"}));
  // --resume from a checkpoint whose tensors are not the model's, or of another model.
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--resume", "--out", "images", "--data", "data"}), {"model.safetensors"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--resume", "--out", "images", "--quick", "--data", "data"}),
                            {"--resume", "images"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(Cli, BadFlagValues) {
  CliDir d;
  write_text(d / "fox.txt");
  const auto before = d.listing();
  const std::vector<std::vector<std::string>> cases = {
      {"train", "fashion-mnist", "--epochs", "-1"},
      {"train", "fashion-mnist", "--epochs", "0"},
      {"train", "fashion-mnist", "--lr", "abc"},
      {"train", "fashion-mnist", "--lr", "-0.1"},
      {"train", "fashion-mnist", "--batch-size", "0"},
      {"train", "fashion-mnist", "--model", "resnet"},
      {"train", "fashion-mnist", "--seed", "x"},
      {"train", "fashion-mnist", "--no-such-flag"},
      {"train", "text", "--input", "fox.txt", "--lr", "abc"},
      {"train", "text", "--input", "fox.txt", "--batch-size", "0"},
      {"train", "text", "--input", "fox.txt", "--context", "0"},
      {"train", "text", "--input", "fox.txt", "--steps", "-5"},
      {"sample", "--checkpoint"},
      {"sample", "--checkpoint", "run", "--temperature", "-1"},
      // Every float flag refuses NaN and the infinities.
      {"train", "fashion-mnist", "--lr", "nan"},
      {"train", "text", "--input", "fox.txt", "--lr", "inf"},
      {"train", "fashion-mnist", "--bucket-mb", "nan"},
      {"sample", "--checkpoint", "run", "--temperature", "nan", "--length", "5"},
      {"sample", "--checkpoint", "run", "--temperature", "-inf"},
      {"tune", "--quick", "--min-gain", "nan"},
      {"tune", "--quick", "--min-gain", "inf"},
      {"tune", "--max-seconds", "nan"},
      {"tune", "--max-seconds", "inf"},
      {"frobnicate"},
      {},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const auto& a : args) joined += " " + a;
    SCOPED_TRACE("oa" + joined);
    const OaRun r = d.oa(args);
    EXPECT_TRUE(fails_cleanly(r, {}));
    EXPECT_EQ(WEXITSTATUS(r.status), 2);  // a usage error
    EXPECT_EQ(r.out, "");
  }
  // The flag's name is in the message.
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--lr", "abc"}), {"--lr", "must be a number"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "text", "--input", "fox.txt", "--lr", "abc"}), {"--lr", "must be a number"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--model", "resnet"}), {"--model", "resnet"}));
  EXPECT_TRUE(usage_error(d.oa({"sample", "--checkpoint", "run", "--temperature", "nan"}),
                          {"--temperature", "must be a finite number from 0 to 100"}));
  EXPECT_TRUE(usage_error(d.oa({"tune", "--quick", "--min-gain", "nan"}), {"--min-gain", "must be a finite number from 1 to 100"}));
  EXPECT_TRUE(usage_error(d.oa({"tune", "--max-seconds", "NaN"}), {"--max-seconds", "must be a finite number from 0 to 1000000000"}));
  EXPECT_TRUE(usage_error(d.oa({"train", "fashion-mnist", "--bucket-mb", "inf"}), {"--bucket-mb", "must be a finite number above 0"}));
  // Values that only the model can judge fail before training too.
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "text", "--input", "fox.txt", "--out", "run", "--context", "8", "--width", "30", "--heads", "4"}),
                            {"--width 30", "--heads 4"}));
  EXPECT_EQ(d.listing(), before);
  // --help is not an error.
  const OaRun help = d.oa({"train", "text", "--help"});
  ASSERT_TRUE(WIFEXITED(help.status));
  EXPECT_EQ(WEXITSTATUS(help.status), 0);
  EXPECT_NE(help.out.find("--context"), std::string::npos);
  EXPECT_NE(help.out.find("3000"), std::string::npos);  // defaults are shown
}

TEST(Cli, UnwritableOutput) {
  CliDir d;
  write_text(d / "fox.txt");
  write_file(d / "a-file", {'x'});
  // A run directory under a regular file.
  auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "a-file/run"} + kTinyText),
                            {"a-file/run"}));
  EXPECT_EQ(d.listing(), before);
  // A run directory whose metrics file cannot be created (a directory holds its name).
  fs::create_directories(d / "run" / "metrics.jsonl");
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run"} + kTinyText),
                            {"metrics.jsonl"}));
  EXPECT_EQ(d.listing(), before);
  // The same for oa train fashion-mnist.
  write_fashion_mnist(d / "data");
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--quick", "--data", "data", "--out", "a-file/run"}), {"a-file/run"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(Cli, TextResumeRefusals) {
  CliDir d;
  write_text(d / "fox.txt");
  const std::vector<std::string> resume = {"train", "text", "--input", "fox.txt", "--resume", "--out", "run"};
  auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa(resume + kTinyText), {"--resume", "no checkpoint", "run/model.safetensors"}));
  EXPECT_EQ(d.listing(), before);
  // Another model: each differing flag is named.
  write_text_checkpoint(d / "run", 1, false);
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa(resume + std::vector<std::string>{"--context", "16", "--layers", "1", "--heads", "2", "--width", "32"}),
                            {"--resume", "run/model.safetensors", "--context 8 --layers 1 --heads 2 --width 16",
                             "not --context 16 --layers 1 --heads 2 --width 32"}));
  // Already at --steps 2.
  write_text_checkpoint(d / "run", 2, false);
  EXPECT_TRUE(fails_cleanly(d.oa(resume + kTinyText), {"--resume", "finished its --steps 2", "nothing to train", "a larger --steps"}));
  // No step.
  write_text_checkpoint(d / "run", -1, false);
  EXPECT_TRUE(fails_cleanly(d.oa(resume + kTinyText), {"--resume", "which step"}));
  // No optimizer state, then one of another step.
  write_text_checkpoint(d / "run", 1, false);
  EXPECT_TRUE(fails_cleanly(d.oa(resume + kTinyText), {"optimizer.safetensors"}));
  write_text_checkpoint(d / "run", 1, true);
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa(resume + kTinyText), {"--resume", "optimizer.safetensors", "step 0", "step 1"}));
  EXPECT_EQ(d.listing(), before);
}

// Runs oa with `args` in `d` and interrupts it (SIGINT) `delay` after `file`
// has appeared non-empty; expects the exit code 130 of a saved interrupt.
OaRun interrupted(const CliDir& d, const std::vector<std::string>& args, const fs::path& file,
                  std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
  const pid_t pid = d.start(args);
  EXPECT_GT(pid, 0);
  if (pid <= 0) return {};
  wait_until_written(file);
  std::this_thread::sleep_for(delay);
  ::kill(pid, SIGINT);
  const OaRun r = d.wait(pid);
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 130) << "status " << r.status << ": " << r.out << r.err;
  return r;
}

// The rows of a metrics.jsonl by step.
std::map<std::int64_t, nlohmann::json> metrics_by_step(const fs::path& file) {
  std::map<std::int64_t, nlohmann::json> rows;
  std::istringstream in(read_text(file));
  for (std::string line; std::getline(in, line);) {
    auto row = nlohmann::json::parse(line);
    rows[row["step"].get<std::int64_t>()] = row;
  }
  return rows;
}

// Ctrl-C saves a checkpoint and exits with 130; --resume then ends where an
// uninterrupted run ends (the batches and learning rate of a step depend only
// on the seed and the step, and the AdamW state is restored).
TEST(Cli, TextInterruptedAndResumedEndsLikeUninterrupted) {
  CliDir d;
  write_text(d / "fox.txt");
  const std::vector<std::string> args = {"train",   "text", "--input", "fox.txt", "--context", "16", "--layers",     "1",  "--heads",
                                         "2",       "--width", "16",   "--steps", "60",        "--eval-every", "10", "--batch-size", "8"};
  const OaRun straight = d.oa(args + std::vector<std::string>{"--out", "straight"});
  ASSERT_TRUE(WIFEXITED(straight.status) && WEXITSTATUS(straight.status) == 0) << straight.err;
  EXPECT_NE(straight.out.find("plot straight/plot.png"), std::string::npos) << straight.out;
  EXPECT_TRUE(fs::exists(d / "straight" / "plot.png"));

  // Interrupt as soon as the first validation is in metrics.jsonl.
  const OaRun stopped = interrupted(d, args + std::vector<std::string>{"--out", "resumed"}, d / "resumed" / "metrics.jsonl");
  ASSERT_FALSE(HasFailure());
  EXPECT_NE(stopped.out.find("interrupted after step"), std::string::npos) << stopped.out;
  EXPECT_NE(stopped.out.find("--resume"), std::string::npos) << stopped.out;
  EXPECT_TRUE(fs::exists(d / "resumed" / "optimizer.safetensors"));
  EXPECT_TRUE(fs::exists(d / "resumed" / "plot.png"));

  const OaRun resumed = d.oa(args + std::vector<std::string>{"--out", "resumed", "--resume"});
  ASSERT_TRUE(WIFEXITED(resumed.status) && WEXITSTATUS(resumed.status) == 0) << resumed.err;
  EXPECT_NE(resumed.out.find("resumed from"), std::string::npos) << resumed.out;
  const auto want = metrics_by_step(d / "straight" / "metrics.jsonl");
  const auto got = metrics_by_step(d / "resumed" / "metrics.jsonl");
  ASSERT_EQ(want.size(), 6u);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [step, row] : want) {
    SCOPED_TRACE(step);
    ASSERT_TRUE(got.contains(step));
    EXPECT_NEAR(got.at(step)["validation_bpc"].get<double>(), row["validation_bpc"].get<double>(), 1e-5);
    EXPECT_NEAR(got.at(step)["train_loss"].get<double>(), row["train_loss"].get<double>(), 1e-5);
  }
  // Finished: nothing left to resume.
  EXPECT_TRUE(fails_cleanly(d.oa(args + std::vector<std::string>{"--out", "resumed", "--resume"}), {"nothing to train"}));
}

// --resume refuses flags that change the batch order or the learning-rate
// schedule (or fewer --epochs), naming them, before touching anything
// (--batch-size may change: the run continues from the next image).
TEST(Cli, ImagesResumeRefusesOtherFlags) {
  CliDir d;
  write_fashion_mnist(d / "data");
  write_image_checkpoint(d / "run", {{"task", "fashion-mnist"},
                                     {"model", {{"model", "convnet"}, {"quick", false}}},
                                     {"training", {{"seed", 0}, {"lr", 0.001}, {"epochs", 2}}},
                                     {"step", 3}});
  const std::vector<std::string> resume = {"train", "fashion-mnist", "--resume", "--out", "run", "--data", "data"};
  const std::vector<std::string> same = {"--lr", "0.001", "--seed", "0", "--epochs", "2"};
  const auto before = d.listing();
  for (std::size_t i = 0; i < same.size(); i += 2) {
    auto changed = same;
    changed[i + 1] = same[i] == "--lr" ? "0.002" : same[i] == "--epochs" ? "1" : "3";  // fewer --epochs (more extend the run)
    SCOPED_TRACE(changed[i]);
    EXPECT_TRUE(fails_cleanly(d.oa(resume + changed), {"--resume", "run/model.safetensors", same[i] + " " + same[i + 1],
                                                      "not " + changed[i] + " " + changed[i + 1]}));
  }
  // Several at once are all named.
  EXPECT_TRUE(fails_cleanly(d.oa(resume + std::vector<std::string>{"--seed", "4", "--epochs", "1"}),
                            {"with --seed 0 --epochs 2, not --seed 4 --epochs 1"}));
  EXPECT_EQ(d.listing(), before);
}

// Ctrl-C within an epoch saves the step reached; --resume continues that
// epoch from that step and ends where an uninterrupted run ends.
TEST(Cli, ImagesInterruptedAndResumedEndsLikeUninterrupted) {
  CliDir d;
  // 10 steps an epoch: Ctrl-C takes effect after the step it comes in.
  write_fashion_mnist(d / "data", 40, 20);
  const std::vector<std::string> args = {"train", "fashion-mnist", "--data", "data", "--epochs", "2", "--batch-size", "4", "--lr", "0.003"};
  const OaRun straight = d.oa(args + std::vector<std::string>{"--out", "straight"});
  ASSERT_TRUE(WIFEXITED(straight.status) && WEXITSTATUS(straight.status) == 0) << straight.err;

  // Interrupt in epoch 2, as soon as the checkpoint of epoch 1 is written.
  const OaRun stopped = interrupted(d, args + std::vector<std::string>{"--out", "resumed"}, d / "resumed" / "optimizer.safetensors");
  ASSERT_FALSE(HasFailure());
  EXPECT_NE(stopped.out.find("--resume to continue from epoch 2 step "), std::string::npos) << stopped.out;
  // The plot of the epochs done is written, as by oa train text.
  EXPECT_NE(stopped.out.find(", plot resumed/plot.png"), std::string::npos) << stopped.out;
  EXPECT_TRUE(fs::exists(d / "resumed" / "plot.png"));
  const OaRun resumed = d.oa(args + std::vector<std::string>{"--out", "resumed", "--resume"});
  ASSERT_TRUE(WIFEXITED(resumed.status) && WEXITSTATUS(resumed.status) == 0) << resumed.err;
  EXPECT_NE(resumed.out.find("resumed from resumed/model.safetensors at epoch 2 step "), std::string::npos) << resumed.out;

  auto rows = [&](const char* run) {
    std::vector<nlohmann::json> out;
    std::istringstream in(read_text(d / run / "metrics.jsonl"));
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  };
  const auto want = rows("straight"), got = rows("resumed");
  ASSERT_EQ(want.size(), 2u);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i]["epoch"], want[i]["epoch"]);
    for (const char* key : {"train_loss", "test_loss", "test_accuracy"}) EXPECT_NEAR(got[i][key].get<double>(), want[i][key].get<double>(), 1e-6) << key;
  }
  // Every step ran once.
  for (const char* run : {"straight", "resumed"}) {
    const auto meta = oa::ml::read_safetensors_metadata(d / run / "optimizer.safetensors");
    SCOPED_TRACE(run);
    EXPECT_EQ(meta.at("step"), "20");
  }
}

// A learning rate that overflows the weights in oa train fashion-mnist. Where
// the first non-finite test loss appears depends on the device's arithmetic
// (epoch 2 on lavapipe, epoch 1 on an H200), so either is accepted: the
// message places the divergence at the end of the epoch it was found in, and
// names the checkpoint left in --out exactly when an earlier epoch saved one.
TEST(Cli, ImagesDivergedRunNamesItsLastCheckpoint) {
  CliDir d;
  write_fashion_mnist(d / "data");  // two images: one step an epoch
  const OaRun r = d.oa({"train", "fashion-mnist", "--data", "data", "--quick", "--out", "run", "--lr", "1e30", "--epochs", "3"});
  if (r.err.find("at epoch 1 step 1") != std::string::npos) {
    EXPECT_TRUE(fails_cleanly(r, {"training diverged", "test loss", "--lr"}));
    EXPECT_EQ(r.err.find("checkpoint"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(d / "run" / "model.safetensors"));
    return;
  }
  EXPECT_TRUE(fails_cleanly(r, {"training diverged", "test loss", "at epoch 2 step 1", "--lr", "the checkpoint after epoch 1 is in run"}));
  EXPECT_EQ(nlohmann::json::parse(oa::ml::read_safetensors_metadata(d / "run" / "model.safetensors").at("oa.run"))["step"], 1);
}

}  // namespace
