#!/usr/bin/env bash
# Load and fault soak of `quarry serve` (issue #14, part 6).
#
#   scripts/soak.sh [CLIENTS] [SECONDS]        (defaults 64 and 60)
#
# Serves a root made of the fixture data (testdata/) plus files generated with the
# benchmark generators (the folder BENCHGEN names: benchgen/ of the project's shared
# data): a ROOT file, HDF5, documents and synthetic Python/C++. Then, through
# tests/clients/soak.py:
#   1. CLIENTS concurrent socket clients for SECONDS, each calling the read-only tools in
#      a random mix (raw JSON-RPC lines), every reply checked against its request's id;
#   2. CLIENTS clients pipelining SOAK_PIPELINE_DEPTH (100) requests each, with the
#      daemon's peak RSS (0 skips it);
#   3. SOAK_KILL_TRIALS (10) kill -9 trials during `quarry rebuild` and as many during
#      `quarry serve` while files are written and deleted under the root (0 skips them).
# Ends with: soak: N calls, E errors, X crossed, p50 A ms, p99 B ms, rss C->D MB (peak P),
# fds F->G -- and a non-zero status when a target is missed (errors, crossed replies, fd
# leak, RSS growth over 10 % after warm-up in runs of 30 s or more, a killed catalog not
# settling onto a fresh rebuild's state).
#
# Other settings: SOAK_PROFILE=release|debug (release; the test suite uses debug, which
# it has built already); SOAK_DATA=generated|fixtures (fixtures: testdata/ alone, no PyPI).
# The generators' Python packages go into a cached venv outside the repository
# (QUARRY_TEST_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/quarry-test).
set -euo pipefail
cd "$(dirname "$0")/.."

clients=${1:-64}
seconds=${2:-60}
profile=${SOAK_PROFILE:-release}
data_mode=${SOAK_DATA:-generated}
cache=${QUARRY_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry-test}

if [ "$profile" = release ]; then
  cargo build --quiet --release --bin quarry
elif [ -z "${QUARRY_DEBUG_BUILT:-}" ]; then # see scripts/test-clients.sh
  cargo build --quiet --bin quarry
fi
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
quarry="$target_dir/$profile/quarry"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# quarry's default ingest folder and catalogs go here, not into the user's data folder.
export XDG_DATA_HOME="$work/xdg-data"
cp -r testdata "$work/data"

if [ "$data_mode" = generated ]; then
  # The test suite runs on the fixtures alone; generated data is asked for by name, so
  # nothing the suite runs depends on a folder outside the repository.
  benchgen=${BENCHGEN:-}
  [ -d "$benchgen" ] || { echo "soak: BENCHGEN must name the benchmark generators' folder (or SOAK_DATA=fixtures)" >&2; exit 1; }
  # Named after the pinned versions below: a change of pins makes a new venv.
  genvenv="$cache/benchgen-numpy2.4.6-uproot5.7.7-h5py3.16.0"
  if [ ! -e "$genvenv/.complete" ]; then
    rm -rf "$genvenv"
    echo "soak: installing the generators' packages into $genvenv" >&2
    python3 -m venv "$genvenv"
    "$genvenv/bin/pip" install --quiet --disable-pip-version-check \
      numpy==2.4.6 uproot==5.7.7 awkward==2.14.0 cramjam==2.14.0 xxhash==4.1.0 h5py==3.16.0
    touch "$genvenv/.complete"
  fi
  export BENCHDATA="$work/gen"
  py="$genvenv/bin/python"
  # Small sizes: the soak measures serving, not extraction; the kill trials compare
  # whole listings, which stay under list_files' 1000-file page.
  "$py" "$benchgen/gen_root.py" 20000 --quiet -o "$work/data/gen/events_20000.root" >/dev/null
  "$py" "$benchgen/gen_h5.py" --rows 20000 --cols 4 -o "$work/data/gen/data_20000x4.h5" >/dev/null
  "$py" "$benchgen/gen_docs.py" --files 200 --total-mb 2 -o "$work/data/gen/docs" >/dev/null
  "$py" "$benchgen/gen_code.py" --synthetic 50 -o "$work/data/gen/code" >/dev/null
fi

options=(--clients "$clients" --seconds "$seconds"
  --pipeline-depth "${SOAK_PIPELINE_DEPTH:-100}" --kill-trials "${SOAK_KILL_TRIALS:-10}")
# A few seconds say nothing about growth: the RSS target is checked on runs of 30 s or more.
[ "${seconds%.*}" -ge 30 ] && options+=(--check-rss)
python3 tests/clients/soak.py --quarry "$quarry" --root "$work/data" "${options[@]}"
