#!/usr/bin/env bash
# Installs what oa needs on Debian 12 with apt-get (scripts/setup.sh
# [--sanitizers]). Idempotent: quiet and fast when everything is present. Lavapipe (the CPU Vulkan driver) comes from
# bookworm-backports (Mesa 25), which runs compute several times faster than
# Mesa 22.3.
set -euo pipefail

packages=(cmake g++ make pkg-config glslc spirv-tools libvulkan-dev vulkan-tools
  vulkan-validationlayers libgtest-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  zlib1g-dev libpng-dev dataset-fashion-mnist fortunes)
# --sanitizers adds what scripts/sanitize.sh and scripts/fuzz.sh need: clang
# with the sanitizer and libFuzzer runtimes, and llvm-symbolizer for reports.
if [ "${1:-}" = "--sanitizers" ]; then packages+=(clang-14 libclang-rt-14-dev llvm-14); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
mesa_ok=0
if dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | grep -q bpo12; then mesa_ok=1; fi

if [ ${#missing[@]} -eq 0 ] && [ $mesa_ok -eq 1 ]; then exit 0; fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "oa setup: installing ${missing[*]} mesa-vulkan-drivers (bookworm-backports)"
if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "deb http://deb.debian.org/debian bookworm-backports main" | $sudo tee /etc/apt/sources.list.d/oa-backports.list >/dev/null
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
$sudo apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers >/dev/null
