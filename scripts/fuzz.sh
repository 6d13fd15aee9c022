#!/usr/bin/env bash
# Runs each libFuzzer target of build-san/ (built by scripts/sanitize.sh) over
# its corpus fuzz/corpus/<target>/, one after the other: with --corpus, every
# corpus input once and nothing else (what CI runs: the same inputs on every
# run, checked before landing); otherwise exploring for SECONDS (default 60)
# from a random seed. New inputs go to build-san/fuzz/new/<target>/, crashes
# to build-san/fuzz/crash-*; merge new inputs into the corpus with
#   build-san/fuzz/fuzz_<target> -merge=1 fuzz/corpus/<target> build-san/fuzz/new/<target>
# Usage: scripts/fuzz.sh [SECONDS | --corpus] [TARGET...] (targets: safetensors idx ops).
set -euo pipefail
cd "$(dirname "$0")/.."
budget=(-max_total_time="${1:-60}")
[ "${1:-}" = --corpus ] && budget=(-runs=0)
if [ "${1:-}" != --corpus ] && grep -q '^OA_FUZZ_COVERAGE:BOOL=OFF' build-san/CMakeCache.txt; then
  echo "build-san/ was built without coverage (OA_FUZZ_COVERAGE=OFF): it can replay the corpora (--corpus), not explore;"
  echo "rebuild it with coverage: rm -rf build-san && scripts/sanitize.sh"
  exit 1
fi
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors idx ops)
. scripts/sanitizer-env.sh
# fuzz_ops checks for leaked storages itself and LeakSanitizer still runs at
# exit; its per-input leak check (a full heap scan each time the driver keeps
# an allocation) would cost most of the run.
declare -A flags=([safetensors]="-max_len=4096" [idx]="-max_len=4096" [ops]="-max_len=256 -detect_leaks=0")
for t in "${targets[@]}"; do
  mkdir -p "build-san/fuzz/new/$t"
  log="build-san/fuzz/$t.log"
  start=$SECONDS
  # shellcheck disable=SC2086
  if ! "build-san/fuzz/fuzz_$t" "${budget[@]}" -timeout=60 -rss_limit_mb=6144 -malloc_limit_mb=512 \
    -len_control=0 -print_final_stats=1 ${flags[$t]} \
    -artifact_prefix=build-san/fuzz/crash- "build-san/fuzz/new/$t" "fuzz/corpus/$t" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz_$t failed: the input is build-san/fuzz/crash-*, the log $log"
    exit 1
  fi
  echo "fuzz_$t: $(grep -o 'number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$') executions in $((SECONDS - start)) s, no crash"
done
