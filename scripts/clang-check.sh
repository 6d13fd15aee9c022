#!/usr/bin/env bash
# Compiles, with clang-14 and -fsyntax-only, the translation units of build/
# (scripts/build.sh's unity build) that hold a .cpp changed since BASE
# (default: main's upstream, else HEAD), with the same flags: a few minutes
# instead of the sanitizer build, for what only clang refuses (CI's
# scripts/sanitize.sh compiles everything with clang-14). Needs build/.
#   scripts/clang-check.sh [BASE]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-$(git rev-parse -q --verify '@{upstream}' || git rev-parse HEAD)}
[ -f build/compile_commands.json ] || { echo "build/compile_commands.json missing: run scripts/build.sh first" >&2; exit 2; }
mapfile -t changed < <(git diff --name-only "$base" -- '*.cpp'; git ls-files --others --exclude-standard -- '*.cpp')
[ ${#changed[@]} -gt 0 ] || { echo "no .cpp changed since $base"; exit 0; }
python3 - "$PWD" "${changed[@]}" <<'PY' | xargs -0 -r -n1 -P"$(nproc)" bash -c
import json, os, re, sys
root, changed = sys.argv[1], [os.path.join(sys.argv[1], f) for f in sys.argv[2:]]
for entry in json.load(open(os.path.join(root, "build/compile_commands.json"))):
    unit = entry["file"]
    text = open(unit).read() if os.path.exists(unit) else ""
    if unit in changed or any(f'"{f}"' in text for f in changed):
        flags = re.sub(r" -o \S+", "", entry["command"].split(" ", 1)[1]).replace(" -c ", " -fsyntax-only ")
        command = "clang++-14 " + flags
        sys.stdout.write(f"cd {entry['directory']} && {command} && echo 'clang-14 ok: {unit}'\0")
PY
