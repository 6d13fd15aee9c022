#!/usr/bin/env bash
# Set up if needed, build, and run every test on the default device with the
# Vulkan validation layers (synchronization validation included) on: the C++
# groups under ctest (arguments go to ctest), then the Python package's pytest
# suite against the module built in build/python, with the interpreter it was
# built for.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
scripts/build.sh
export OA_VALIDATION=1
(cd build && ctest --output-on-failure "$@")
python=$(sed -n 's/^Python3_EXECUTABLE:FILEPATH=//p' build/CMakeCache.txt)
PYTHONPATH="$PWD/build/python" "$python" -m pytest -q -p no:cacheprovider python/tests
