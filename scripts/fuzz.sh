#!/usr/bin/env bash
# Fuzzes the ROOT reader with libFuzzer (cargo-fuzz), seeded with the real test
# files and the ones written for the tests. Usage: scripts/fuzz.sh [SECONDS] (default 600). Needs `cargo install
# cargo-fuzz`; on a stable toolchain RUSTC_BOOTSTRAP lets it use the sanitizer flags.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cp testdata/root/*.root tests/data/root/*.root "$corpus/"
RUSTC_BOOTSTRAP=1 cargo fuzz run root_reader "$corpus" -- \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1048576 -timeout=10
