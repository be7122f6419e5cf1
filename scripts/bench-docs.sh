#!/usr/bin/env bash
# The documents benchmark on the issue's corpus: generates 5000 Markdown and text
# files of 100 MB in all with ../shared/benchgen/gen_docs.py (into a new temporary
# folder, or BENCHDATA), then runs `cargo bench --bench documents` on them, which
# prints indexing MB/s and search_documents p50/p99 per query form beside ripgrep
# (when `rg` is installed). gen_docs.py needs numpy: it is installed into a virtual
# environment outside the repository (a new temporary folder, or VENV).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-$(mktemp -d)/venv}
data=${BENCHDATA:-$(mktemp -d)/benchdata}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy
fi
out=$(BENCHDATA="$data" "$venv/bin/python" ../shared/benchgen/gen_docs.py --files 5000 --total-mb 100 2>/dev/null)
corpus=$(echo "$out" | "$venv/bin/python" -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])["wrote"])')
command -v rg >/dev/null || echo "rg (Debian package ripgrep) is not installed: no side-by-side timing" >&2
QUARRY_DOCS_BENCH_DIR="$corpus" cargo bench --bench documents
