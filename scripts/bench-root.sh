#!/usr/bin/env bash
# The ROOT engine benchmark with its anchor, side by side in one run:
# generates events files with ../shared/benchgen/gen_root.py (1M events, zlib-1
# and lz4 by default; EVENTS=10000000 for the issue's size), runs
# `cargo bench --bench root` and uproot on the same files, and prints the ratios.
# Needs Python 3 and PyPI (a virtual environment outside the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
events=${EVENTS:-1000000}
venv=${VENV:-$(mktemp -d)/venv}
data=${BENCHDATA:-$(mktemp -d)/benchdata}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q uproot awkward numpy cramjam xxhash lz4 zstandard
fi
files=()
for c in zlib-1 lz4; do
  out=$(BENCHDATA="$data" "$venv/bin/python" ../shared/benchgen/gen_root.py "$events" --compression "$c" --quiet)
  files+=("$(echo "$out" | "$venv/bin/python" -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])["wrote"])')")
done
results=$(mktemp)
QUARRY_ROOT_BENCH_FILES=$(IFS=:; echo "${files[*]}") cargo bench --bench root 2>/dev/null | grep '^{' | tee "$results"
"$venv/bin/python" scripts/bench/uproot_read.py "${files[@]}" | tee -a "$results"
"$venv/bin/python" - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"branch"' in l]
by = {(r["tool"], r["file"], r["branch"]): r for r in rows}
print("\nfile | branch | quarry MB/s | uproot MB/s | quarry / uproot speed")
for (tool, f, b), r in by.items():
    if tool == "quarry" and ("uproot", f, b) in by:
        u = by[("uproot", f, b)]
        print(f"{f} | {b} | {r['mb_per_s']:.0f} | {u['mb_per_s']:.0f} | {u['seconds'] / r['seconds']:.2f}x")
PY
