#!/usr/bin/env bash
# Fuzzes with libFuzzer (cargo-fuzz). Usage: scripts/fuzz.sh [SECONDS] [TARGET]
# (default 600 s, target root_reader; RUNS=N stops after N inputs instead, e.g.
# RUNS=1000000 scripts/fuzz.sh 36000 selection). Targets:
#   root_reader    the ROOT reader, seeded with the real test files and the ones
#                  written for the tests
#   rntuple_reader the RNTuple reader (anchor, envelopes, page lists, pages,
#                  fields and columns), seeded with the RNTuple test files
#   jsonrpc_codec  the JSON-RPC line framing and checks every client byte passes
#                  through, seeded with well-formed and malformed messages
#   selection      the cut language on uproot-HZZ.root, seeded with the cuts of
#                  tests/fixtures/root/selections.json (integer edge cuts among them) and
#                  the dictionary fuzz/dicts/selection.dict (operators, edge numbers)
#   code_query     execute_query's query compiler and runs, seeded with the
#                  queries the code tests use
#   code_source    the code reader (tree-sitter parse and symbol extraction),
#                  seeded with the C++ and Python test sources
#   hdf5_reader    the HDF5 tree walk and slice reads (libhdf5), seeded with the
#                  test files
#   hdf5_slice     the NumPy slice parser and resolver: four shape bytes, then text
#   document_reader  the document reader in-process (pdf-extract, lopdf, the
#                  Markdown outline, the text cap): a first byte choosing PDF,
#                  Markdown or text, seeded with the test documents
#   worker_answer  the decoding of a PDF worker's answer, seeded with nothing
#   range_server   the daemon's side of the remote-HDF5 range protocol (requests
#                  a worker's driver sends), seeded with in- and out-of-bounds requests
#   remote_listing every remote folder listing parser (nginx JSON, HTML pages,
#                  WebDAV, S3, XRootD dirlist), seeded with the unit tests' answers
#   lzf_decoder    the HDF5 LZF filter's decoder: two limit bytes, then the
#                  stream, seeded with the LZF chunks of tests/data/hdf5/filters.h5
#   fit_model      fit_histogram's model parser and fits of what parses: a flags
#                  byte, then the model, seeded with the shapes and expressions
# Needs `cargo install cargo-fuzz`; on a stable toolchain RUSTC_BOOTSTRAP lets it
# use the sanitizer flags.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
target=${2:-root_reader}
dict=""
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
case "$target" in
  root_reader)
    cp testdata/root/*.root tests/data/root/*.root "$corpus/"
    max_len=1048576
    ;;
  rntuple_reader)
    cp testdata/rntuple/*.root tests/data/rntuple/*.root "$corpus/"
    max_len=1048576
    ;;
  jsonrpc_codec)
    printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' >"$corpus/initialize"
    printf '%s\n' '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_files","arguments":{"kind":"all"}}}' >"$corpus/call"
    printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}' >"$corpus/cancel"
    printf '%s' '{"jsonrpc":"2.0","id":"x","method":"ping","params":{"s":"\ud800"}}' >"$corpus/surrogate"
    printf '%s\n' '[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]' >"$corpus/batch"
    max_len=65536
    ;;
  selection)
    # Needs h5py: PYTHON names an interpreter that has it.
    "${PYTHON:-python3}" - "$corpus" <<'PY'
import json, pathlib, sys
doc = json.load(open("tests/fixtures/root/selections.json"))
cuts = [c["cut"] for f in doc["files"] for c in f["cuts"] + f["errors"]]
for i, cut in enumerate(cuts):
    (pathlib.Path(sys.argv[1]) / f"cut{i}").write_text(cut)
PY
    max_len=4096
    dict="$PWD/fuzz/dicts/selection.dict"
    ;;
  fit_model)
    for m in 'gaussian' 'gaussian + exponential' 'crystal_ball + polynomial(2)' 'voigtian + chebyshev(3)' \
      'double_crystal_ball' 'breit_wigner + argus' 'a*exp(-x/t) + b' 'pow(x, p) / (1 + exp((x - m)/w))'; do
      printf '\1%s' "$m" >"$corpus/$(echo "$m" | tr -c 'a-z0-9' _)"
    done
    # A finding kept as a seed: redundant parameters (a flat cost) with
    # extended, chi2 and Minos all set, which once ran Minos for 13 s.
    printf '\57%s' '((x )++w+a)++w+o+++ - m' >"$corpus/degenerate_minos"
    printf '\57%s' '((x )++A+a)++w+o+++ - m' >"$corpus/redundant_minos"
    printf '\57%s' '((x )+++A+aA+a)++w+opp*ppp*pp0ppppp*pp*xox+++w0ppppp*pp*xo' >"$corpus/long_minos"
    max_len=512
    ;;
  code_query)
    # The first byte picks the language: even C++, odd Python.
    printf '\0%s' '(function_definition declarator: (_) @decl) @fn' >"$corpus/cpp_fn"
    printf '\0%s' '(class_specifier name: (type_identifier) @name body: (field_declaration_list))' >"$corpus/cpp_class"
    printf '\0%s' '((identifier) @id (#match? @id "^[A-Z]") (#eq? @id "Calibrator"))' >"$corpus/cpp_pred"
    printf '\1%s' '(decorated_definition (decorator) @d definition: (function_definition name: (identifier) @n))' >"$corpus/py_decorated"
    printf '\1%s' '[(import_statement) (import_from_statement)] @imp' >"$corpus/py_imports"
    printf '\1%s' '(function_definition "async" name: (identifier) @name)*' >"$corpus/py_async"
    max_len=4096
    ;;
  code_source)
    i=0
    for f in $(find testdata/code -type f \( -name '*.py' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \)); do
      i=$((i + 1))
      case "$f" in *.py) tag='\1' ;; *) tag='\0' ;; esac
      { printf "$tag"; cat "$f"; } >"$corpus/src$i"
    done
    max_len=65536
    ;;
  hdf5_reader)
    cp testdata/hdf5/* tests/data/hdf5/*.h5 "$corpus/"
    max_len=1048576
    ;;
  hdf5_slice)
    for s in ':' '::-1' '1:5:2' '..., 0' '-1' '0, ::3, -2:' '()' ''; do
      printf '\x0a\x07\x05\x03%s' "$s" >"$corpus/$(echo -n "$s" | od -An -tx1 | tr -d ' \n')"
    done
    max_len=4096
    ;;
  document_reader)
    # The first byte picks the format: 0 PDF, 1 Markdown, 2 text.
    for f in testdata/docs/*.pdf; do { printf '\0'; cat "$f"; } >"$corpus/$(basename "$f")"; done
    for f in $(find testdata/docs -name '*.md'); do { printf '\1'; cat "$f"; } >"$corpus/$(basename "$f")"; done
    { printf '\2'; cat testdata/docs/run_log_2024.txt; } >"$corpus/run_log"
    max_len=1048576
    ;;
  lzf_decoder)
    # The raw LZF chunks of the test file, each after a limit of 0xFFFF.
    # Needs h5py: PYTHON names an interpreter that has it.
    "${PYTHON:-python3}" - "$corpus" <<'PY'
import sys, h5py
with h5py.File("tests/data/hdf5/filters.h5", "r") as f:
    for name in ("grid", "counts"):
        d = f["lzf"][name]
        for k in range(d.id.get_num_chunks()):
            offset = d.id.get_chunk_info(k).chunk_offset
            chunk = d.id.read_direct_chunk(offset)[1]
            open(f"{sys.argv[1]}/{name}{k}", "wb").write(b"\xff\xff" + chunk)
PY
    max_len=65536
    ;;
  worker_answer)
    printf '\0' >"$corpus/empty"
    max_len=65536
    ;;
  range_server)
    # Requests of 16 bytes (offset, length, little-endian): one in bounds,
    # one past the end, one longer than a request may ask.
    python3 - "$corpus" <<'PY'
import pathlib, struct, sys
d = pathlib.Path(sys.argv[1])
(d / "in_bounds").write_bytes(struct.pack("<QQ", 100, 200))
(d / "past_end").write_bytes(struct.pack("<QQ", 4000, 200))
(d / "too_long").write_bytes(struct.pack("<QQ", 0, 1 << 40) + struct.pack("<QQ", 0, 16))
PY
    max_len=4096
    ;;
  remote_listing)
    # One answer of each kind, after the byte that picks its parser.
    printf '\0[{"name":"a b.root","type":"file","mtime":"Fri, 27 Nov 2026 19:00:01 GMT","size":12},{"name":"sub","type":"directory"}]' >"$corpus/json"
    printf '\1<tr><td class="mode">---rw-</td><td class="size">12</td><td class="datetime">Sat, 28 Nov 2026 11:14:45 GMT</td><td class="name"><a href="/data/run%%201//f.root">f.root</a></td></tr><a href="sub/">sub/</a>' >"$corpus/html"
    printf '\2<D:multistatus xmlns:D="DAV:"><D:response><D:href>/data/run%%201//f.root</D:href><D:propstat><D:prop><D:getcontentlength>12</D:getcontentlength><D:getlastmodified>Sat, 28 Nov 2026 10:14:31 GMT</D:getlastmodified></D:prop></D:propstat></D:response></D:multistatus>' >"$corpus/webdav"
    printf '\3<ListBucketResult><Contents><Key>data/f.root</Key><Size>12</Size><LastModified>2026-11-27T19:00:01.000Z</LastModified><ETag>"x"</ETag></Contents><IsTruncated>false</IsTruncated></ListBucketResult>' >"$corpus/s3"
    printf '\4f.root\n0 12 0 1795806001\nsub\n0 4096 2 1795806001\n' >"$corpus/xrootd"
    max_len=65536
    ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "$corpus" -- \
  -max_total_time="$seconds" ${RUNS:+-runs="$RUNS"} -rss_limit_mb=2048 -max_len="$max_len" -timeout=10 ${dict:+-dict="$dict"}
