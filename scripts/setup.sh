#!/usr/bin/env bash
# Installs what oa needs on Debian 12 with apt-get (scripts/setup.sh
# [--sanitizers]). Idempotent: quiet and fast when everything is present. Lavapipe (the CPU Vulkan driver) comes from
# bookworm-backports (Mesa 25), which runs compute several times faster than
# Mesa 22.3; so does scikit-build-core, which builds the `oa` Python package.
set -euo pipefail

packages=(cmake g++ make pkg-config glslc spirv-tools libvulkan-dev vulkan-tools
  vulkan-validationlayers libgtest-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  zlib1g-dev libpng-dev dataset-fashion-mnist fortunes python3-dev python3-venv pybind11-dev python3-numpy
  python3-pytest openmpi-bin libopenmpi-dev)
# Installed from bookworm-backports (checked by their ~bpo12 versions).
backports=(mesa-vulkan-drivers python3-scikit-build-core)
# --sanitizers adds what scripts/sanitize.sh and scripts/fuzz.sh need: clang
# with the sanitizer and libFuzzer runtimes, and llvm-symbolizer for reports.
if [ "${1:-}" = "--sanitizers" ]; then packages+=(clang-14 libclang-rt-14-dev llvm-14); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
missing_backports=()
for p in "${backports[@]}"; do
  dpkg-query -W -f='${Status} ${Version}' "$p" 2>/dev/null | grep -q "install ok installed .*bpo12" || missing_backports+=("$p")
done

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

if [ ${#missing[@]} -ne 0 ] || [ ${#missing_backports[@]} -ne 0 ]; then
  echo "oa setup: installing ${missing[*]}; from bookworm-backports: ${missing_backports[*]}"
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" | $sudo tee /etc/apt/sources.list.d/oa-backports.list >/dev/null
  fi
  $sudo apt-get update -qq
  [ ${#missing[@]} -eq 0 ] || $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ ${#missing_backports[@]} -eq 0 ] ||
    $sudo apt-get install -y -qq --no-install-recommends -t bookworm-backports "${missing_backports[@]}" >/dev/null
fi

# glslang 15.1 for the cooperative-matrix shaders (GL_KHR_cooperative_matrix is
# newer than Debian 12's glslang 12): built once from Debian trixie's source
# package (a deb-src line only, so no trixie binary is ever installed) into
# ~/.cache/oa, where cmake/Shaders.cmake looks for it.
# A step with caches of its own (XDG_CACHE_HOME, as .ci/run's 4-lane step
# sets for lavapipe) uses the one already built in ~/.cache, where cmake also looks.
glslang_dir="${XDG_CACHE_HOME:-$HOME/.cache}/oa/glslang-15.1"
[ -x "$HOME/.cache/oa/glslang-15.1/bin/glslangValidator" ] && glslang_dir="$HOME/.cache/oa/glslang-15.1"
if [ ! -x "$glslang_dir/bin/glslangValidator" ]; then
  echo "oa setup: building glslang 15.1 from Debian trixie's source package into $glslang_dir"
  for p in dpkg-dev python3 cmake g++ make; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      $sudo apt-get install -y -qq --no-install-recommends "$p" >/dev/null
  done
  src_list=/etc/apt/sources.list.d/oa-trixie-src.list
  if [ ! -f "$src_list" ]; then
    echo "deb-src http://deb.debian.org/debian trixie main" | $sudo tee "$src_list" >/dev/null
    $sudo apt-get update -qq
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # Upstream's tree as released: Debian's patches only touch pkg-config files,
  # and one of them breaks a configure without the optimizer.
  (cd "$work" && apt-get source -qq --download-only glslang/trixie >/dev/null 2>&1 &&
    dpkg-source -x --skip-patches glslang_*.dsc src >/dev/null 2>&1)
  [ -f "$work/src/CMakeLists.txt" ] || { echo "oa setup: apt-get source glslang/trixie failed" >&2; exit 1; }
  cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DENABLE_OPT=OFF \
    -DENABLE_HLSL=OFF -DGLSLANG_TESTS=OFF -DCMAKE_INSTALL_PREFIX="$glslang_dir" >"$work/log" 2>&1 &&
    cmake --build "$work/build" --target glslang-standalone -j"$(nproc)" >>"$work/log" 2>&1 ||
    { cat "$work/log" >&2; exit 1; }
  mkdir -p "$glslang_dir/bin"
  cp "$(find "$work/build" -type f -name glslang -perm -u+x | head -n1)" "$glslang_dir/bin/glslangValidator"
fi
