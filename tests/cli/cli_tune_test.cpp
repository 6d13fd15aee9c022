// oa tune --quick on the test device: every variant of every tuning point
// runs over the quick shapes, and the table written loads back and steers an
// engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "cli/cli_support.hpp"
#include "oa/runtime/tuning.hpp"

namespace {

using namespace oa::test::cli;

TEST(CliTune, QuickWritesATableThatLoadsBack) {
  CliDir d;
  const OaRun r = d.oa({"tune", "--quick", "--out", "table.json"});
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out << r.err;
  const oa::TuningTable t = oa::TuningTable::load(d / "table.json");
  const oa::DeviceInfo& device = oa::Engine::default_engine().device();
  EXPECT_TRUE(t.matches(device));
  for (const oa::TuningPoint& p : oa::tuning_points()) EXPECT_FALSE(t.rules(p.name).empty()) << p.name;
  const auto doc = nlohmann::json::parse(read_text(d / "table.json"));
  EXPECT_EQ(doc["measurements"]["device"], device.name);
  for (const auto& c : doc["measurements"]["cases"]) {
    for (const auto& [variant, ms] : c["ms"].items()) EXPECT_GE(ms.get<double>(), 0.0) << c.dump();
    EXPECT_NE(r.out.find(c["case"].get<std::string>()), std::string::npos) << c.dump();
  }
  EXPECT_NE(r.out.find("wrote table.json"), std::string::npos) << r.out;
  // The conv points' last shape is a transposed convolution, keyed apart.
  const auto& conv = t.rules("conv.igemm_tile");
  EXPECT_TRUE(std::any_of(conv.begin(), conv.end(), [](const oa::TuningRule& rule) { return rule.when[5].first == 1; }));
  EXPECT_NE(r.out.find("hifigan_up4_64to32_k4_s2"), std::string::npos) << r.out;
  // The measured rules come first; other problems fall through to the shipped tables.
  const oa::Tuning tuning({t});
  const auto& first = t.rules("gemm.tile").front();
  EXPECT_EQ(tuning.choose("gemm.tile", {*first.when[0].first, *first.when[1].first, *first.when[2].first, *first.when[3].first}),
            first.variant);
}

// --quick without --out checks that the variants run and writes no table:
// not the user table under XDG_CACHE_HOME, which later engines would load.
TEST(CliTune, QuickAloneWritesNoTable) {
  CliDir d;
  const fs::path cache = d.work() / "cache";
  const char* previous = std::getenv("XDG_CACHE_HOME");
  const std::string saved = previous ? previous : "";
  setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  const OaRun r = d.oa({"tune", "--quick", "--points", "gemm.skinny"});
  if (previous)
    setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gemm.skinny"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no table written"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(cache / "oa" / "tuning")) << r.out;
}

TEST(CliTune, BadFlagsFailCleanly) {
  CliDir d;
  EXPECT_TRUE(usage_error(d.oa({"tune", "--repetitions", "0"}), {"--repetitions"}));
  // An unknown point is a bad flag value: named with the points there are.
  const OaRun unknown = d.oa({"tune", "--quick", "--points", "gemm.tile,nonexistent"});
  EXPECT_TRUE(usage_error(unknown, {"oa: --points", "unknown tuning point 'nonexistent'", "gemm.tile, "}));
  EXPECT_EQ(unknown.err.find("oa: oa"), std::string::npos) << unknown.err;
  EXPECT_TRUE(fails_cleanly(d.oa({"tune", "--quick", "--device", "no such device"}), {"no such device"}));
}

}  // namespace
