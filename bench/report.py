#!/usr/bin/env python3
"""Merges oa_bench's JSON and torch_compare.py's JSON into the benchmark
report (Markdown, docs/performance.md by default).

Usage: report.py OA.json TORCH.json [-o docs/performance.md]

A section of the existing output from "## Data-parallel training" on is kept.

The ratio is PyTorch time / oa time on wall time per step of the back-to-back
loop (above 1 means oa is faster); each family gets the geometric mean of its
ratios. Runs on quick shapes or off a GPU are labelled as such in the output.
"""
import argparse
import json
import math
import sys

KEPT_FROM = "## Data-parallel training"

REGENERATE = """\
## How to regenerate

On the GPU machine, in one device call (build here, `scripts/device-pack.sh`,
carry `.gl`; see `../shared/DEVICE.md`), from the project root:

```
. .gl/vk-env.sh; bench/sweep.sh $OUT
```

which runs `oa_bench --out $OUT/oa.json`, then
`bench/torch_compare.py $OUT/oa.json --out $OUT/torch.json`, then
`bench/report.py $OUT/oa.json $OUT/torch.json -o $OUT/performance.md`; copy
that file over this one. `oa_bench --estimate` prints the expected time of the sweep on an H200 (from
each case's FLOPs and bytes) without running it; `--family RE` and
`--filter RE` select families and cases; `--max-seconds S` on either side
stops starting cases after S seconds and still writes the JSON. A check on
lavapipe and Debian's CPU PyTorch: `oa_bench --quick` (tiny shapes under the
same names), then `torch_compare.py --device cpu`, then this script.

## Format

Per case, for oa and for PyTorch, the same step timed the same way:

- **GPU ms**: one step, synchronized, median of 5 (the defaults; the table
  above gives the run's): oa from the Vulkan timestamp before its first op to
  the one after its last, PyTorch between two CUDA events (on a CPU: the
  step's wall time); both include the GPU's gaps between kernels. The JSON
  also has oa's `gpu_kernels_ms`, the time inside its ops alone.
- **wall ms**: wall time per step of 20 steps issued back to back with one
  synchronize at the end (`engine.synchronize()`, `torch.cuda.synchronize()`),
  the better of 2 such loops, after 2 warm-up steps. This is what a training
  loop sees, and the ratio is taken on it.
- **PyTorch / oa**: PyTorch wall ms / oa wall ms; above 1 means oa is faster.
- **peak / reserved MiB**: device memory in use at most during the loops, and
  held by the allocator after them. Each oa case runs on a fresh Engine and
  PyTorch's cache is emptied before each case, so both are the case's own.
- **host** family (chains of tiny additions, and an AdamW step over many tiny
  parameters, 8 to a dispatch): oa's host time recording the loop (before
  the synchronize) per dispatch, and the loop's wall time per dispatch (oa) or
  per op (PyTorch; per parameter for AdamW): the runtime's cost per op.

FP32 throughout but for the 16-bit families: gemm16 (16-bit operands of
the internal GEMM, f32 results), conv16 and attention16 (the conv2d,
conv_transpose and attention layers with f32 leaves under F16 autocast,
`oa::AutocastGuard` and `torch.autocast`; oa's backward starts from the
output cast to f32, the twin's from the f16 output). TF32 off in PyTorch, PyTorch's default kernel choice
(cuDNN heuristics without benchmark mode; for attention, the dispatcher of
`scaled_dot_product_attention`, which takes the memory-efficient kernel for
FP32 on CUDA). Forward-and-backward cases (`_fwd_bwd`) run the forward and the
backward with dY = ones (cross entropy: the mean loss). Causal attention with
Sq != Sk is aligned bottom-right on both sides (PyTorch:
`causal_lower_right`). Case names give the model and layer the shape comes
from; the parameters are in the JSON.
"""


# The host family's extra columns: oa's host time recording per dispatch, and
# the wall time per dispatch (oa) or per op (PyTorch) of the back-to-back loop.
HOST_COLUMNS = " oa record us/dispatch | oa wall us/dispatch | PyTorch wall us/op |"


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def merge(oa, torch):
    """One row per oa case, in oa's order, with PyTorch's figures where they exist."""
    by_name = {c["name"]: c for c in torch["cases"]}
    rows = []
    for c in oa["cases"]:
        t = by_name.get(c["name"], {"error": "not run"})
        row = dict(name=c["name"], family=c["family"], oa=c, torch=t)
        if "error" not in c and "error" not in t and c["wall_ms"] > 0:
            row["ratio"] = t["wall_ms"] / c["wall_ms"]
            row["ratio_gpu"] = t["gpu_ms"] / c["gpu_ms"] if c["gpu_ms"] > 0 else float("nan")
        rows.append(row)
    return rows


def families(rows):
    out = {}
    for r in rows:
        out.setdefault(r["family"], []).append(r)
    return out


def fmt(x, digits=3):
    return "" if x is None else f"{x:.{digits}f}"


def errors(r):
    return "; ".join(f"{side}: {r[side]['error']}" for side in ("oa", "torch") if "error" in r[side])


def text_table(rows):
    """The terminal table: both times per case, the ratio, and each family's geomean."""
    lines = [f"{'case':<52} {'oa gpu':>9} {'oa wall':>9} {'pt gpu':>9} {'pt wall':>9} {'pt/oa':>6}"]
    for fam, rs in families(rows).items():
        for r in rs:
            if "ratio" not in r:
                lines.append(f"{r['name']:<52} {errors(r)}")
                continue
            o, t = r["oa"], r["torch"]
            lines.append(f"{r['name']:<52} {o['gpu_ms']:>9.3f} {o['wall_ms']:>9.3f} {t['gpu_ms']:>9.3f} "
                         f"{t['wall_ms']:>9.3f} {r['ratio']:>6.2f}")
        lines.append(f"{'  geomean ' + fam:<52} {'':>39} {geomean([r.get('ratio') for r in rs]):>6.2f}")
    return "\n".join(lines)


def markdown(oa, torch, rows):
    quick = oa.get("quick", False)
    on_gpu = not torch["device"].startswith("CPU") and "llvmpipe" not in oa["device"]
    out = ["# Performance", ""]
    if quick or not on_gpu:
        out += [f"> **Check run, not a performance figure**: {'tiny `--quick` shapes, ' if quick else ''}"
                f"oa on {oa['device']}, PyTorch on {torch['device']}. It shows the format and that every case runs "
                "on both sides; the GPU table comes from a run on the GPU machine (see How to regenerate).", ""]
    out += ["| | oa | PyTorch |", "|---|---|---|",
            f"| date | {oa['date']} | {torch['date']} |",
            f"| device | {oa['device']} | {torch['device']} |",
            f"| driver | {oa['driver']} (Vulkan {oa.get('vulkan', '?')}) | {torch['driver']} |",
            f"| software | oa_bench{' --quick' if quick else ''} | PyTorch {torch['torch']}, TF32 off |",
            f"| timing | {timing(oa)} | {timing(torch)} |", ""]
    out += ["## Summary per family", "",
            "| family | cases | geomean PyTorch / oa (wall) | geomean (GPU time) | below 1.0 (wall) | lowest (wall) |",
            "|---|---:|---:|---:|---:|---|"]
    fams = families(rows)
    for fam, rs in fams.items():
        ok = [r for r in rs if "ratio" in r]
        low = min(ok, key=lambda r: r["ratio"]) if ok else None
        lowest = f"{low['ratio']:.2f} {low['name']}" if low else ""
        out.append(f"| {fam} | {len(ok)}/{len(rs)} | {fmt(geomean([r['ratio'] for r in ok]), 2)} | "
                   f"{fmt(geomean([r['ratio_gpu'] for r in ok]), 2)} | {sum(r['ratio'] < 1 for r in ok)} | {lowest} |")
    out.append("")
    for fam, rs in fams.items():
        out += [f"## {fam}", "",
                "| case | oa GPU ms | oa wall ms | PyTorch GPU ms | PyTorch wall ms | PyTorch / oa | "
                "oa peak / reserved MiB | PyTorch peak MiB |" + HOST_COLUMNS * (fam == "host"),
                "|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|---:|---:|" * (fam == "host")]
        for r in rs:
            o, t = r["oa"], r["torch"]
            if "ratio" not in r:
                out.append(f"| {r['name']} | {errors(r)} |||||||")
                continue
            host = ""
            if fam == "host":
                ops = o["params"]["ops"]
                host = (f" {o['host_us_per_dispatch']:.2f} | {o['wall_ms'] * 1e3 / o['dispatches_per_step']:.2f} | "
                        f"{t['wall_ms'] * 1e3 / ops:.2f} |")
            out.append(f"| {r['name']} | {fmt(o['gpu_ms'])} | {fmt(o['wall_ms'])} | {fmt(t['gpu_ms'])} | "
                       f"{fmt(t['wall_ms'])} | {r['ratio']:.2f} | {o['peak_mib']:.1f} / {o['reserved_mib']:.0f} | "
                       f"{fmt(t.get('peak_mib'), 1)} |{host}")
        out.append("")
    out.append(REGENERATE)
    return "\n".join(out)


def timing(doc):
    t = doc.get("timing", {})
    return (f"{t.get('warmup')} warm-up, GPU median of {t.get('repeat')}, "
            f"best of {t.get('loops')} loops of {t.get('steps')} steps")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("oa_json")
    ap.add_argument("torch_json")
    ap.add_argument("-o", "--out", default="docs/performance.md")
    args = ap.parse_args()
    with open(args.oa_json) as f:
        oa = json.load(f)
    with open(args.torch_json) as f:
        torch = json.load(f)
    rows = merge(oa, torch)
    # Sections measured by other means (data-parallel training) follow the
    # sweep's; a regenerated report keeps them.
    kept = ""
    try:
        with open(args.out) as f:
            old = f.read()
        if KEPT_FROM in old:
            kept = "\n" + old[old.index(KEPT_FROM):]
    except FileNotFoundError:
        pass
    with open(args.out, "w") as f:
        f.write(markdown(oa, torch, rows) + kept)
    print(f"report: {len(rows)} cases, {sum('ratio' in r for r in rows)} with both figures -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
