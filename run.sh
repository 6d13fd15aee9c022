#!/usr/bin/env bash
# The main job: set up if needed, build the oa command line, and train a
# convnet on Fashion-MNIST on the default device (--quick: one epoch of a small
# network, about a minute on a 2-core machine without a GPU). Extra arguments
# go to `oa train fashion-mnist`.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
scripts/build.sh --target oa_cli
# Running it again starts afresh over the last run (--overwrite), unless the
# arguments say --resume or --overwrite themselves.
fresh=(--overwrite)
for a in "$@"; do [[ $a == --resume || $a == --overwrite ]] && fresh=(); done
exec ./build/apps/oa/oa train fashion-mnist --quick "${fresh[@]}" "$@"
