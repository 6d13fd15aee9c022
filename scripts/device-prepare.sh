#!/usr/bin/env bash
# Prepares .gl/ for runs on the GPU machine (see ../shared/DEVICE.md): the
# shared loader packages plus what oa's binaries and tests need there
# (libfmt9, libpng16, the validation layers).
set -euo pipefail
cd "$(dirname "$0")/.."
../shared/device/prepare.sh >/dev/null
# A fresh H200 machine's NVIDIA Vulkan driver needs glvnd (seen 2026-11-30:
# without these, vkCreateInstance finds no driver). vk-env.sh unpacks them into /.
(cd .gl && for p in libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2; do
  ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null 2>&1
done)
# Extras are unpacked outside / (unpacking more into / can break the machine).
mkdir -p .gl/extra && cd .gl/extra
for p in libfmt9 libpng16-16; do
  ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null 2>&1
done
# The validation layers come from Debian trixie (1.4.309; bookworm's 1.3.239
# does not know cooperative matrices or SPIR-V 1.6), with trixie's loader of
# the same version (found first through LD_LIBRARY_PATH: a 1.3 loader under a
# 1.4 layer makes the layer report the loader's own device-level lookups of
# instance functions). They need glibc 2.38 and libstdc++ 14, which the GPU
# machine (Ubuntu 24.04) has. A private apt state in /tmp leaves this
# machine's sources alone.
if ! ls vulkan-validationlayers_1.4*.deb libvulkan1_1.4*.deb >/dev/null 2>&1; then
  rm -f vulkan-validationlayers_*.deb libvulkan1_*.deb
  t=/tmp/oa-trixie-apt && mkdir -p $t/lists/partial $t/cache/archives/partial
  echo "deb http://deb.debian.org/debian trixie main" > $t/sources.list
  o="-o Dir::Etc::SourceList=$t/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$t/lists -o Dir::Cache=$t/cache"
  apt-get $o update >/dev/null 2>&1 && apt-get $o download vulkan-validationlayers libvulkan1 >/dev/null 2>&1
fi
cat > env.sh <<'ENV'
# Sourced after .gl/vk-env.sh on the GPU machine.
for f in .gl/extra/*.deb; do dpkg -x "$f" /opt/oa-extra; done
export LD_LIBRARY_PATH=/opt/oa-extra/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VK_LAYER_PATH=/opt/oa-extra/usr/share/vulkan/explicit_layer.d
ENV
echo "ready: run scripts/device-pack.sh after building, carry .gl; begin commands with: . .gl/vk-env.sh; . .gl/extra/env.sh;"
