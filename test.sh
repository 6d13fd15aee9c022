#!/usr/bin/env bash
# Set up if needed, build, and run every test on the default device with the
# Vulkan validation layers (synchronization validation included) on.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
scripts/build.sh
export OA_VALIDATION=1
cd build && ctest --output-on-failure "$@"
