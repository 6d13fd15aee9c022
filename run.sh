#!/usr/bin/env bash
# The main job: set up if needed, build, run on the default device.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
scripts/build.sh
exec ./build/apps/oa/oa info "$@"
