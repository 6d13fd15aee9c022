// oa train --profile: profile.json in the run directory and the table on
// stdout name the model's ops, with positive GPU times per step, over the
// steps after the warmup.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "cli/cli_support.hpp"

namespace {

using namespace oa::test::cli;

// Checks `run`/profile.json of a run whose profile holds `steps` steps and
// names every op of `ops`, and the table printed in `out`.
void expect_profile(const CliDir& d, const std::string& run, const OaRun& r, std::uint64_t steps, const std::vector<std::string>& ops) {
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.err;
  const auto doc = nlohmann::json::parse(read_text(d / run / "profile.json"));
  EXPECT_EQ(doc["steps"].get<std::uint64_t>(), steps);
  EXPECT_EQ(doc["after_steps"].get<std::int64_t>(), 3);
  EXPECT_GT(doc["gpu_ms_per_step"].get<double>(), 0.0);
  std::set<std::string> named;
  double sum = 0;
  for (const auto& op : doc["ops"]) {
    named.insert(op["op"].get<std::string>());
    EXPECT_GE(op["calls"].get<std::uint64_t>(), steps) << op.dump();  // every op of the profile runs in every step
    EXPECT_GE(op["gpu_ms"].get<double>(), 0.0) << op.dump();
    EXPECT_DOUBLE_EQ(op["gpu_ms_per_step"].get<double>() * static_cast<double>(steps), op["gpu_ms"].get<double>()) << op.dump();
    sum += op["gpu_ms"].get<double>();
  }
  EXPECT_DOUBLE_EQ(sum, doc["gpu_ms"].get<double>());
  for (const auto& op : ops) {
    EXPECT_TRUE(named.count(op)) << op << " not in " << doc.dump();
    EXPECT_NE(r.out.find(op), std::string::npos) << op << " not in " << r.out;
  }
  EXPECT_NE(r.out.find(fmt::format("GPU time per op over {} training step(s) after the first 3", steps)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu ms/step"), std::string::npos) << r.out;
}

TEST(CliProfile, TextSteps) {
  CliDir d;
  write_text(d / "fox.txt");
  const std::vector<std::string> flags = {"--context", "8", "--layers", "1", "--heads", "2", "--width", "16", "--batch-size", "4"};
  // Validation after step 3 is left out, as are steps 1 to 3.
  const OaRun r = d.oa(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run", "--steps", "5", "--eval-every",
                                                "3", "--profile"} +
                       flags);
  expect_profile(d, "run", r, 2,
                 {"oa::ml::linear", "oa::ml::linear backward", "oa::ml::layer_norm", "oa::ml::embedding", "oa::ml::cross_entropy"});
  EXPECT_TRUE(fails_cleanly(d.oa(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "other", "--profile",
                                                          "--step-graph"} +
                                 flags),
                            {"--profile", "--step-graph"}));
}

TEST(CliProfile, ImagesSteps) {
  CliDir d;
  write_fashion_mnist(d / "data", 10, 2);
  const OaRun r = d.oa({"train", "fashion-mnist", "--data", "data", "--quick", "--batch-size", "2", "--out", "run", "--profile"});
  expect_profile(d, "run", r, 2, {"oa::ml::conv_2d", "oa::ml::conv_2d backward", "oa::ml::linear", "oa::ml::cross_entropy"});
}

}  // namespace
