#!/usr/bin/env bash
# Builds and runs the project in this folder against oa in every supported way:
# find_package(oa) on a temporary install of BUILD_DIR, pkg-config (shared and
# --static flags) on that install, and add_subdirectory of SOURCE_DIR; with
# MPI (mpirun present) its oa::dist program too, through find_package(oa
# COMPONENTS dist), pkg-config oa-dist and add_subdirectory, run as one
# process and as two ranks. Also checks that the installed oa/oa.hpp reaches
# every public header. With OA_TEST_LIGHT=1 the add_subdirectory case compiles
# the parent's own sources only (not oa's library a second time).
# Usage: run.sh CMAKE CXX SOURCE_DIR BUILD_DIR
set -euo pipefail
cmake=$1 cxx=$2
src=$(realpath "$3") build=$(realpath "$4")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
step() { echo "== $*"; }
mpi=$(command -v mpirun || true)
# Runs the oa::dist program $1 alone and as two ranks.
run_dist() {
  "$1"
  "$mpi" -np 2 --oversubscribe --allow-run-as-root "$1"
}

step "install into a temporary prefix"
"$cmake" --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(find "$tmp/prefix" -name oa.pc)
[ -n "$pc" ] || { echo "oa.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
[ -z "$mpi" ] || [ -f "$PKG_CONFIG_PATH/oa-dist.pc" ] || { echo "oa-dist.pc was not installed"; exit 1; }

step "oa/oa.hpp includes every public header"
cflags=$(pkg-config --cflags oa)
# shellcheck disable=SC2086
"$cxx" -std=c++20 $cflags -fsyntax-only -H "$tmp/prefix/include/oa/oa.hpp" 2>&1 >/dev/null |
  sed -n 's/^\.\+ //p' | xargs -r realpath -m | sed -n "s|^$tmp/prefix/include/||p" | sort -u >"$tmp/reached"
(cd "$src/include" && find oa -name '*.hpp' ! -path oa/oa.hpp | sort) >"$tmp/public"
if ! diff "$tmp/public" "$tmp/reached"; then
  echo "oa/oa.hpp misses the headers marked < above (or the install misses those marked >)"
  exit 1
fi

step "find_package(oa)"
"$cmake" -S "$here" -B "$tmp/find" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
"$cmake" --build "$tmp/find" >/dev/null
"$tmp/find/external"
[ -z "$mpi" ] || run_dist "$tmp/find/external_dist"

step "pkg-config --cflags --libs oa (and --static)"
# shellcheck disable=SC2086
"$cxx" -std=c++20 $cflags -c "$here/main.cpp" -o "$tmp/main.o"
# shellcheck disable=SC2046
"$cxx" "$tmp/main.o" $(pkg-config --libs oa) -o "$tmp/pc_shared"
# shellcheck disable=SC2046
"$cxx" "$tmp/main.o" $(pkg-config --static --libs oa) -o "$tmp/pc_static"
"$tmp/pc_shared"
"$tmp/pc_static"
if [ -n "$mpi" ]; then
  step "pkg-config --cflags --libs oa-dist (and --static)"
  # shellcheck disable=SC2046
  "$cxx" -std=c++20 $(pkg-config --cflags oa-dist) -c "$here/dist_main.cpp" -o "$tmp/dist_main.o"
  # shellcheck disable=SC2046
  "$cxx" "$tmp/dist_main.o" $(pkg-config --libs oa-dist) -o "$tmp/pc_dist_shared"
  # shellcheck disable=SC2046
  "$cxx" "$tmp/dist_main.o" $(pkg-config --static --libs oa-dist) -o "$tmp/pc_dist_static"
  run_dist "$tmp/pc_dist_shared"
  run_dist "$tmp/pc_dist_static"
fi

step "add_subdirectory(oa)"
"$cmake" -S "$here" -B "$tmp/sub" -DCMAKE_CXX_COMPILER="$cxx" -DOA_SOURCE_DIR="$src" >/dev/null
for dir in tests bench apps; do
  if [ -e "$tmp/sub/oa/$dir" ]; then
    echo "a parent project should build only the oa library by default, yet oa/$dir was configured"
    exit 1
  fi
done
if [ "${OA_TEST_LIGHT:-0}" = 1 ]; then
  # Light mode: the parent's sources compile against oa's usage requirements;
  # the library's own sources are the ones the main build compiled.
  "$cmake" --build "$tmp/sub" --target main.cpp.o >/dev/null
  [ -z "$mpi" ] || "$cmake" --build "$tmp/sub" --target dist_main.cpp.o >/dev/null
  exit 0
fi
"$cmake" --build "$tmp/sub" -j"$(nproc)" >/dev/null
"$tmp/sub/external"
[ -z "$mpi" ] || run_dist "$tmp/sub/external_dist"
