#!/usr/bin/env bash
# The RNTuple benchmark (issue #29, "Performance") beside its anchor,
# interleaved: the 10M-event files of ../shared/benchgen/gen_root.py as RNTuple
# and as TTree of the same events (zstd-5 and zlib-1; EVENTS to change the
# size), generated once into $BENCHDATA (default: ../benchdata beside the
# checkout) unless already there; ROUNDS (default 5) rounds, each one run of
# benches/rntuple.rs then one of scripts/bench/uproot_rntuple.py (uproot +
# awkward + numpy); prints the medians, the ratios and the targets, and fails
# when the two tools did not read the same counts.
# The bench is built in release (cargo bench); DEBUG=1 builds it as a test
# (quick, to check the pipeline; its times mean nothing).
# Python: $VENV (default: ../venv beside the checkout when it exists, else a
# fresh virtual environment from PyPI, outside the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
events=${EVENTS:-10000000}
rounds=${ROUNDS:-5}
venv=${VENV:-}
if [ -z "$venv" ]; then
  if [ -x ../venv/bin/python ]; then venv=$(cd ../venv && pwd); else venv=$(mktemp -d)/venv; fi
fi
data=${BENCHDATA:-$(cd .. && pwd)/benchdata}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q uproot awkward numpy cramjam xxhash zstandard
fi
generate() { # expected file name, then gen_root.py arguments
  local want="$data/root/$1"; shift
  [ -f "$want" ] || BENCHDATA="$data" "$venv/bin/python" ../shared/benchgen/gen_root.py "$@" --quiet >/dev/null
  echo "$want"
}
pairs=()
for c in zstd-5 zlib-1; do
  rntuple=$(generate "events_${events}_${c}_rntuple.root" "$events" --compression "$c" --rntuple)
  ttree=$(generate "events_${events}_${c}.root" "$events" --compression "$c")
  pairs+=("$rntuple,$ttree")
done
if [ -n "${DEBUG:-}" ]; then build=(cargo test); else build=(cargo bench); fi
bench=$("${build[@]}" --bench rntuple --no-run --message-format=json 2>/dev/null |
  "$venv/bin/python" -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "rntuple" and m.get("executable"):
        print(m["executable"])')
catalog=$(mktemp -d)
# The printed lines leave out the 100 bin counts (the summary compares them).
hide_bins='s/"bin_counts": ?\[[^]]*\], ?//; s/, ?"bin_counts": ?\[[^]]*\]//'
results=$(mktemp)
trap 'rm -rf "$catalog" "$results"' EXIT
for round in $(seq "$rounds"); do
  echo "round $round of $rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  QUARRY_BENCH_CATALOG="$catalog" QUARRY_RNTUPLE_BENCH_PAIRS=$(IFS=:; echo "${pairs[*]}") "$bench" --bench |
    tee -a "$results" | sed -E "$hide_bins"
  "$venv/bin/python" scripts/bench/uproot_rntuple.py "${pairs[@]}" | tee -a "$results" | sed -E "$hide_bins"
done
"$venv/bin/python" - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault((r["tool"], r["file"], r["op"]), []).append(r)
def m(tool, f, op, key="seconds"):
    xs = [r[key] for r in by.get((tool, f, op), [])]
    return statistics.median(xs) if xs else None
def same(tool_a, tool_b, f, op, key):
    """Whether every round of both tools gave the same `key`."""
    norm = lambda v: [float(x) for x in v] if isinstance(v, list) else float(v)
    seen = {json.dumps(norm(r[key])) for t in (tool_a, tool_b) for r in by.get((t, f, op), [])}
    return len(seen) == 1
bad = []
for f in sorted({k[1] for k in by}):
    raw, limit = m("quarry", f, "raw_read"), m("quarry", f, "decompress_limit")
    uraw = m("uproot", f, "raw_read")
    hr, ht = m("quarry", f, "histogram_jagged_cut_rntuple"), m("quarry", f, "histogram_jagged_cut_ttree")
    uhr, uht = m("uproot", f, "histogram_jagged_cut_rntuple"), m("uproot", f, "histogram_jagged_cut_ttree")
    mb = m("quarry", f, "raw_read", "uncompressed_mb")
    print(f"\n{f}: medians of {len(by[('quarry', f, 'raw_read')])} interleaved rounds")
    print("figure | quarry s | uproot s | uproot / quarry | target")
    print(f"raw read, every field ({mb:.0f} MB decompressed) | {raw:.3f} | {uraw:.3f} | {uraw / raw:.1f}x | >= 3x")
    print(f"histogram_jagged_cut on the RNTuple | {hr:.3f} | {uhr:.3f} | {uhr / hr:.1f}x | >= 8x")
    print(f"histogram_jagged_cut on the TTree | {ht:.3f} | {uht:.3f} | {uht / ht:.1f}x | (the TTree headline)")
    print(f"raw read / decompressor's limit on all cores: {mb / raw:.0f} / {mb / limit:.0f} MB/s "
          f"= {limit / raw:.2f} (>= 0.8)")
    print(f"histogram on the RNTuple / on the TTree (quarry): {hr / ht:.2f} (<= 1.10)")
    hl = m("quarry", f, "histogram_decompress_limit")
    if hl:
        print(f"the histogram's pages only decompressed: {hl:.3f} s; uproot / that floor: "
              f"{uhr / hl:.1f}x (the most a reader decompressing every page it reads reaches)")
    hd = m("quarry", f, "histogram_distinct_limit")
    if hd:
        print(f"each distinct page once (identical offsets pages decompressed once, as quarry does): "
              f"{hd:.3f} s; uproot / that floor: {uhr / hd:.1f}x (the most any reader with this "
              f"decompressor reaches on these cores); quarry's share of it: {hd / hr:.2f}")
    print(f"peak RSS added by the RNTuple histogram: "
          f"{m('quarry', f, 'histogram_jagged_cut_rntuple', 'peak_rss_added_mb'):.0f} MB")
    checks = [("raw_read", "values"), ("raw_read", "entries"),
              ("histogram_jagged_cut_rntuple", "in_range"), ("histogram_jagged_cut_ttree", "in_range"),
              ("histogram_jagged_cut_rntuple", "bin_counts"), ("histogram_jagged_cut_ttree", "bin_counts")]
    for op, key in checks:
        if not same("quarry", "uproot", f, op, key):
            bad.append(f"{f} {op} {key}")
    count = lambda tool, op, key: int(m(tool, f, op, key))
    print(f"counts: values read {count('quarry', 'raw_read', 'values')}, histogram in range "
          f"{count('quarry', 'histogram_jagged_cut_rntuple', 'in_range')} (uproot: "
          f"{count('uproot', 'raw_read', 'values')}, {count('uproot', 'histogram_jagged_cut_rntuple', 'in_range')})")
if bad:
    sys.exit("quarry and uproot read different counts: " + "; ".join(bad))
print("\nquarry and uproot read the same values and filled the same bins in every round")
PY
