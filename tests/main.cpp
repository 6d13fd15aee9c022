// Test entry point: any Vulkan validation message fails the run.
#include <gtest/gtest.h>

#include <iostream>

#include "oa/runtime/engine.hpp"

namespace {
class ValidationListener : public testing::EmptyTestEventListener {
 public:
  void OnTestStart(const testing::TestInfo&) override { before_ = oa::validation_message_count(); }
  void OnTestEnd(const testing::TestInfo& info) override {
    if (oa::validation_message_count() != before_) {
      std::cerr << "validation messages during " << info.test_suite_name() << "." << info.name() << "\n";
      failed_ = true;
    }
  }
  bool failed() const { return failed_; }

 private:
  std::uint64_t before_ = 0;
  bool failed_ = false;
};
}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  auto* listener = new ValidationListener;  // owned by gtest
  testing::UnitTest::GetInstance()->listeners().Append(listener);
  int rc = RUN_ALL_TESTS();
  if (listener->failed()) {
    std::cerr << "FAILED: Vulkan validation messages were reported\n";
    rc = 1;
  }
  return rc;
}
