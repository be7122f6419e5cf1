#!/usr/bin/env bash
# The dataset benchmark (issue #28 §4) beside its anchor, interleaved: FILES files of
# EVENTS events from ../shared/benchgen/gen_root.py (seeds 1..FILES, zlib-1; default 200
# of 1,000,000, about 11 GB) in $BENCHDATA/dataset_<FILES>x<EVENTS>, unless already there;
# ROUNDS (default 3) rounds, each one run of benches/root_datasets.rs (release, server
# time per tool call, and the six branches' baskets only inflated: the ratio's
# ceiling) then one of scripts/bench/uproot_dataset.py (uproot + awkward + vector, the
# fastest of its ways); prints the medians, the ratio, the ceiling and the targets,
# and checks that both filled the same bins.
# Needs Python 3 and PyPI (a virtual environment outside the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
files=${FILES:-200}
events=${EVENTS:-1000000}
rounds=${ROUNDS:-3}
venv=${VENV:-$(mktemp -d)/venv}
data=${BENCHDATA:-$(mktemp -d)/benchdata}/dataset_${files}x${events}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q uproot awkward numpy vector cramjam xxhash
fi
mkdir -p "$data"
for n in $(seq "$files"); do
  f="$data/events_s$(printf %03d "$n").root"
  [ -s "$f" ] || "$venv/bin/python" ../shared/benchgen/gen_root.py "$events" --seed "$n" \
    --compression zlib-1 -o "$f" --quiet >/dev/null
done
bench=$(cargo bench --bench root_datasets --no-run --message-format=json 2>/dev/null |
  "$venv/bin/python" -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "root_datasets" and m.get("executable"):
        print(m["executable"])')
catalog=$(mktemp -d)
trap 'rm -rf "$catalog"' EXIT
results=$(mktemp)
for round in $(seq "$rounds"); do
  echo "round $round of $rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  QUARRY_BENCH_CATALOG="$catalog" QUARRY_DATASET_BENCH_DIR="$data" "$bench" --bench | tee -a "$results"
  "$venv/bin/python" scripts/bench/uproot_dataset.py --counts "$data"/*.root | tee -a "$results"
done
"$venv/bin/python" - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(tool, op, key="seconds"):
    xs = [r[key] for r in rows if r.get("tool") == tool and r.get("op") == op and key in r]
    return statistics.median(xs) if xs else None
q, u = med("quarry", "dimuon_dataset"), med("uproot", "fastest")
print(f"dimuon mass over the dataset: quarry {q:.2f} s, uproot {u:.2f} s: {u / q:.1f}x (target >= 8x)")
lim, lcpu = med("quarry", "inflate_limit"), med("quarry", "inflate_limit", "cpu_seconds")
print(f"inflating the six branches alone (libdeflate, both cores): {lim:.2f} s ({lcpu:.2f} s of CPU): "
      f"the ratio's ceiling is {u / lim:.1f}x; quarry runs at {lim / q:.2f} of it")
print(f"peak RSS added: {med('quarry', 'dimuon_dataset', 'peak_rss_added_mb'):.0f} MB (target <= 300)")
d, one = med("quarry", "dimuon_dataset", "mb_per_s"), med("quarry", "dimuon_one_file", "mb_per_s")
print(f"bytes per second: dataset {d:.0f} MB/s, one file {one:.0f} MB/s (target: the same)")
print(f"dry run: {1e3 * med('quarry', 'dry_run'):.1f} ms (target <= 10 ms)")
qcpu = med("quarry", "dimuon_one_file", "cpu_seconds")
print(f"CPU seconds for one file: quarry {qcpu:.3f} s (uproot's per file: its single-process time / files)")
print(f"opening members: {med('quarry', 'open_members', 'ms_per_file'):.3f} ms a file (target <= 2 ms)")
qc = [r["counts"] for r in rows if r.get("op") == "dimuon_dataset"]
uc = [r["counts"] for r in rows if "counts" in r and r.get("tool") is None]
if qc and uc:
    # vector computes float32 inputs' masses in float32, quarry (as VecOps'
    # docs describe) in double: a mass that close to a bin edge may land in
    # the next bin. The pairs must be the same, and the pairs that moved to
    # another bin a few in a million (a bin's relative difference says
    # little: one pair is 1e-3 of a tail bin of a thousand).
    q, u = qc[-1], uc[-1]
    moved = sum(abs(a - b) for a, b in zip(q, u)) // 2
    print(f"pairs: quarry {sum(q)}, uproot {sum(u)} (same: {sum(q) == sum(u)}); "
          f"{moved} in another bin ({moved / max(sum(u), 1):.1e} of them: float32 rounding in vector; "
          f"must be < 1e-5)")
PY
