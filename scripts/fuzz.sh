#!/usr/bin/env bash
# Fuzzes quarry's readers with libFuzzer (cargo-fuzz), seeded with the real test
# files and the ones written for the tests. Usage: scripts/fuzz.sh [SECONDS] [TARGET]
# (default 600 s, target root_reader; also hdf5_reader and hdf5_slice). Needs
# `cargo install cargo-fuzz`; on a stable toolchain RUSTC_BOOTSTRAP lets it use the
# sanitizer flags.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
target=${2:-root_reader}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
case "$target" in
  root_reader) cp testdata/root/*.root tests/data/root/*.root "$corpus/" ;;
  hdf5_reader) cp testdata/hdf5/* tests/data/hdf5/*.h5 "$corpus/" ;;
  hdf5_slice)
    # Four shape bytes, then the slice text.
    for s in ':' '::-1' '1:5:2' '..., 0' '-1' '0, ::3, -2:' '()' ''; do
      printf '\x0a\x07\x05\x03%s' "$s" > "$corpus/$(echo -n "$s" | od -An -tx1 | tr -d ' \n')"
    done ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "$corpus" -- \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1048576 -timeout=10
