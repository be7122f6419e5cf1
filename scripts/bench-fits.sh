#!/usr/bin/env bash
# The fit benchmark (issue #30 §4) beside its anchor, interleaved: ROUNDS
# (default 5) rounds, each one run of benches/fits.rs (release: the median of
# 200 gaussian + exponential extended fits with Hesse on 100 bins) then one of
# scripts/bench/iminuit_fit.py (iminuit on the same cost); prints the medians
# and the ratio (iminuit time / quarry time; target >= 5, quarry <= 5 ms).
# Then the coverage check: TOYS (default 1000) Poisson toys, the Hesse
# intervals' coverage of the truth per parameter (target 68.3 % +- 3).
# Needs Python 3 and PyPI (a virtual environment outside the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
toys=${TOYS:-1000}
venv=${VENV:-$(mktemp -d)/venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q iminuit scipy numpy
fi
bench=$(cargo bench --bench fits --no-run --message-format=json 2>/dev/null |
  "$venv/bin/python" -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "fits" and m.get("executable"):
        print(m["executable"])')
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
  echo "round $round of $rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$bench" --bench | tee -a "$results"
  "$venv/bin/python" scripts/bench/iminuit_fit.py tests/fixtures/fit/fits.json | tee -a "$results"
done
"$venv/bin/python" - "$results" <<'PY'
import statistics, sys
values = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 2 and parts[0].endswith("_ms"):
        values.setdefault(parts[0], []).append(float(parts[1]))
q = statistics.median(values["quarry_fit_ms"])
i = statistics.median(values["iminuit_fit_ms"])
print(f"median quarry {q:.3f} ms (target <= 5: {'met' if q <= 5 else 'MISSED'}), "
      f"iminuit {i:.3f} ms, ratio {i / q:.1f}x (target >= 5: {'met' if i / q >= 5 else 'MISSED'})")
PY
"$bench" --coverage "$toys"
