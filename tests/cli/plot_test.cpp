#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "plot.hpp"
#include "support/temp_dir.hpp"

namespace {

using oa_cli::axis_range;

TEST(CliPlot, SingleAndConstantSeriesGetSensibleAxes) {
  // One epoch: one x, one accuracy. The accuracy axis stays within [0, 1].
  auto x = axis_range({1.0}, false);
  EXPECT_DOUBLE_EQ(x.lo, 0.0);
  EXPECT_DOUBLE_EQ(x.hi, 2.0);
  auto y = axis_range({0.85}, true);
  EXPECT_LT(y.lo, 0.85);
  EXPECT_GT(y.hi, 0.85);
  EXPECT_GE(y.lo, 0.0);
  EXPECT_LE(y.hi, 1.0);
  y = axis_range({1.0, 1.0}, true);
  EXPECT_DOUBLE_EQ(y.hi, 1.0);
  EXPECT_NEAR(y.lo, 0.9, 1e-12);
  y = axis_range({0.0}, true);
  EXPECT_DOUBLE_EQ(y.lo, 0.0);
  EXPECT_DOUBLE_EQ(y.hi, 1.0);
  // A large single x (a step count) gets a proportionate range.
  x = axis_range({3000.0}, false);
  EXPECT_DOUBLE_EQ(x.lo, 2850.0);
  EXPECT_DOUBLE_EQ(x.hi, 3150.0);
  // A constant loss above 1 is padded on both sides.
  y = axis_range({2.5, 2.5}, true);
  EXPECT_NEAR(y.lo, 2.25, 1e-12);
  EXPECT_NEAR(y.hi, 2.75, 1e-12);
  y = axis_range({-2.0}, true);
  EXPECT_NEAR(y.lo, -2.2, 1e-12);
  EXPECT_NEAR(y.hi, -1.8, 1e-12);
}

TEST(CliPlot, SpreadSeriesArePaddedButNotPastZeroOrOne) {
  auto y = axis_range({0.80, 0.90, 0.999}, true);
  EXPECT_NEAR(y.lo, 0.80 - 0.199 * 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(y.hi, 1.0);  // 0.99 + 5% of the span would pass 1
  y = axis_range({0.01, 0.5}, true);
  EXPECT_DOUBLE_EQ(y.lo, 0.0);
  y = axis_range({1.5, 0.3}, true);  // a loss: may pass 1, not 0
  EXPECT_NEAR(y.hi, 1.56, 1e-12);
  EXPECT_NEAR(y.lo, 0.24, 1e-12);
  y = axis_range({-1.0, 1.0}, true);  // data on both sides of 0: padded freely
  EXPECT_NEAR(y.lo, -1.1, 1e-12);
  EXPECT_DOUBLE_EQ(y.hi, 1.0);
  const auto x = axis_range({1.0, 2.0, 3.0}, false);
  EXPECT_DOUBLE_EQ(x.lo, 1.0);
  EXPECT_DOUBLE_EQ(x.hi, 3.0);
}

TEST(CliPlot, NoFiniteValueGivesTheUnitRange) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (bool pad : {false, true}) {
    auto r = axis_range({}, pad);
    EXPECT_EQ(r.lo, 0.0);
    EXPECT_EQ(r.hi, 1.0);
    r = axis_range({nan, inf, -inf}, pad);
    EXPECT_EQ(r.lo, 0.0);
    EXPECT_EQ(r.hi, 1.0);
  }
  const auto y = axis_range({nan, 0.5, inf, 0.7}, true);
  EXPECT_NEAR(y.lo, 0.49, 1e-12);
  EXPECT_NEAR(y.hi, 0.71, 1e-12);
}

TEST(CliPlot, TicksAreRoundNumbersAndWholeForEpochs) {
  using V = std::vector<double>;
  EXPECT_EQ(oa_cli::axis_ticks({0, 2}, true), (V{0, 1, 2}));         // one epoch: no 0.5, 1.5
  EXPECT_EQ(oa_cli::axis_ticks({1, 10}, true), (V{2, 4, 6, 8, 10}));
  EXPECT_EQ(oa_cli::axis_ticks({250, 3000}, true), (V{1000, 2000, 3000}));
  const V y = oa_cli::axis_ticks({-0.05, 0.95}, false);  // step 0.2, and 0 is not written "-0"
  ASSERT_EQ(y.size(), 5u);
  EXPECT_FALSE(std::signbit(y[0]));
  EXPECT_NEAR(y[4], 0.8, 1e-12);
}

TEST(CliPlot, WritesAPngForASingleEpochRun) {
  oa::test::TempDir dir;
  std::vector<oa_cli::Panel> panels(2);
  panels[0] = {"loss", {{"train loss", {1}, {0.6}}, {"test loss", {1}, {0.5}}}};
  panels[1] = {"test accuracy", {{"test accuracy", {1}, {0.83}}}};
  oa_cli::write_line_chart((dir / "plot.png").string(), panels);
  const auto bytes = oa::test::read_file(dir / "plot.png");
  ASSERT_GT(bytes.size(), 8u);
  EXPECT_EQ(bytes[1], 'P');
  EXPECT_EQ(bytes[2], 'N');
  EXPECT_EQ(bytes[3], 'G');
  EXPECT_FALSE(std::filesystem::exists(dir / "plot.png.tmp"));
}

}  // namespace
