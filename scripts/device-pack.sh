#!/usr/bin/env bash
# Bundles what a GPU-machine run needs beyond .gl's loader (../shared/DEVICE.md)
# into .gl/pack: the stripped binaries of build/ and the datasets (the GPU
# machine has no Debian packages), so that a run carries only .gl.
#   oa, oa_tests, oa_bench; fashion-mnist/*.gz; fortunes.txt (the concatenated
#   text `oa train text` reads by default).
set -euo pipefail
cd "$(dirname "$0")/.."
pack=.gl/pack
rm -rf "$pack" && mkdir -p "$pack/fashion-mnist"
for b in apps/oa/oa tests/oa_tests bench/oa_bench; do strip -o "$pack/$(basename "$b")" "build/$b"; done
cp /usr/share/datasets/fashion-mnist/*.gz "$pack/fashion-mnist/"
python3 -c "import sys; sys.path.insert(0, 'bench/twins'); import common; sys.stdout.buffer.write(common.fortune_text())" \
  > "$pack/fortunes.txt"
du -sh .gl
