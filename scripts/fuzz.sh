#!/usr/bin/env bash
# Fuzzes with libFuzzer (cargo-fuzz). Targets: root_reader (the ROOT reader,
# seeded with the real test files and the ones written for the tests) and
# selection (the cut language on uproot-HZZ.root, seeded with the cuts of
# tests/fixtures/root/selections.json). Usage: scripts/fuzz.sh [SECONDS] [TARGET]
# (default 600 root_reader). Needs `cargo install cargo-fuzz`; on a stable
# toolchain RUSTC_BOOTSTRAP lets it use the sanitizer flags.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
target=${2:-root_reader}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
if [ "$target" = selection ]; then
  python3 - "$corpus" <<'PY'
import json, pathlib, sys
doc = json.load(open("tests/fixtures/root/selections.json"))
cuts = [c["cut"] for f in doc["files"] for c in f["cuts"] + f["errors"]]
for i, cut in enumerate(cuts):
    (pathlib.Path(sys.argv[1]) / f"cut{i}").write_text(cut)
PY
else
  cp testdata/root/*.root tests/data/root/*.root "$corpus/"
fi
RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "$corpus" -- \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1048576 -timeout=10
