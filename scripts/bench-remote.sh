#!/usr/bin/env bash
# The remote-roots benchmark (issue #32) beside uproot, interleaved: one 10M-event
# gen_root.py file (FILE, default events_10000000_zlib-1.root, in $BENCHDATA/root) served
# on loopback by xrootd (root://) and nginx (http://), each also behind
# a delaying proxy (examples/delay_proxy.rs) adding DELAY_MS (default 20) per round trip and counting
# round trips. ROUNDS (default 3) rounds; each runs, for root://, http://, and both
# through the proxy: benches/remote.rs (release; indexing, the jagged histogram with a
# cut, the same call again) then scripts/bench/uproot_remote.py on the same URL. Prints
# the medians, the ratios (uproot time / quarry time) and the targets.
# Needs nginx, xrootd and python3-xrootd (Debian), and Python 3 with PyPI for uproot (a
# virtual environment outside the repository, or VENV).
# The delaying proxy is examples/delay_proxy.rs (built here, release; PROXY_BIN names one
# built before); PROXY=python runs scripts/bench/delay_proxy.py instead, as before
# 2026-11-28, whose own copying costs quarry about 0.1 s a call on two cores
# (docs/benchmarks.md, "Remote roots").
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
delay=${DELAY_MS:-20}
file=${FILE:-events_10000000_zlib-1.root}
data=${BENCHDATA:?set BENCHDATA to the folder holding root/$file}
venv=${VENV:-$(mktemp -d)/venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q uproot awkward numpy
fi
work=$(mktemp -d)
pids=()
# (The delaying proxies start in a subshell, `$(delayed ...)`: their ids go to a file.)
trap 'for p in "${pids[@]}" $(cat "$work/proxy-pids" 2>/dev/null); do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
# The served folder holds just the file (a hard link), readable by xrootd's user.
mkdir -p "$work/serve"
ln "$data/root/$file" "$work/serve/$file" 2>/dev/null || cp "$data/root/$file" "$work/serve/$file"
chmod 755 "$work" "$work/serve"
# uproot reads root:// through the XRootD Python bindings (Debian's python3-xrootd),
# put on the venv's path alone (not the rest of the system's packages).
mkdir -p "$work/pyxrd"
sysdist=$(/usr/bin/python3 -c 'import XRootD, os; print(os.path.dirname(os.path.dirname(XRootD.__file__)))')
ln -s "$sysdist/XRootD" "$sysdist/pyxrootd" "$work/pyxrd/"
free_port() { "$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.2; done; echo "port $1 never opened" >&2; exit 1; }

http_port=$(free_port)
mkdir -p "$work/nginx"
cat > "$work/nginx/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 256; }
http { access_log off; client_body_temp_path $work/nginx/body; proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fcgi; uwsgi_temp_path $work/nginx/uwsgi; scgi_temp_path $work/nginx/scgi;
  server { listen 127.0.0.1:$http_port; root $work/serve; location / { autoindex on; autoindex_format json; } } }
CONF
/usr/sbin/nginx -e "$work/nginx/error.log" -p "$work/nginx" -c "$work/nginx/nginx.conf" &
pids+=($!)
xrd_port=$(free_port)
mkdir -p "$work/xrd" && chmod 777 "$work/xrd"
as_nobody=(); [ "$(id -u)" = 0 ] && as_nobody=(-R nobody)
(cd "$work/xrd" && exec xrootd -p "$xrd_port" -n "bench$xrd_port" -l "$work/xrd/xrootd.log" -s "$work/xrd/xrootd.pid" "${as_nobody[@]}" "$work/serve") &
pids+=($!)
wait_port "$http_port"; wait_port "$xrd_port"
delayed() { # upstream port, name: starts a delaying proxy, prints its port
  local port; port=$(free_port)
  if [ -n "$proxy_bin" ]; then
    "$proxy_bin" "$port" "$1" "$delay" "$work/turns-$2" >/dev/null &
  else
    "$venv/bin/python" scripts/bench/delay_proxy.py "$port" "$1" "$delay" "$work/turns-$2" >/dev/null &
  fi
  echo $! >> "$work/proxy-pids"
  wait_port "$port"
  echo "$port"
}
proxy_bin=${PROXY_BIN:-}
if [ -z "$proxy_bin" ] && [ "${PROXY:-}" != python ]; then
  cargo build -q --release --example delay_proxy
  proxy_bin="${CARGO_TARGET_DIR:-target}/release/examples/delay_proxy"
fi
xrd_slow=$(delayed "$xrd_port" root); http_slow=$(delayed "$http_port" http)
declare -A urls=(
  [root]="root://127.0.0.1:$xrd_port/$work/serve/"
  [http]="http://127.0.0.1:$http_port/"
  ["root+${delay}ms"]="root://127.0.0.1:$xrd_slow/$work/serve/"
  ["http+${delay}ms"]="http://127.0.0.1:$http_slow/"
)
declare -A turns=([root+${delay}ms]="$work/turns-root" [http+${delay}ms]="$work/turns-http")
labels=(root http "root+${delay}ms" "http+${delay}ms")

# BENCH_BIN: a benchmark binary built before (else built here, release).
bench=${BENCH_BIN:-}
[ -n "$bench" ] || bench=$(cargo bench --bench remote --no-run --message-format=json 2>/dev/null |
  "$venv/bin/python" -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "remote" and m.get("executable"):
        print(m["executable"])')
results=$(mktemp)
for round in $(seq "$rounds"); do
  echo "round $round of $rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  for label in "${labels[@]}"; do
    QUARRY_REMOTE_BENCH_URL="${urls[$label]}" QUARRY_REMOTE_BENCH_FILE="$file" \
      QUARRY_REMOTE_BENCH_LABEL="$label" QUARRY_REMOTE_BENCH_TURNS="${turns[$label]:-}" \
      "$bench" --bench | tee -a "$results"
    PYTHONPATH="$work/pyxrd" "$venv/bin/python" scripts/bench/uproot_remote.py "${urls[$label]}$file" "$label" |
      tee -a "$results"
  done
done
"$venv/bin/python" - "$results" "${labels[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(tool, label, op, key="seconds"):
    xs = [r[key] for r in rows if (r["tool"], r["label"], r["op"]) == (tool, label, op) and key in r]
    return statistics.median(xs) if xs else None
print("\nlabel | index s | index bytes (% of file) | index round trips | quarry hist s | uproot hist s | uproot / quarry | again: bytes (% of file)")
for label in sys.argv[2:]:
    q, u = med("quarry", label, "histogram_jagged_cut"), med("uproot", label, "histogram_jagged_cut")
    print(f"{label} | {med('quarry', label, 'index'):.3f} | {med('quarry', label, 'index', 'bytes'):.0f} "
          f"({100 * med('quarry', label, 'index', 'fraction'):.3f}%) | {med('quarry', label, 'index', 'round_trips'):.0f} | "
          f"{q:.3f} | {u:.3f} | {u / q:.1f}x | {med('quarry', label, 'histogram_again', 'bytes'):.0f} "
          f"({100 * med('quarry', label, 'histogram_again', 'fraction'):.2f}%)")
print("targets: uproot / quarry >= 4x with and without latency; indexing <= 10 round trips and <= 1% of the bytes;"
      " the second call <= 10% of the bytes")
PY
