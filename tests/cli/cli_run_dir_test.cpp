// The run directory of oa train: its lock (one run at a time), the refusal to
// start afresh over a checkpoint, resuming a finished run and extending it
// (with the learning-rate schedule of the added steps), the checkpoint as one
// unit (model and optimizer state both written or neither), Ctrl-C at the
// next step, oa eval on non-finite weights, and messages that name what the
// user passed.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_support.hpp"

namespace {

using namespace oa::test::cli;

// kTinyText without its --steps.
const std::vector<std::string> kTinyModel(kTinyText.begin(), kTinyText.end() - 2);

::testing::AssertionResult succeeded(const OaRun& r) {
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "status " << r.status << "\nstdout: " << r.out << "\nstderr: " << r.err;
}

// The JSON metadata `key` of a safetensors file.
nlohmann::json metadata(const fs::path& file, const char* key) { return nlohmann::json::parse(oa::ml::read_safetensors_metadata(file).at(key)); }

// The learning rate a saved AdamW state was last stepped with.
double saved_lr(const fs::path& dir) { return std::stod(oa::ml::read_safetensors_metadata(dir / "optimizer.safetensors").at("lr")); }

// The cosine part of a warmup-cosine cycle of `length` steps without warmup
// (length < 20) at its step `i`, from `peak` down to `floor`.
double cosine(std::int64_t i, std::int64_t length, double peak, double floor) {
  return floor + (peak - floor) * (1 + std::cos(std::numbers::pi * static_cast<double>(i) / static_cast<double>(length))) / 2;
}

// The `key` ("epoch", "step") of each row of a metrics.jsonl.
std::vector<std::int64_t> metrics_steps(const fs::path& file, const char* key) {
  std::vector<std::int64_t> out;
  std::istringstream in(read_text(file));
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line)[key].get<std::int64_t>());
  return out;
}

TEST(CliRunDir, SecondRunIntoTheSameOutFailsAtOnce) {
  CliDir d;
  write_fashion_mnist(d / "data");
  const pid_t first = start_endless_text_run(d, {"--context", "8", "--width", "16", "--eval-every", "100000", "--batch-size", "4"});
  ASSERT_GT(first, 0);
  wait_until_exists(d / "run" / "metrics.jsonl");  // the first run is training
  const auto before = d.listing();
  const std::vector<std::vector<std::string>> seconds = {
      std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run"} + kTinyText,
      std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run", "--overwrite"} + kTinyText,
      {"train", "fashion-mnist", "--data", "data", "--quick", "--out", "run"},
  };
  for (const auto& second : seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    const OaRun r = d.oa(second);
    const double seconds_taken = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(fails_cleanly(r, {"run is in use by another oa train run", "--out"}));
    EXPECT_EQ(r.out, "");
    EXPECT_LT(seconds_taken, 10.0);  // before any device work
  }
  EXPECT_EQ(d.listing(), before);  // the first run's empty metrics.jsonl, no checkpoint
  ::kill(first, SIGTERM);
  const OaRun r = d.wait(first);
  ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
  EXPECT_EQ(WEXITSTATUS(r.status), 128 + SIGTERM) << r.out << r.err;
  EXPECT_TRUE(fs::exists(d / "run" / "model.safetensors"));
  // The lock ended with the run: a fresh run is now refused for the checkpoint.
  EXPECT_TRUE(fails_cleanly(d.oa(seconds[0]), {"run holds a checkpoint"}));
}

TEST(CliRunDir, FreshRunRefusesAnExistingCheckpoint) {
  CliDir d;
  write_text(d / "fox.txt");
  write_fashion_mnist(d / "data");
  write_text_checkpoint(d / "run", 2, true);
  oa::test::write_file(d / "run" / "metrics.jsonl", {});  // a run interrupted before its first validation
  const auto model = read_text(d / "run" / "model.safetensors");
  const std::vector<std::string> fresh = std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run"} + kTinyText;
  const auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa(fresh), {"run holds a checkpoint", "--resume", "--overwrite"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--data", "data", "--quick", "--out", "run"}),
                            {"run holds a checkpoint", "--resume", "--overwrite"}));
  const OaRun both = d.oa(fresh + std::vector<std::string>{"--resume", "--overwrite"});
  EXPECT_TRUE(fails_cleanly(both, {"--resume", "--overwrite"}));
  EXPECT_EQ(WEXITSTATUS(both.status), 2);
  EXPECT_EQ(d.listing(), before);
  EXPECT_EQ(read_text(d / "run" / "model.safetensors"), model);
  // --overwrite starts afresh and replaces it.
  ASSERT_TRUE(succeeded(d.oa(fresh + std::vector<std::string>{"--overwrite", "--lr", "0.002"})));
  EXPECT_EQ(metadata(d / "run" / "model.safetensors", "oa.run")["training"]["lr"].get<double>(), 0.002);
  EXPECT_EQ(oa::ml::read_safetensors_metadata(d / "run" / "optimizer.safetensors").at("step"), "2");
}

// Temporary files that a second Ctrl-C left in the middle of a save are
// removed by the next run in the directory; the checkpoint stays.
TEST(CliRunDir, NextRunRemovesTheTemporariesOfACutShortSave) {
  CliDir d;
  write_text(d / "fox.txt");
  write_text_checkpoint(d / "run", 2, true);
  oa::test::write_file(d / "run" / ".model.safetensors.new.tmp-4242-0", {1, 2, 3});
  const auto model = read_text(d / "run" / "model.safetensors");
  EXPECT_TRUE(fails_cleanly(d.oa(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run"} + kTinyText),
                            {"run holds a checkpoint"}));
  EXPECT_FALSE(fs::exists(d / "run" / ".model.safetensors.new.tmp-4242-0"));
  EXPECT_EQ(read_text(d / "run" / "model.safetensors"), model);
}

// --resume refuses a checkpoint whose weights are not finite, as oa eval does.
TEST(CliRunDir, ResumeRefusesNonFiniteWeights) {
  CliDir d;
  write_text(d / "fox.txt");
  write_text_checkpoint(d / "run", 1, true, std::numeric_limits<float>::quiet_NaN());
  const OaRun r = d.oa(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run", "--resume"} + kTinyText);
  EXPECT_TRUE(fails_cleanly(r, {"run/model.safetensors", "non-finite weights", "cannot be resumed"}));
}

// A finished run is refused by --resume alike in both commands; a larger
// --epochs or --steps extends it, its new steps on a warmup-cosine cycle of
// their own (no warmup under 20 steps): the last step's learning rate is that
// cycle's, not the one of a run started for the larger total.
TEST(CliRunDir, ImagesResumeFinishedRunAndExtend) {
  CliDir d;
  write_fashion_mnist(d / "data");  // two images: one step an epoch
  write_image_checkpoint(d / "run", {{"task", "fashion-mnist"}, {"model", {{"model", "convnet"}, {"quick", true}}}});
  const std::vector<std::string> run = {"train", "fashion-mnist", "--data", "data", "--quick", "--out", "run", "--lr", "0.002"};
  ASSERT_TRUE(succeeded(d.oa(run + std::vector<std::string>{"--overwrite"})));
  EXPECT_TRUE(fails_cleanly(d.oa(run + std::vector<std::string>{"--resume"}),
                            {"--resume", "run/model.safetensors", "finished its --epochs 1", "nothing to train", "a larger --epochs"}));
  const OaRun extended = d.oa(run + std::vector<std::string>{"--resume", "--epochs", "3"});
  ASSERT_TRUE(succeeded(extended));
  EXPECT_NE(extended.out.find("resumed from run/model.safetensors at epoch 2 step 0"), std::string::npos) << extended.out;
  const auto meta = metadata(d / "run" / "model.safetensors", "oa.run");
  EXPECT_EQ(meta["step"], 3);
  EXPECT_EQ(meta["total_steps"], 3);
  EXPECT_EQ(meta["training"]["epochs"], 3);
  EXPECT_EQ(meta["lr_cycles"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(oa::ml::read_safetensors_metadata(d / "run" / "optimizer.safetensors").at("step"), "3");
  // Step 2 is step 1 of the cycle [1, 3); a 3-epoch run would be at 2 of [0, 3).
  EXPECT_NEAR(saved_lr(d / "run"), cosine(1, 2, 0.002, 0), 1e-9);
  EXPECT_GT(std::abs(saved_lr(d / "run") - cosine(2, 3, 0.002, 0)), 1e-4);
  EXPECT_EQ(metrics_steps(d / "run" / "metrics.jsonl", "epoch"), (std::vector<std::int64_t>{1, 2, 3}));
}

TEST(CliRunDir, TextResumeFinishedRunAndExtend) {
  CliDir d;
  write_text(d / "fox.txt");
  const std::vector<std::string> run =
      std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run", "--eval-every", "1", "--batch-size", "4"} + kTinyModel;
  ASSERT_TRUE(succeeded(d.oa(run + std::vector<std::string>{"--steps", "2"})));
  EXPECT_EQ(metadata(d / "run" / "model.safetensors", "oa.run")["lr_cycles"], nlohmann::json::array({0}));
  EXPECT_NEAR(saved_lr(d / "run"), cosine(1, 2, 1e-3, 1e-4), 1e-9);
  EXPECT_TRUE(fails_cleanly(d.oa(run + std::vector<std::string>{"--steps", "2", "--resume"}),
                            {"--resume", "run/model.safetensors", "finished its --steps 2", "nothing to train", "a larger --steps"}));
  const OaRun extended = d.oa(run + std::vector<std::string>{"--steps", "4", "--resume"});
  ASSERT_TRUE(succeeded(extended));
  EXPECT_NE(extended.out.find("resumed from run/model.safetensors at step 2"), std::string::npos) << extended.out;
  const auto meta = metadata(d / "run" / "model.safetensors", "oa.run");
  EXPECT_EQ(meta["step"], 4);
  EXPECT_EQ(meta["total_steps"], 4);
  EXPECT_EQ(meta["training"]["steps"], 4);
  EXPECT_EQ(meta["lr_cycles"], nlohmann::json::array({0, 2}));
  // Step 3 is step 1 of the cycle [2, 4); a 4-step run would be at 3 of [0, 4).
  EXPECT_NEAR(saved_lr(d / "run"), cosine(1, 2, 1e-3, 1e-4), 1e-9);
  EXPECT_GT(std::abs(saved_lr(d / "run") - cosine(3, 4, 1e-3, 1e-4)), 1e-4);
  EXPECT_EQ(metrics_steps(d / "run" / "metrics.jsonl", "step"), (std::vector<std::int64_t>{1, 2, 3, 4}));
}

// oa train text --step-graph replays a captured step from its second step on;
// by default every step is recorded. Both give the same checkpoint, byte for byte.
TEST(CliRunDir, TextReplayedStepsEqualEagerSteps) {
  CliDir d;
  write_text(d / "fox.txt");
  const std::vector<std::string> run = std::vector<std::string>{"train", "text", "--input", "fox.txt", "--eval-every", "3",
                                                                "--batch-size", "4", "--steps", "6"} + kTinyModel;
  ASSERT_TRUE(succeeded(d.oa(run + std::vector<std::string>{"--out", "replayed", "--step-graph"})));
  ASSERT_TRUE(succeeded(d.oa(run + std::vector<std::string>{"--out", "eager"})));
  for (const char* file : {"model.safetensors", "optimizer.safetensors"})
    EXPECT_EQ(read_text(d / "replayed" / file), read_text(d / "eager" / file)) << file;
}

// A save whose second file cannot be written (a directory holds the name
// optimizer.safetensors.new that the optimizer state is written to first)
// leaves the previous checkpoint as it was and resumable; a commit cut short
// between its renames is completed before a checkpoint is read.
TEST(CliRunDir, CheckpointIsWrittenAsOneUnit) {
  CliDir d;
  write_text(d / "fox.txt");
  const std::vector<std::string> run =
      std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run", "--eval-every", "1", "--batch-size", "4"} + kTinyModel;
  ASSERT_TRUE(succeeded(d.oa(run + std::vector<std::string>{"--steps", "2"})));
  const fs::path model = d / "run" / "model.safetensors", optimizer = d / "run" / "optimizer.safetensors";
  const auto model_2 = read_text(model), optimizer_2 = read_text(optimizer);
  fs::create_directories(d / "run" / "optimizer.safetensors.new" / "blocker");
  const auto before = d.listing();
  const std::vector<std::string> resume = run + std::vector<std::string>{"--steps", "4", "--resume"};
  EXPECT_TRUE(fails_cleanly(d.oa(resume), {"cannot write run/optimizer.safetensors"}));
  EXPECT_EQ(read_text(model), model_2);
  EXPECT_EQ(read_text(optimizer), optimizer_2);
  auto after = d.listing();
  after.erase("run/metrics.jsonl");  // rewritten with the same rows
  auto expected = before;
  expected.erase("run/metrics.jsonl");
  EXPECT_EQ(after, expected);
  fs::remove_all(d / "run" / "optimizer.safetensors.new");
  const OaRun resumed = d.oa(resume);
  ASSERT_TRUE(succeeded(resumed));
  EXPECT_NE(resumed.out.find("resumed from run/model.safetensors at step 2"), std::string::npos) << resumed.out;

  // Cut short after the optimizer state of step 4 was renamed into place but
  // before the model of step 4 was: the model of step 2 beside it.
  fs::rename(model, d / "run" / "model.safetensors.new");
  oa::test::write_file(model, std::vector<std::uint8_t>(model_2.begin(), model_2.end()));
  oa::test::write_file(d / "run" / "checkpoint.commit", {});
  const OaRun recovered = d.oa(run + std::vector<std::string>{"--steps", "5", "--resume"});
  ASSERT_TRUE(succeeded(recovered));
  EXPECT_NE(recovered.out.find("resumed from run/model.safetensors at step 4"), std::string::npos) << recovered.out;
  EXPECT_FALSE(fs::exists(d / "run" / "checkpoint.commit"));
  EXPECT_FALSE(fs::exists(d / "run" / "model.safetensors.new"));
}

// Ctrl-C stops the run soon after it comes: the flag is read every step, and
// the engine queues only a few batches ahead of the device.
TEST(CliRunDir, InterruptTakesEffectAtTheNextStep) {
  CliDir d;
  const pid_t pid = start_endless_text_run(d, {"--context", "32", "--width", "64", "--batch-size", "16", "--eval-every", "25"});
  ASSERT_GT(pid, 0);
  // The time of a step, from the first validation to the second.
  const fs::path metrics = d / "run" / "metrics.jsonl";
  auto rows = [&] {
    const std::string text = fs::exists(metrics) ? read_text(metrics) : std::string();
    return std::count(text.begin(), text.end(), '\n');
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  auto wait_rows = [&](long n) {
    while (rows() < n && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return std::chrono::steady_clock::now();
  };
  const auto t1 = wait_rows(1);
  const auto t2 = wait_rows(2);
  const auto step = (t2 - t1) / 25;
  // Three steps into the next 25. The engine queues only a few batches ahead
  // of the GPU, so the run stops well before step 75, where a run that looked
  // at the flag only at its loss reads would stop.
  std::this_thread::sleep_for(3 * step);
  ::kill(pid, SIGINT);
  const OaRun r = d.wait(pid);
  ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
  ASSERT_EQ(WEXITSTATUS(r.status), 130) << r.out << r.err;
  const auto saved = metadata(d / "run" / "model.safetensors", "oa.run")["step"].get<std::int64_t>();
  EXPECT_GE(saved, 50);
  EXPECT_LE(saved, 50 + 20) << "step time " << std::chrono::duration<double>(step).count() << " s";
}

// Both commands refuse, naming the training data, to resume on data of
// another size than the checkpoint's.
TEST(CliRunDir, ImagesResumeRefusesOtherData) {
  CliDir d;
  write_fashion_mnist(d / "data");
  const std::vector<std::string> run = {"train", "fashion-mnist", "--data", "data", "--quick", "--out", "run"};
  ASSERT_TRUE(succeeded(d.oa(run)));
  EXPECT_EQ(metadata(d / "run" / "model.safetensors", "oa.run")["data_size"], 2);
  write_fashion_mnist(d / "data", 4, 2);
  const auto before = d.listing();
  const OaRun r = d.oa(run + std::vector<std::string>{"--resume", "--epochs", "2"});
  EXPECT_TRUE(fails_cleanly(r, {"--resume", "run/model.safetensors", "2 training images of --data data", "now holds 4"}));
  EXPECT_EQ(d.listing(), before);
}

// A checkpoint whose metadata is under the keys an older oa wrote (oa.train,
// oa.text) is refused by every command with one line that says so.
TEST(CliRunDir, CheckpointOfAnOlderOaIsRefused) {
  CliDir d;
  write_text(d / "fox.txt");
  write_fashion_mnist(d / "data");
  fs::create_directories(d / "images");
  fs::create_directories(d / "text");
  oa::ml::save_safetensors(d / "images" / "model.safetensors", {{"w", oa::Matrix::ones({4})}},
                           {{"oa.train", nlohmann::json{{"epoch", 1}, {"model", "convnet"}, {"quick", true}}.dump()}});
  oa::ml::save_safetensors(d / "text" / "model.safetensors", {{"w", oa::Matrix::ones({4})}},
                           {{"oa.text", kTinyTextModel.dump()}});
  const auto before = d.listing();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"eval", "--checkpoint", "images", "--data", "data"}, "oa.train"},
      {{"train", "fashion-mnist", "--data", "data", "--quick", "--out", "images", "--resume"}, "oa.train"},
      {{"sample", "--checkpoint", "text"}, "oa.text"},
      {std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "text", "--resume"} + kTinyText, "oa.text"},
  };
  for (const auto& [args, key] : cases) {
    SCOPED_TRACE(args[0] + " " + args[1]);
    EXPECT_TRUE(fails_cleanly(d.oa(args), {"model.safetensors", "written by an older oa", key, "train it again"}));
  }
  EXPECT_EQ(d.listing(), before);
}

TEST(CliRunDir, EvalRefusesNonFiniteWeights) {
  CliDir d;
  write_fashion_mnist(d / "data");
  const oa::Engine engine = oa::Engine::default_engine();
  oa::ml::Generator generator(0);
  auto model = oa_cli::make_image_model({"convnet", true}, generator, engine);
  auto tensors = model->named_tensors();
  for (auto& [name, m] : tensors) m = oa::Matrix::full(m.shape(), std::numeric_limits<float>::quiet_NaN(), engine);
  fs::create_directories(d / "run");
  oa::ml::save_safetensors(d / "run" / "model.safetensors", tensors,
                           run_metadata({{"task", "fashion-mnist"}, {"model", {{"model", "convnet"}, {"quick", true}}}}));
  const OaRun r = d.oa({"eval", "--checkpoint", "run", "--data", "data"});
  EXPECT_TRUE(fails_cleanly(r, {"run/model.safetensors", "non-finite weights"}));
  EXPECT_EQ(r.out, "");
}

// The last row of a metrics.jsonl.
nlohmann::json last_metrics(const fs::path& file) {
  std::istringstream in(read_text(file));
  std::string line, last;
  while (std::getline(in, line)) last = line;
  return nlohmann::json::parse(last);
}

// oa eval evaluates under the autocast of the --precision the checkpoint
// records, as the run's evaluations were: it prints the run's last test
// figures and the precision.
TEST(CliRunDir, EvalReproducesTheRunsLastFiguresUnderItsPrecision) {
  CliDir d;
  write_fashion_mnist(d / "data", 40, 20);
  ASSERT_TRUE(succeeded(
      d.oa({"train", "fashion-mnist", "--quick", "--data", "data", "--batch-size", "8", "--lr", "0.003", "--precision", "bf16", "--out", "run"})));
  const nlohmann::json last = last_metrics(d / "run" / "metrics.jsonl");
  const OaRun r = d.oa({"eval", "--checkpoint", "run", "--data", "data"});
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r.out, fmt::format("run: test accuracy {:.2f}%, test loss {:.4f} (20 images, bf16)\n", 100 * last["test_accuracy"].get<double>(),
                               last["test_loss"].get<double>()));
}

// A checkpoint whose task state disagrees with its step (edited by hand, or
// corrupt) is refused before any training, naming the file and the values,
// and left as it was.
TEST(CliRunDir, ImagesResumeRefusesAStateThatDisagreesWithItsStep) {
  CliDir d;
  write_fashion_mnist(d / "data", 40, 20);  // 5 steps of 8 an epoch
  const std::vector<std::string> run = {"train", "fashion-mnist", "--quick", "--data", "data", "--batch-size", "8", "--out", "run"};
  ASSERT_TRUE(succeeded(d.oa(run)));
  const nlohmann::json mid = {{"epoch", 0}, {"position", 24}, {"train_loss_sum", 48.0}, {"images_seen", 24}};
  const auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json state = mid;
    state[key] = std::move(value);
    return state;
  };
  struct Case {
    std::int64_t step;
    nlohmann::json state;
    std::string epochs;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      // Within epoch 1 of --epochs 1, but an epoch past the run's.
      {3, with("epoch", 5), "1", {"state.epoch 5", "saved at epoch 1 step 3 (state.epoch 0)"}},
      // At the end of epoch 1, extended by --epochs 2.
      {5, {{"epoch", 5}, {"position", 0}, {"train_loss_sum", 0.0}, {"images_seen", 0}}, "2", {"state.epoch 5", "epoch 2 step 0"}},
      {3, with("epoch", "0"), "1", {"state.epoch \"0\""}},
      {3, with("position", 40), "1", {"state.position 40", "from 0 to 39"}},
      {3, with("position", -8), "1", {"state.position -8"}},
      {3, with("images_seen", 41), "1", {"state.images_seen 41"}},
      {3, with("train_loss_sum", -1.0), "1", {"state.train_loss_sum -1.0"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.state.dump());
    edit_run_metadata(d / "run" / "model.safetensors", [&](nlohmann::json& meta) {
      meta["step"] = c.step;
      meta["state"] = c.state;
    });
    const auto before = d.listing();
    const OaRun r = d.oa(run + std::vector<std::string>{"--resume", "--epochs", c.epochs});
    EXPECT_TRUE(fails_cleanly(r, std::initializer_list<std::string>{"--resume", "run/model.safetensors", "train again without --resume"}));
    for (const auto& f : c.fragments) EXPECT_NE(r.err.find(f), std::string::npos) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 1);
    EXPECT_EQ(d.listing(), before);
  }
}

// Errors name the flag and the file the user gave, never a library function.
TEST(CliMessages, NameWhatTheUserPassed) {
  CliDir d;
  write_text(d / "fox.txt");
  fs::create_directories(d / "a-dir");
  write_fashion_mnist(d / "data");
  auto bad = idx({2, 28, 28});
  bad[2] = 0x0d;
  write_idx_gz(d / "data" / "t10k-images-idx3-ubyte.gz", bad);
  write_fashion_mnist(d / "empty", 0, 0);
  fs::create_directories(d / "run");
  oa::ml::save_safetensors(d / "run" / "model.safetensors", {{"w", oa::Matrix::ones({64})}},
                           run_metadata({{"task", "text"}, {"model", kTinyTextModel}}));
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"train", "fashion-mnist", "--data", "absent", "--out", "out"}, {"--data absent", "cannot open", "absent/train-images-idx3-ubyte"}},
      {{"train", "fashion-mnist", "--data", "data", "--out", "out"}, {"--data data", "t10k-images-idx3-ubyte.gz", "element type"}},
      {{"train", "fashion-mnist", "--data", "empty", "--out", "out"}, {"--data empty", "no images"}},
      {{"eval", "--checkpoint", "run", "--data", "data"}, {"run/model.safetensors", "not written by oa train"}},
      {{"train", "text", "--input", "absent.txt", "--out", "out"}, {"--input absent.txt", "cannot open"}},
      {{"train", "text", "--input", "a-dir", "--out", "out"}, {"--input a-dir", "directory"}},
      {std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "out", "--device", "no-such-device"} + kTinyText,
       {"--device no-such-device"}},
      {{"sample", "--checkpoint", "run"}, {"run/model.safetensors"}},
      {{"sample", "--checkpoint", "run/model.safetensors"}, {"--checkpoint run/model.safetensors is a file", "the run directory that holds it (run)"}},
      {{"eval", "--checkpoint", "run/model.safetensors", "--data", "data"}, {"--checkpoint run/model.safetensors is a file"}},
  };
  const auto before = d.listing();
  for (const auto& [args, fragments] : cases) {
    std::string joined;
    for (const auto& a : args) joined += " " + a;
    SCOPED_TRACE("oa" + joined);
    const OaRun r = d.oa(args);
    EXPECT_TRUE(fails_cleanly(r, {}));
    for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << f << " not in " << r.err;
    EXPECT_EQ(r.err.find("oa::"), std::string::npos) << r.err;
  }
  EXPECT_EQ(d.listing(), before);
}

// An unknown or missing command or dataset: the message lists those that exist.
TEST(CliMessages, UnknownCommandOrDatasetNamesThoseThatExist) {
  CliDir d;
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"train", "cifar"}, {"unknown dataset 'cifar'", "fashion-mnist, text", "oa train --help"}},
      {{"train"}, {"train needs a dataset", "fashion-mnist, text"}},
      {{"frobnicate"}, {"unknown command 'frobnicate'", "info, train, sample, eval"}},
      {{}, {"a command is needed", "info, train, sample, eval"}},
  };
  for (const auto& [args, fragments] : cases) {
    SCOPED_TRACE(args.empty() ? std::string("oa") : "oa " + args[0]);
    const OaRun r = d.oa(args);
    EXPECT_TRUE(fails_cleanly(r, {}));
    EXPECT_EQ(WEXITSTATUS(r.status), 2);
    for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << f << " not in " << r.err;
  }
}

}  // namespace
