#!/usr/bin/env bash
# The Slurm executor's overhead (issue #33), on the single-node cluster of
# scripts/slurm-local.sh (started here, stopped at the end; runs as root): the
# same histogram of the 200-file dataset (`met`, 100 bins, range given) through
# `quarry call` on one running daemon, interleaved in each round:
#   local, Slurm with the default task size, Slurm with files_per_job=10 (20
#   array tasks), and the scheduler alone: arrays of 20 and of 2 trivial tasks
#   (`sbatch --wrap true`), from submission to the queue's emptying (squeue
#   every 50 ms), and one `sbatch` of an array of one.
# Prints every run as a JSON line and the medians; the load average before
# each round. Checks that the Slurm answers' bins equal the local one's.
#   BENCHDATA=DIR [ROUNDS=5] [QUARRY=path/to/release/quarry] scripts/bench-slurm.sh
# SLURM_SCHED_DEFAULTS=1 runs the cluster with Slurm's scheduler defaults instead of
# scripts/slurm-local.sh's SchedulerParameters (for the before/after figures).
# The data: $BENCHDATA/dataset_200x1000000 (scripts/bench-root-datasets.sh makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
data=${DATA:-${BENCHDATA:?set BENCHDATA (or DATA)}/dataset_200x1000000}
quarry=$(realpath "${QUARRY:-${CARGO_TARGET_DIR:-target}/release/quarry}")
[ -x "$quarry" ] || { echo "no quarry at $quarry: cargo build --release --bin quarry" >&2; exit 1; }
work=$(mktemp -d)
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
  scripts/slurm-local.sh stop "$work/slurm" || true
  rm -rf "$work"
}
trap cleanup EXIT
eval "$(scripts/slurm-local.sh start "$work/slurm")"
export SLURM_CONF
if [ -n "${SLURM_SCHED_DEFAULTS:-}" ]; then
  # For the comparison: Slurm's own scheduler defaults (batch_sched_delay=3 s).
  sed -i '/^SchedulerParameters=/d' "$SLURM_CONF"
  scontrol reconfigure
  sleep 1
fi

catalog="$work/catalog"
"$quarry" serve --root "ds=$data" --catalog "$catalog" 2>"$work/serve.log" &
serve_pid=$!
call() { "$quarry" call --catalog "$catalog" --json "$@"; }
for _ in $(seq 600); do
  [ -S "$catalog/quarry.sock" ] && call index_status 2>/dev/null | grep -q '"complete": *true' && break
  sleep 0.5
done

now() { date +%s.%N; }
# One timed histogram call; prints its JSON line, keeps its bins.
histogram() { # NAME [KEY=VALUE...]
  local name=$1; shift
  local t0 t1
  t0=$(now)
  call compute_histogram dataset='*.root' tree=events branch=met bins=100 'range=[0,200]' "$@" \
    > "$work/$name.json"
  t1=$(now)
  python3 - "$work/$name.json" "$name" "$t0" "$t1" <<'PY'
import json, sys
path, name, t0, t1 = sys.argv[1:]
a = json.load(open(path))
a = a.get("structuredContent", a)
print(json.dumps({"run": name, "seconds": round(float(t1) - float(t0), 3),
                  "jobs": a.get("metadata", {}).get("jobs"),
                  "bins": a["data"]["bin_counts"]}))
PY
}
# An array of N trivial tasks: seconds from sbatch to the queue's emptying.
array() { # N
  local t0 t1 id
  t0=$(now)
  id=$(sbatch --parsable --array=0-$(($1 - 1)) --job-name=bench --output=/dev/null --wrap true)
  while [ -n "$(squeue -h -j "$id" 2>/dev/null)" ]; do sleep 0.05; done
  t1=$(now)
  python3 -c "import json; print(json.dumps({'run': 'array_$1', 'seconds': round($t1 - $t0, 3)}))"
}
sbatch_ms() {
  local t0 t1
  t0=$(now)
  sbatch --parsable --array=0 --job-name=bench --output=/dev/null --wrap true >/dev/null
  t1=$(now)
  python3 -c "import json; print(json.dumps({'run': 'sbatch', 'seconds': round($t1 - $t0, 4)}))"
}

results="$work/results"
for round in $(seq "$rounds"); do
  echo "round $round of $rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  {
    histogram local
    histogram slurm_default executor=slurm
    histogram local
    histogram slurm_10 executor=slurm files_per_job=10
    array 20
    array 2
    sbatch_ms
  } | tee -a "$results" | python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); r.pop("bins", None); print(json.dumps(r))'
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def runs(name):
    return [r["seconds"] for r in rows if r["run"] == name]
local = statistics.median(runs("local"))
print(f"local: median {local:.2f} s of {runs('local')}")
for name in ["slurm_default", "slurm_10"]:
    xs = runs(name)
    jobs = {r["jobs"] for r in rows if r["run"] == name}
    m = statistics.median(xs)
    print(f"{name} ({jobs} array tasks): median {m:.2f} s ({m / local:.2f}x local) of {xs}")
for name in ["array_20", "array_2"]:
    print(f"{name}: median {statistics.median(runs(name)):.2f} s of {runs(name)}")
print(f"sbatch: median {1e3 * statistics.median(runs('sbatch')):.0f} ms")
want = next(r["bins"] for r in rows if r["run"] == "local")
bad = [r["run"] for r in rows if "bins" in r and r["bins"] != want]
print("bins: every answer equal to the local one's" if not bad else f"bins DIFFER: {bad}")
PY
