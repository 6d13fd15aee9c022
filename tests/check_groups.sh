#!/bin/sh
# Fails when a test suite's name does not start with one of the ctest groups,
# since such a suite would silently never run.
"$1" --gtest_list_tests | grep -v '^ ' | grep -vE '^(Core|Runtime|Matrix|Autograd|Conv|Attention|Nn|OpTable|Data|Cli|DistCli)' && {
  echo "test suites above match no ctest group (tests/CMakeLists.txt)"; exit 1; }
exit 0
