#include <gtest/gtest.h>

#include "oa/oa.hpp"

TEST(RuntimeEngine, Smoke) {
  oa::Engine e = oa::Engine::default_engine();
  auto a = oa::Matrix::from_vector({2, 2}, std::vector<float>{1, 2, 3, 4});
  auto b = oa::Matrix::full({2, 2}, 10.0f);
  auto c = a + b;
  EXPECT_EQ(c.to_vector(), (std::vector<float>{11, 12, 13, 14}));
}
