#!/usr/bin/env bash
# The ROOT analysis benchmark (issue #8 §4) beside its anchor, interleaved: the
# 10M-event files of ../shared/benchgen/gen_root.py (zlib-1 and lz4; EVENTS to
# change the size), unless already in $BENCHDATA; ROUNDS (default 5) rounds, each
# one run of benches/root_analysis.rs (release, server time per tool call) then
# one of scripts/bench/uproot_analysis.py (uproot + awkward + numpy + pyarrow);
# prints the medians, the ratios (uproot time / quarry time) and the targets.
# Needs Python 3 and PyPI (a virtual environment outside the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
events=${EVENTS:-10000000}
rounds=${ROUNDS:-5}
venv=${VENV:-$(mktemp -d)/venv}
data=${BENCHDATA:-$(mktemp -d)/benchdata}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q uproot awkward numpy pyarrow cramjam xxhash lz4 zstandard
fi
generate() { # expected file name, then gen_root.py arguments
  local want="$data/root/$1"; shift
  [ -f "$want" ] || BENCHDATA="$data" "$venv/bin/python" ../shared/benchgen/gen_root.py "$@" --quiet >/dev/null
  echo "$want"
}
files=("$(generate "events_${events}_zlib-1.root" "$events" --compression zlib-1)"
       "$(generate "events_${events}_lz4-4.root" "$events" --compression lz4)")
bench=$(cargo bench --bench root_analysis --no-run --message-format=json 2>/dev/null |
  "$venv/bin/python" -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "root_analysis" and m.get("executable"):
        print(m["executable"])')
catalog=$(mktemp -d)
trap 'rm -rf "$catalog"' EXIT
results=$(mktemp)
for round in $(seq "$rounds"); do
  echo "round $round of $rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  QUARRY_BENCH_CATALOG="$catalog" QUARRY_ROOT_BENCH_FILES=$(IFS=:; echo "${files[*]}") "$bench" --bench | tee -a "$results"
  "$venv/bin/python" scripts/bench/uproot_analysis.py "${files[@]}" | tee -a "$results"
done
"$venv/bin/python" - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
med = {}
for r in rows:
    med.setdefault((r["tool"], r["file"], r["op"]), []).append(r)
def m(tool, f, op, key="seconds"):
    xs = [r[key] for r in med.get((tool, f, op), [])]
    return statistics.median(xs) if xs else None
targets = {"histogram_jagged_cut": ">= 8x", "histogram_flat": ">= 3x", "selection_flat": ">= 3x",
           "read_page": "<= 20 ms", "stats_quantiles": "<= 2x its histogram", "export_parquet": ">= 2x",
           "selection_first_entries": "<= 5% of the bytes"}
for f in sorted({k[1] for k in med}):
    print(f"\n{f}: medians of {len(med[('quarry', f, 'histogram_flat')])} interleaved rounds")
    print("op | quarry s | uproot s | uproot / quarry | target")
    for op, target in targets.items():
        q, u = m("quarry", f, op), m("uproot", f, op)
        if q is None:
            continue
        ratio = f"{u / q:.1f}x" if u else "-"
        print(f"{op} | {q:.4f} | {u if u is None else round(u, 4)} | {ratio} | {target}")
    print(f"peak RSS added by the jagged histogram: {m('quarry', f, 'histogram_jagged_cut', 'peak_rss_added_mb'):.0f} MB (<= 150)")
    print(f"get_branch_stats / its histogram: {m('quarry', f, 'stats_quantiles') / m('quarry', f, 'histogram_flat'):.2f} (<= 2)")
    print(f"bytes read by event_number < 1000: {100 * m('quarry', f, 'selection_first_entries', 'fraction_read'):.3f}% of the file")
PY
