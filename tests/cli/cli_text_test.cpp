// oa train text and oa sample on flags and checkpoints that must be refused:
// --resume with other training flags, a --seed
// out of range, --width not divisible by --heads, a checkpoint with non-finite
// weights, a diverging run, and SIGTERM, which saves like Ctrl-C.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cli/cli_support.hpp"

namespace {

using namespace oa::test::cli;
using oa::test::write_file;

TEST(CliText, ResumeRefusesOtherTrainingFlags) {
  CliDir d;
  write_text(d / "fox.txt");
  write_text(d / "fox2.txt");
  write_text_checkpoint(d / "run", 1, true);
  // kTinyText without its --steps 2, which each case adds unless it tries another.
  const std::vector<std::string> model(kTinyText.begin(), kTinyText.end() - 2);
  const std::vector<std::string> resume = std::vector<std::string>{"train", "text", "--resume", "--out", "run"} + model;
  const auto before = d.listing();
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"--input", "fox.txt", "--lr", "0.002"}, {"with --lr 0.001, not --lr 0.002"}},
      {{"--input", "fox.txt", "--seed", "7"}, {"with --seed 0, not --seed 7"}},
      {{"--input", "fox.txt", "--steps", "1"}, {"with --steps 2, not --steps 1"}},  // fewer (more extend the run)
      // A checkpoint that does not record --precision was trained in fp32.
      {{"--input", "fox.txt", "--precision", "fp16"}, {"with --precision fp32, not --precision fp16"}},
      {{"--input", "fox2.txt"}, {"with --input fox.txt, not --input fox2.txt"}},
      {{}, {"with --input fox.txt, not --input fortunes"}},
      // Several at once are all named.
      {{"--input", "fox2.txt", "--seed", "7"}, {"with --input fox.txt --seed 0, not --input fox2.txt --seed 7"}},
  };
  for (const auto& [flags, fragments] : cases) {
    std::string joined;
    for (const auto& a : flags) joined += " " + a;
    SCOPED_TRACE(joined);
    const bool steps = std::find(flags.begin(), flags.end(), "--steps") != flags.end();
    const OaRun r = d.oa(resume + flags + (steps ? std::vector<std::string>{} : std::vector<std::string>{"--steps", "2"}));
    EXPECT_TRUE(fails_cleanly(r, {}));
    for (const auto& f : std::vector<std::string>{"--resume", "run/model.safetensors"} + fragments)
      EXPECT_NE(r.err.find(f), std::string::npos) << f << " not in " << r.err;
    EXPECT_EQ(r.out, "");
  }
  // The same path but a text of another size.
  write_file(d / "fox.txt", {'a', 'b', 'c'});
  const OaRun r = d.oa(resume + std::vector<std::string>{"--input", "fox.txt", "--steps", "2"});
  EXPECT_TRUE(fails_cleanly(r, {"--resume", "1800 bytes", "--input fox.txt", "now holds 3"}));
  EXPECT_EQ(r.out, "");
  // --eval-every may differ: the flags pass, and the AdamW state of step 0 under
  // a model of step 1 is what is refused.
  write_text(d / "fox.txt");
  EXPECT_TRUE(fails_cleanly(d.oa(resume + std::vector<std::string>{"--input", "fox.txt", "--steps", "2", "--eval-every", "5"}),
                            {"optimizer.safetensors", "step 0", "step 1"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(CliFlags, SeedOutOfRange) {
  CliDir d;
  write_text(d / "fox.txt");
  const auto before = d.listing();
  const std::vector<std::vector<std::string>> commands = {
      {"train", "fashion-mnist", "--data", "absent"},
      {"train", "text", "--input", "fox.txt", "--out", "run"},
      {"sample", "--checkpoint", "absent"},
  };
  for (const auto& command : commands)
    for (const std::string seed : {"-5", "99999999999999999999999", "18446744073709551616", "1.5", "+3", ""}) {
      SCOPED_TRACE(command[0] + " " + command[1] + " --seed '" + seed + "'");
      EXPECT_TRUE(usage_error(d.oa(command + std::vector<std::string>{"--seed", seed}), {"--seed"}));
    }
  // 2^64 - 1 is a seed: sample goes on to look for its checkpoint.
  const OaRun r = d.oa({"sample", "--checkpoint", "absent", "--seed", std::to_string(std::numeric_limits<std::uint64_t>::max())});
  EXPECT_TRUE(fails_cleanly(r, {"no checkpoint"}));
  EXPECT_EQ(WEXITSTATUS(r.status), 1);
  EXPECT_EQ(d.listing(), before);
}

TEST(CliFlags, WidthNotDivisibleByHeads) {
  CliDir d;
  write_text(d / "fox.txt");
  const auto before = d.listing();
  EXPECT_TRUE(usage_error(d.oa({"train", "text", "--input", "fox.txt", "--out", "run", "--width", "32", "--heads", "3"}),
                          {"--width 32", "--heads 3"}));
  // Checked before the input is read.
  EXPECT_TRUE(usage_error(d.oa({"train", "text", "--input", "absent.txt", "--width", "32", "--heads", "3"}), {"--width 32"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(CliText, SampleRefusesNonFiniteCheckpoint) {
  CliDir d;
  write_text_checkpoint(d / "run", 1, false, std::numeric_limits<float>::quiet_NaN());
  const OaRun r = d.oa({"sample", "--checkpoint", "run", "--prompt", "The", "--length", "3"});
  EXPECT_TRUE(fails_cleanly(r, {"run/model.safetensors", "non-finite logits"}));
  EXPECT_EQ(r.out, "");
}

// --temperature 0 is greedy decoding: the seed does not matter, and the first
// character is the argmax of the model's logits after the prompt.
TEST(CliText, SampleAtTemperatureZeroIsGreedy) {
  CliDir d;
  write_text_checkpoint(d / "run", 1, false);
  const auto sample = [&](const char* seed) {
    return d.oa({"sample", "--checkpoint", "run", "--prompt", "The", "--length", "4", "--temperature", "0", "--seed", seed});
  };
  const OaRun a = sample("1"), b = sample("2");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  ASSERT_EQ(a.out.size(), 3u + 4u + 1u);  // the prompt, 4 characters, a newline
  const oa::Engine engine = oa::Engine::default_engine();
  oa::ml::Generator generator(0);
  auto model = oa_cli::make_text_model({8, 1, 2, 16}, generator, engine);
  oa::ml::load_safetensors_into(d / "run" / "model.safetensors", model->named_tensors());
  model->eval();
  const std::vector<float> logits = (*model)(oa::Matrix::from_i32({1, 3}, std::vector<std::int32_t>{'T', 'h', 'e'}, engine)).to_vector();
  const auto last = logits.begin() + 2 * 256;
  EXPECT_EQ(static_cast<unsigned char>(a.out[3]), std::max_element(last, last + 256) - last);
}

// A learning rate that overflows the weights: the first validation is not
// finite, and the run fails without writing a checkpoint.
TEST(CliText, DivergedRunSavesNoCheckpoint) {
  CliDir d;
  write_text(d / "fox.txt");
  const OaRun r = d.oa(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run", "--lr", "1e30", "--eval-every", "1",
                                                "--batch-size", "4"} +
                       kTinyText);
  EXPECT_TRUE(fails_cleanly(r, {"training diverged", "at step 1", "--lr"}));
  EXPECT_FALSE(fs::exists(d / "run" / "model.safetensors"));
  EXPECT_FALSE(fs::exists(d / "run" / "optimizer.safetensors"));
}

// A run that fails at its first step (here an operand past the device's
// storage-buffer range) leaves no run directory behind, nor the parents it
// created for it.
TEST(CliText, RunFailingBeforeItsFirstWriteLeavesNothing) {
  const std::int64_t batch = 1 << 20, context = 8, width = 16;  // embedding output: batch * context * width floats
  if (oa::Engine::default_engine().device().max_storage_buffer_range >= static_cast<std::uint64_t>(batch * context * width * 4))
    GTEST_SKIP() << "this device can bind the whole batch; the first step would not fail";
  CliDir d;
  write_text(d / "fox.txt");
  const auto before = d.listing();
  const OaRun r = d.oa({"train", "text", "--input", "fox.txt", "--out", "new/run", "--context", std::to_string(context), "--layers", "1",
                        "--heads", "2", "--width", std::to_string(width), "--batch-size", std::to_string(batch)});
  EXPECT_TRUE(fails_cleanly(r, {"maxStorageBufferRange"}));
  EXPECT_FALSE(fs::exists(d / "new"));
  EXPECT_EQ(d.listing(), before);
}

// --precision fp16 records itself and the loss scaler's state in the
// checkpoint; --resume continues it and refuses another precision.
TEST(CliText, PrecisionIsRecordedAndResumeRefusesAnother) {
  CliDir d;
  write_text(d / "fox.txt");
  const OaRun help = d.oa({"train", "text", "--help"});
  EXPECT_NE(help.out.find("--precision"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("fp16"), std::string::npos) << help.out;
  const std::vector<std::string> run = std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run", "--batch-size", "4"} +
                                       std::vector<std::string>(kTinyText.begin(), kTinyText.end() - 2);
  const OaRun r = d.oa(run + std::vector<std::string>{"--steps", "1", "--precision", "fp16"});
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out << r.err;
  const auto meta = nlohmann::json::parse(oa::ml::read_safetensors_metadata(d / "run" / "model.safetensors").at("oa.run"));
  EXPECT_EQ(meta["training"]["precision"], "fp16");
  // 2^16 after a clean step, half that after an inf or NaN gradient.
  const auto& scaler = meta["state"]["grad_scaler"];
  EXPECT_TRUE((scaler["scale"] == 65536.0 && scaler["growth_tracker"] == 1) || (scaler["scale"] == 32768.0 && scaler["growth_tracker"] == 0))
      << scaler.dump();
  EXPECT_TRUE(fails_cleanly(d.oa(run + std::vector<std::string>{"--steps", "2", "--resume", "--precision", "bf16"}),
                            {"--resume", "with --precision fp16, not --precision bf16"}));
  EXPECT_TRUE(fails_cleanly(d.oa(run + std::vector<std::string>{"--steps", "2", "--resume"}), {"with --precision fp16, not --precision fp32"}));
  const OaRun resumed = d.oa(run + std::vector<std::string>{"--steps", "2", "--resume", "--precision", "fp16"});
  ASSERT_TRUE(WIFEXITED(resumed.status) && WEXITSTATUS(resumed.status) == 0) << resumed.out << resumed.err;
  const auto after = nlohmann::json::parse(oa::ml::read_safetensors_metadata(d / "run" / "model.safetensors").at("oa.run"));
  EXPECT_EQ(after["step"], 2);
  EXPECT_TRUE(after["state"].contains("grad_scaler")) << after.dump();
  EXPECT_TRUE(usage_error(d.oa(run + std::vector<std::string>{"--precision", "fp8"}), {"--precision"}));
  // A loss scaler's state that no run writes is refused, naming the file and the values.
  edit_run_metadata(d / "run" / "model.safetensors", [](nlohmann::json& m) { m["state"]["grad_scaler"]["scale"] = -1.0; });
  const auto before = d.listing();
  const OaRun tampered = d.oa(run + std::vector<std::string>{"--steps", "3", "--resume", "--precision", "fp16"});
  EXPECT_TRUE(fails_cleanly(tampered, {"--resume", "run/model.safetensors", "state.grad_scaler", "-1.0"}));
  EXPECT_EQ(WEXITSTATUS(tampered.status), 1);
  EXPECT_EQ(d.listing(), before);
}

// SIGTERM is handled like a first Ctrl-C: a line on stderr at once, then a
// checkpoint after the step and exit 128 + SIGTERM.
TEST(CliText, SigtermSavesACheckpoint) {
  CliDir d;
  const pid_t pid = start_endless_text_run(d, {"--context", "8", "--width", "16", "--eval-every", "1", "--batch-size", "4"});
  ASSERT_GT(pid, 0);
  wait_until_written(d / "run" / "metrics.jsonl");
  ::kill(pid, SIGTERM);
  const OaRun r = d.wait(pid);
  ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
  EXPECT_EQ(WEXITSTATUS(r.status), 128 + SIGTERM) << r.out << r.err;
  EXPECT_NE(r.err.find("oa: terminated; saving a checkpoint after this step"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("interrupted after step"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(d / "run" / "model.safetensors"));
  EXPECT_TRUE(fs::exists(d / "run" / "optimizer.safetensors"));
}

}  // namespace
