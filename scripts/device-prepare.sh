#!/usr/bin/env bash
# Prepares .gl/ for runs on the GPU machine (see ../shared/DEVICE.md): the
# shared loader packages plus what oa's binaries and tests need there
# (libfmt9, the validation layers).
set -euo pipefail
cd "$(dirname "$0")/.."
../shared/device/prepare.sh >/dev/null
cd .gl
for p in libfmt9 vulkan-validationlayers; do
  ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null 2>&1
done
echo "ready: carry .gl and build; begin commands with: . .gl/vk-env.sh;"
