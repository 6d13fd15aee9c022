#!/usr/bin/env bash
# Builds oa, its tests and the fuzz targets with AddressSanitizer and
# UndefinedBehaviorSanitizer (clang-14, OA_FUZZ=ON) into build-san/, then runs
# the test groups there on the default device with the validation layers on.
# Arguments go to ctest (e.g. -R '^Conv$'); needs scripts/setup.sh --sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-san/CMakeCache.txt ]; then
  cmake -S . -B build-san -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOA_FUZZ=ON \
    -DOA_BUILD_BENCH=OFF >/dev/null
fi
cmake --build build-san -j"$(nproc)"
. scripts/sanitizer-env.sh
export OA_VALIDATION=1
cd build-san && ctest --output-on-failure "$@"
