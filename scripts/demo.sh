#!/usr/bin/env bash
# A short story of what quarry does, on the bundled sample data (testdata/): it
# builds quarry, starts the daemon on a temporary catalog, and asks it what an
# assistant would, with `quarry call` (the same tools an MCP client calls). The
# catalog is removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-system.sh
cargo build --release --quiet
quarry=./target/release/quarry
catalog=$(mktemp -d)
daemon=
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$catalog"
}
trap cleanup EXIT

# ask "QUESTION" TOOL ARGS...: shows the command, then its answer (first lines).
ask() {
  printf '\n\033[1m▶ %s\033[0m\n  $ quarry call' "$1"
  for arg in "${@:2}"; do
    if [[ $arg =~ ^[A-Za-z0-9_./=:,-]+$ ]]; then printf ' %s' "$arg"; else printf " '%s'" "$arg"; fi
  done
  printf '\n'
  "$quarry" call "${@:2}" --socket "$catalog/quarry.sock" | head -n "${LINES_PER_STEP:-20}"
}
serves() { "$quarry" tools --json | grep -q "\"$1\""; }

echo "quarry indexes testdata/ (ROOT, HDF5, documents, C++/Python) and serves it:"
"$quarry" serve --root sample=testdata --catalog "$catalog" 2>/dev/null &
daemon=$!
until "$quarry" call index_status --json --socket "$catalog/quarry.sock" 2>/dev/null |
  grep -q '"complete": true'; do sleep 0.2; done

ask "What ROOT files are there?" list_files kind=root limit=4

ask "What is inside the HZZ file? (from the catalog: the file is not opened)" \
  inspect_file path=root/uproot-HZZ.root

if serves compute_histogram; then
  ask "Histogram the muons' momentum along x, in events with two muons or more" \
    compute_histogram path=root/uproot-HZZ.root tree=events branch=Muon_Px \
    'selection=NMuon >= 2' bins=10 'range=[-100,100]'
else
  ask "Read a stored histogram" read_histogram path=root/uproot-histograms.root name=one
fi

ask "Which documents mention calibration?" \
  search_documents query=calibration max_results=5 'scope={"type":"global"}'

if serves find_classes; then
  ask "Which C++ classes does the calorimeter code define?" \
    find_classes filepath=code/cpp/include
fi

printf '\nEvery tool: %s tools (quarry tools); any of them: quarry call TOOL key=value ...\n' \
  "$("$quarry" tools --json | grep -c '"name"')"
