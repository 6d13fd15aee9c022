// `mpirun -np 2 oa train fashion-mnist` (ctest DistCli): two ranks with half
// the batch each train like one process with the whole batch, rank 0 alone
// prints and writes the run directory, --resume continues on every rank, and
// a run that fails on its ranks ends the job with the error.
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

nlohmann::json last_row(const fs::path& metrics) {
  std::istringstream in(read_text(metrics));
  std::string line, last;
  while (std::getline(in, line)) last = line;
  return nlohmann::json::parse(last);
}

TEST(DistCli, TwoRanksTrainLikeOneProcessWithTheGlobalBatch) {
  CliDir d;
  write_fashion_mnist(d / "data", 40, 20);  // 5 steps of 8 images
  const std::vector<std::string> common = {"train", "fashion-mnist", "--quick", "--data", "data", "--lr", "0.003"};
  const OaRun one = d.oa(common + std::vector<std::string>{"--batch-size", "8", "--out", "one"});
  ASSERT_TRUE(WIFEXITED(one.status) && WEXITSTATUS(one.status) == 0) << one.err;
  const OaRun two = d.mpirun(2, common + std::vector<std::string>{"--batch-size", "4", "--out", "two", "--bucket-mb", "0.001"});
  ASSERT_TRUE(WIFEXITED(two.status) && WEXITSTATUS(two.status) == 0) << two.out << two.err;
  EXPECT_EQ(count(two.out, "epoch 1: train loss"), 1u) << two.out;
  EXPECT_EQ(count(two.out, "done: "), 1u) << two.out;
  EXPECT_NE(two.out.find("(2 MPI ranks, each on its own engine)"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("in batches of 4 per rank (8 per step)"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("all-reduce per step: "), std::string::npos) << two.out;

  const auto want = last_row(d / "one" / "metrics.jsonl"), got = last_row(d / "two" / "metrics.jsonl");
  for (const char* key : {"train_loss", "test_loss"}) EXPECT_NEAR(got[key].get<double>(), want[key].get<double>(), 1e-4) << key;
  EXPECT_NEAR(got["test_accuracy"].get<double>(), want["test_accuracy"].get<double>(), 0.051);  // at most one of 20 images
  EXPECT_EQ(oa::ml::read_safetensors_metadata(d / "two" / "optimizer.safetensors").at("step"), "5");
  EXPECT_TRUE(fs::exists(d / "two" / "plot.png"));

  // --resume under MPI: every rank continues from rank 0's checkpoint.
  const OaRun one_more = d.oa(common + std::vector<std::string>{"--batch-size", "8", "--out", "one", "--resume", "--epochs", "2"});
  ASSERT_TRUE(WIFEXITED(one_more.status) && WEXITSTATUS(one_more.status) == 0) << one_more.err;
  const OaRun two_more =
      d.mpirun(2, common + std::vector<std::string>{"--batch-size", "4", "--out", "two", "--resume", "--epochs", "2"});
  ASSERT_TRUE(WIFEXITED(two_more.status) && WEXITSTATUS(two_more.status) == 0) << two_more.out << two_more.err;
  EXPECT_EQ(count(two_more.out, "resumed from two/model.safetensors at epoch 2 step 0"), 1u) << two_more.out;
  const auto want2 = last_row(d / "one" / "metrics.jsonl"), got2 = last_row(d / "two" / "metrics.jsonl");
  EXPECT_EQ(got2["epoch"], 2);
  for (const char* key : {"train_loss", "test_loss"}) EXPECT_NEAR(got2[key].get<double>(), want2[key].get<double>(), 1e-4) << key;

  // oa train text is one process only: every rank fails, and the job ends.
  const OaRun text = d.mpirun(2, {"train", "text", "--out", "text"});
  EXPECT_TRUE(WIFEXITED(text.status) && WEXITSTATUS(text.status) != 0);
  EXPECT_NE(text.err.find("oa: oa train text trains in one process only; run it without mpirun"), std::string::npos) << text.err;
}

}  // namespace
