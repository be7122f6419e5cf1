#!/usr/bin/env bash
# The RAG benchmark on the issue's corpus: generates 500 Markdown and text files
# of 10 MB in all with ../shared/benchgen/gen_docs.py (into a new temporary
# folder, or BENCHDATA), fetches the sentence model (scripts/fetch-model.sh,
# cached), then runs `cargo bench --bench rag`: tree building kB/s, rag_retrieve
# p50, one added document, embedding throughput and recall@5 lexical vs hybrid.
# gen_docs.py needs numpy: it is installed into a virtual environment outside the
# repository (a new temporary folder, or VENV).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-$(mktemp -d)/venv}
data=${BENCHDATA:-$(mktemp -d)/benchdata}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy
fi
corpus="$data/docs_10mb"
if [ ! -f "$corpus/QUERIES.json" ]; then
  BENCHDATA="$data" "$venv/bin/python" ../shared/benchgen/gen_docs.py --files 500 --total-mb 10 >/dev/null 2>&1
fi
model=$(scripts/fetch-model.sh)
QUARRY_RAG_BENCH_DIR="$corpus" QUARRY_RAG_BENCH_MODEL="$model" cargo bench --bench rag
