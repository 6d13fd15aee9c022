#!/usr/bin/env bash
# Builds oa, its tests and the fuzz targets with AddressSanitizer and
# UndefinedBehaviorSanitizer (clang-14, OA_FUZZ=ON) into build-san/, then runs
# the test groups there on the default device with the validation layers on
# (OA_VALIDATION=0 leaves them off).
# Arguments go to ctest (e.g. -R '^Conv$'); needs scripts/setup.sh --sanitizers.
# OA_FUZZ_COVERAGE=OFF (read when build-san/ is first configured) leaves out
# libFuzzer's coverage instrumentation: the fuzz targets then only replay
# their corpora (scripts/fuzz.sh --corpus), and the build and the suite cost less.
# -O1 with line tables only: stack traces keep file and line, and the build
# (every object compiled again, with instrumentation) costs less than -O2 -g;
# a unity build (as scripts/build.sh) costs less again.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-san/CMakeCache.txt ]; then
  cmake -S . -B build-san -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -gline-tables-only -DNDEBUG' -DOA_FUZZ=ON \
    -DOA_BUILD_BENCH=OFF -DOA_FUZZ_COVERAGE="${OA_FUZZ_COVERAGE:-ON}" -DCMAKE_UNITY_BUILD=ON >/dev/null
fi
cmake --build build-san -j"$(nproc)"
. scripts/sanitizer-env.sh
export OA_VALIDATION="${OA_VALIDATION:-1}"
cd build-san && ctest --output-on-failure "$@"
