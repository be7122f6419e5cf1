#!/usr/bin/env bash
# The ROOT engine benchmark with its anchor, side by side in one run:
# generates events files with ../shared/benchgen/gen_root.py (1M events, zlib-1
# and lz4 by default; EVENTS=10000000 for the issue's size) and the 250-branch
# wide file (1M events, zlib-1), unless they are already in $BENCHDATA; runs
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
generate() { # expected file name, then gen_root.py arguments
  local want="$data/root/$1"; shift
  [ -f "$want" ] || BENCHDATA="$data" "$venv/bin/python" ../shared/benchgen/gen_root.py "$@" --quiet >/dev/null
  echo "$want"
}
files=("$(generate "events_${events}_zlib-1.root" "$events" --compression zlib-1)"
       "$(generate "events_${events}_lz4-4.root" "$events" --compression lz4)")
wide=$(generate events_1000000_zlib-1_w250.root 1000000 --extra 239 --compression zlib-1)
results=$(mktemp)
QUARRY_ROOT_BENCH_WIDE="$wide" QUARRY_ROOT_BENCH_FILES=$(IFS=:; echo "${files[*]}") \
  cargo bench --bench root 2>/dev/null | grep '^{' | tee "$results"
"$venv/bin/python" scripts/bench/uproot_read.py "${files[@]}" | tee -a "$results"
"$venv/bin/python" scripts/bench/uproot_stats.py "$wide" | tee -a "$results"
"$venv/bin/python" - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {(r["tool"], r.get("mode", "column"), r["file"], r["branch"]): r for r in rows if "branch" in r}
print("\nfile | branch | quarry mode | quarry MB/s | uproot MB/s | quarry / uproot speed")
for (tool, mode, f, b), r in by.items():
    u = by.get(("uproot", "column", f, b))
    if tool == "quarry" and u:
        print(f"{f} | {b} | {mode} | {r['mb_per_s']:.0f} | {u['mb_per_s']:.0f} | {u['seconds'] / r['seconds']:.2f}x")
stats = {r["tool"]: r for r in rows if r.get("stats") == "uncached"}
if len(stats) == 2:
    q, u = stats["quarry"], stats["uproot"]
    print(f"\nstatistics of {q['branches']} branches: quarry {q['seconds']:.2f} s, uproot {u['seconds']:.2f} s: "
          f"{u['seconds'] / q['seconds']:.2f}x")
PY
