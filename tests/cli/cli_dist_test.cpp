// `mpirun -np 2 oa train fashion-mnist|text` (ctest DistCli): two ranks with
// half the batch each train like one process with the whole batch, rank 0
// alone prints and writes the run directory, --resume continues on every
// rank, also with another number of ranks, and a run that fails on its ranks
// ends the job with the error. --profile under MPI is rank 0's alone.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_support.hpp"

namespace {

using namespace oa::test::cli;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<nlohmann::json> rows(const fs::path& metrics) {
  std::istringstream in(read_text(metrics));
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

nlohmann::json last_row(const fs::path& metrics) { return rows(metrics).back(); }

// The metrics of the runs in `got` and `want` agree in every row on `keys`.
void expect_same_metrics(const fs::path& got, const fs::path& want, std::initializer_list<const char*> keys) {
  const auto g = rows(got), w = rows(want);
  ASSERT_EQ(g.size(), w.size()) << got;
  for (std::size_t i = 0; i < g.size(); ++i)
    for (const char* key : keys) EXPECT_NEAR(g[i][key].get<double>(), w[i][key].get<double>(), 1e-4) << got << " row " << i << " " << key;
}

bool succeeded(const OaRun& r) { return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0; }

TEST(DistCli, TwoRanksTrainLikeOneProcessWithTheGlobalBatchAndResumeWithAnyNumber) {
  CliDir d;
  write_fashion_mnist(d / "data", 40, 20);  // 5 steps of 8 images
  const std::vector<std::string> common = {"train", "fashion-mnist", "--quick", "--data", "data", "--lr", "0.003"};
  const OaRun one = d.oa(common + std::vector<std::string>{"--batch-size", "8", "--out", "one"});
  ASSERT_TRUE(WIFEXITED(one.status) && WEXITSTATUS(one.status) == 0) << one.err;
  const OaRun two =
      d.mpirun(2, common + std::vector<std::string>{"--batch-size", "4", "--out", "two", "--bucket-mb", "0.001", "--profile"});
  ASSERT_TRUE(WIFEXITED(two.status) && WEXITSTATUS(two.status) == 0) << two.out << two.err;
  EXPECT_EQ(count(two.out, "epoch 1: train loss"), 1u) << two.out;
  EXPECT_EQ(count(two.out, "GPU time per op over 2 training step(s)"), 1u) << two.out;  // rank 0's profile only
  EXPECT_TRUE(fs::exists(d / "two" / "profile.json"));
  EXPECT_EQ(count(two.out, "done: "), 1u) << two.out;
  EXPECT_NE(two.out.find("(2 MPI ranks, each on its own engine)"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("in batches of 4 per rank (8 per step)"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("all-reduce per step: "), std::string::npos) << two.out;

  const auto want = last_row(d / "one" / "metrics.jsonl"), got = last_row(d / "two" / "metrics.jsonl");
  for (const char* key : {"train_loss", "test_loss"}) EXPECT_NEAR(got[key].get<double>(), want[key].get<double>(), 1e-4) << key;
  EXPECT_NEAR(got["test_accuracy"].get<double>(), want["test_accuracy"].get<double>(), 0.051);  // at most one of 20 images
  EXPECT_EQ(oa::ml::read_safetensors_metadata(d / "two" / "optimizer.safetensors").at("step"), "5");
  EXPECT_TRUE(fs::exists(d / "two" / "plot.png"));
  fs::copy(d / "one", d / "one_then_two");
  fs::copy(d / "one", d / "mid_epoch");
  fs::rename(d / "two", d / "two_then_one");

  // --resume under MPI, also with another number of ranks: every rank
  // continues from rank 0's checkpoint at the next image of the epoch's order.
  // 2 ranks of 4 continued by 1 process of 8, and 1 of 8 by 2 of 4, train as
  // 1 process of 8 throughout.
  const std::vector<std::string> more = {"--resume", "--epochs", "2"};
  const OaRun one_more = d.oa(common + std::vector<std::string>{"--batch-size", "8", "--out", "one"} + more);
  ASSERT_TRUE(succeeded(one_more)) << one_more.err;
  const OaRun two_then_one = d.oa(common + std::vector<std::string>{"--batch-size", "8", "--out", "two_then_one"} + more);
  ASSERT_TRUE(succeeded(two_then_one)) << two_then_one.out << two_then_one.err;
  const OaRun one_then_two = d.mpirun(2, common + std::vector<std::string>{"--batch-size", "4", "--out", "one_then_two"} + more);
  ASSERT_TRUE(succeeded(one_then_two)) << one_then_two.out << one_then_two.err;
  EXPECT_EQ(count(one_then_two.out, "resumed from one_then_two/model.safetensors at epoch 2 step 0"), 1u) << one_then_two.out;
  EXPECT_EQ(last_row(d / "one_then_two" / "metrics.jsonl")["epoch"], 2);
  for (const char* run : {"two_then_one", "one_then_two"})
    expect_same_metrics(d / run / "metrics.jsonl", d / "one" / "metrics.jsonl", {"train_loss", "test_loss"});

  // A checkpoint saved within an epoch at image 24 (after 3 of its 5 steps of
  // 8), resumed by 2 ranks of 2 (10 steps of 4 an epoch): the epoch's last 16
  // images are its steps 6 to 9.
  edit_run_metadata(d / "mid_epoch" / "model.safetensors", [](nlohmann::json& meta) {
    meta["step"] = 3;
    meta["state"] = {{"epoch", 0}, {"position", 24}, {"train_loss_sum", 24 * 2.0}, {"images_seen", 24}};
  });
  fs::remove(d / "mid_epoch" / "metrics.jsonl");
  const OaRun mid = d.mpirun(2, common + std::vector<std::string>{"--batch-size", "2", "--out", "mid_epoch", "--resume"});
  ASSERT_TRUE(succeeded(mid)) << mid.out << mid.err;
  EXPECT_EQ(count(mid.out, "resumed from mid_epoch/model.safetensors at epoch 1 step 6"), 1u) << mid.out;
  EXPECT_EQ(count(mid.out, "epoch 1/1 from image 24 of 40"), 1u) << mid.out;
  EXPECT_EQ(oa::ml::read_safetensors_metadata(d / "mid_epoch" / "optimizer.safetensors").at("step"), "9");  // 5 + 4
  const auto saved = nlohmann::json::parse(oa::ml::read_safetensors_metadata(d / "mid_epoch" / "model.safetensors").at("oa.run"));
  EXPECT_EQ(saved["step"], 10);
  EXPECT_EQ(saved["optimizer_steps"], 9);
  EXPECT_EQ(saved["state"]["epoch"], 1);
  EXPECT_EQ(rows(d / "mid_epoch" / "metrics.jsonl").size(), 1u);
}

TEST(DistCli, InfoShowsEachRankAndTheSize) {
  CliDir d;
  const OaRun info = d.mpirun(2, {"info"});
  ASSERT_TRUE(succeeded(info)) << info.err;
  for (const char* rank : {"rank 0 of 2 (local rank 0)", "rank 1 of 2 (local rank 1)"}) EXPECT_EQ(count(info.out, rank), 1u) << info.out;
}

// Without --batch-size the default is the global batch: 2 ranks take 32 of
// the 64 windows each and train as 1 process does; 3 ranks take 22 each.
TEST(DistCli, TheDefaultBatchIsSplitAcrossTheRanks) {
  CliDir d;
  write_text(d / "fox.txt");
  const std::vector<std::string> common = {"train",  "text", "--input", "fox.txt", "--context", "8",        "--layers", "1",
                                           "--heads", "2",   "--width", "16",      "--steps",   "2", "--eval-every", "1"};
  ASSERT_TRUE(succeeded(d.oa(common + std::vector<std::string>{"--out", "one"})));
  const OaRun two = d.mpirun(2, common + std::vector<std::string>{"--out", "two"});
  ASSERT_TRUE(succeeded(two)) << two.out << two.err;
  EXPECT_EQ(count(two.out, "batches of 32 windows per rank (64 per step)"), 1u) << two.out;
  expect_same_metrics(d / "two" / "metrics.jsonl", d / "one" / "metrics.jsonl", {"train_loss", "validation_bpc"});
  const OaRun three = d.mpirun(3, common + std::vector<std::string>{"--out", "three"});
  ASSERT_TRUE(succeeded(three)) << three.out << three.err;
  EXPECT_EQ(count(three.out, "batches of 22 windows per rank (66 per step)"), 1u) << three.out;
}

// oa train text under MPI: 2 ranks of 4 windows train as 1 process of 8 (the
// run checks at each checkpoint that the ranks' weights are identical), and
// 1 process of 8 continues the 2 ranks' run.
TEST(DistCli, TextTrainsOnTwoRanksLikeOneProcessAndResumesOnOne) {
  CliDir d;
  write_text(d / "fox.txt");
  const std::vector<std::string> common = {"train",  "text", "--input", "fox.txt", "--context", "8", "--layers", "1",
                                           "--heads", "2",   "--width", "16",      "--eval-every", "1"};
  const std::vector<std::string> one = {"--batch-size", "8"}, two = {"--batch-size", "4"}, more = {"--resume", "--steps", "4"};
  ASSERT_TRUE(succeeded(d.oa(common + one + std::vector<std::string>{"--steps", "2", "--out", "one"})));
  const OaRun first =
      d.mpirun(2, common + two + std::vector<std::string>{"--steps", "2", "--out", "two_then_one", "--bucket-mb", "0.01"});
  ASSERT_TRUE(succeeded(first)) << first.out << first.err;
  EXPECT_EQ(count(first.out, "(2 MPI ranks, each on its own engine)"), 1u) << first.out;
  EXPECT_EQ(count(first.out, "batches of 4 windows per rank (8 per step)"), 1u) << first.out;
  EXPECT_EQ(count(first.out, "step 2: validation"), 1u) << first.out;
  EXPECT_EQ(count(first.out, "all-reduce per step: "), 2u) << first.out;  // one line per validation
  expect_same_metrics(d / "two_then_one" / "metrics.jsonl", d / "one" / "metrics.jsonl", {"train_loss", "validation_bpc"});

  ASSERT_TRUE(succeeded(d.oa(common + one + std::vector<std::string>{"--out", "one"} + more)));
  const OaRun two_then_one = d.oa(common + one + std::vector<std::string>{"--out", "two_then_one"} + more);
  ASSERT_TRUE(succeeded(two_then_one)) << two_then_one.err;
  EXPECT_EQ(count(two_then_one.out, "resumed from two_then_one/model.safetensors at step 2"), 1u) << two_then_one.out;
  expect_same_metrics(d / "two_then_one" / "metrics.jsonl", d / "one" / "metrics.jsonl", {"train_loss", "validation_bpc"});
  EXPECT_TRUE(fs::exists(d / "two_then_one" / "plot.png"));
}

// A captured step cannot hold the all-reduces: every rank refuses
// --step-graph alike before any work and exits 2 (a bad flag) without
// MPI_Abort, rank 0 alone printing the one line. (mpirun adds its own note of
// the nonzero exit.)
TEST(DistCli, StepGraphIsRefusedOnEveryRankAlike) {
  CliDir d;
  write_text(d / "fox.txt");
  const OaRun graph = d.mpirun(2, std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "graph", "--step-graph"} + kTinyText);
  ASSERT_TRUE(WIFEXITED(graph.status)) << graph.err;
  EXPECT_EQ(WEXITSTATUS(graph.status), 2) << graph.err;
  EXPECT_EQ(count(graph.err, "oa: "), 1u) << graph.err;
  EXPECT_EQ(count(graph.err, "oa: --step-graph trains in one process only"), 1u) << graph.err;
  EXPECT_EQ(count(graph.err, "MPI_ABORT"), 0u) << graph.err;
  EXPECT_TRUE(graph.out.empty()) << graph.out;
  EXPECT_FALSE(fs::exists(d / "graph"));
}

}  // namespace
