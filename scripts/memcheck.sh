#!/usr/bin/env bash
# Runs quarry-rootio's RNTuple and decompression unit tests under valgrind's
# memcheck, which reports any use of memory never written. The readers
# decompress pages into memory they do not zero first (rntuple/decode.rs,
# `fill_direct`), trusting each decompressor to write every byte it reports;
# these tests read every page of the repository's RNTuple test files (zlib,
# LZMA, LZ4 and ZSTD among them) through each decoding path and compare the
# values, so a byte left unwritten is a memcheck error here. Fails when
# memcheck reports one. Needs valgrind (Debian's package). FILTER picks the
# tests (default: the RNTuple ones, then the decompression ones but the slow
# every-cut zlib test).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cargo test -p quarry-rootio --lib --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "quarry_rootio" and m.get("executable"):
        print(m["executable"])')
cd crates/quarry-rootio
if [ -n "${FILTER:-}" ]; then
  valgrind --error-exitcode=9 --track-origins=yes "$bin" "$FILTER" --test-threads=1
else
  valgrind --error-exitcode=9 --track-origins=yes "$bin" rntuple:: --test-threads=1
  valgrind --error-exitcode=9 --track-origins=yes "$bin" compression:: --skip a_zlib_head --test-threads=1
fi
