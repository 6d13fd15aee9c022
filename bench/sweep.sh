#!/usr/bin/env bash
# The whole benchmark sweep in one run: oa_bench, its PyTorch twins on the
# same device (CUDA when PyTorch has it, else the CPU), and the merged report,
# into the folder given (default: $OUT, else ./bench-out). Further arguments go
# to oa_bench (e.g. --family gemm, or --quick for a check on lavapipe).
# Each side starts no case after OA_SECONDS / TORCH_SECONDS (default 180 and
# 120), so that the sweep fits one device call of about 6 minutes. PYTHON
# names the interpreter with PyTorch (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-bench-out}}
shift || true
mkdir -p "$out"
# The newer of the packed (scripts/device-pack.sh) and the built binary.
bench=build/bench/oa_bench
[ -x .gl/pack/oa_bench ] && { [ ! -x "$bench" ] || [ .gl/pack/oa_bench -nt "$bench" ]; } && bench=.gl/pack/oa_bench
py=${PYTHON:-python3}
# A failed case is reported in the JSON and the table; go on to the report.
"$bench" --max-seconds "${OA_SECONDS:-180}" --out "$out/oa.json" "$@" | tee "$out/oa.log" || true
"$py" bench/torch_compare.py "$out/oa.json" --out "$out/torch.json" --max-seconds "${TORCH_SECONDS:-120}" \
  | tee "$out/torch.log" || true
"$py" bench/report.py "$out/oa.json" "$out/torch.json" -o "$out/performance.md"
