#!/usr/bin/env bash
# The code benchmark on real trees: unpacks ../shared/corpus (abseil-cpp, uproot5)
# into a new temporary folder (or BENCHDATA), installs the py-tree-sitter bindings
# into a virtual environment outside the repository (a new temporary folder, or
# VENV), then runs `cargo bench --bench code`, which times quarry beside
# universal-ctags (Debian package universal-ctags) and py-tree-sitter in the same run
# (finding functions, scripts/bench/treesitter_functions.py; parse-only throughput on
# all cores against quarry's indexing with references, scripts/bench/treesitter_parse.py).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-$(mktemp -d)/venv}
data=${BENCHDATA:-$(mktemp -d)/code}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q tree-sitter tree-sitter-python tree-sitter-cpp
fi
mkdir -p "$data"
for archive in ../shared/corpus/*.tar.xz; do
  name=$(basename "$archive" .tar.xz)
  [ -d "$data/$name" ] || { mkdir -p "$data/$name" && tar -xJf "$archive" -C "$data/$name"; }
done
command -v ctags >/dev/null || echo "ctags (Debian package universal-ctags) is not installed: no side-by-side indexing figure" >&2
QUARRY_CODE_BENCH_DIR="$data" QUARRY_BENCH_PYTHON="$venv/bin/python" cargo bench --bench code
