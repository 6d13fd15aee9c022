// Test entry point: any Vulkan validation message fails the run.
// OA_TEST_SKIP (gtest patterns separated by ':') leaves out more tests: the
// sanitizer run of CI (.ci/run) leaves out numeric sweeps that the Release
// suite runs, to stay within CI's time.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

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
  if (const char* skip = std::getenv("OA_TEST_SKIP"); skip && *skip) {
    const std::string filter = GTEST_FLAG_GET(filter);
    GTEST_FLAG_SET(filter, filter + (filter.find('-') == std::string::npos ? "-" : ":") + skip);
  }
  auto* listener = new ValidationListener;  // owned by gtest
  testing::UnitTest::GetInstance()->listeners().Append(listener);
  int rc = RUN_ALL_TESTS();
  if (listener->failed()) {
    std::cerr << "FAILED: Vulkan validation messages were reported\n";
    rc = 1;
  }
  return rc;
}
