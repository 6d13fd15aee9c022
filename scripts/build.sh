#!/usr/bin/env bash
# Configures and builds oa (Release) into build/. Arguments go to cmake --build
# (e.g. --target oa_cli).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build -j"$(nproc)" "$@"
