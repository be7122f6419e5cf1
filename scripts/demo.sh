#!/usr/bin/env bash
# Builds quarry and runs it the way an assistant would: `quarry mcp` in-process on
# the bundled sample data (testdata/), with a short scripted MCP session. The
# catalog goes to a temporary folder that is removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-system.sh
cargo build --release --quiet
catalog=$(mktemp -d)
trap 'rm -rf "$catalog"' EXIT

session() {
  cat <<'JSON'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
JSON
  sleep 1 # let the initial scan of the sample data finish
  cat <<'JSON'
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_files","arguments":{"kind":"all","limit":5}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_files","arguments":{"pattern":"*HZZ*"}}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"index_status","arguments":{}}}
JSON
}

titles=("initialize" "tools/list" "list_files(kind=all, limit=5)" "list_files(pattern=*HZZ*)" "index_status()")
n=0
session | ./target/release/quarry mcp --root sample=testdata --catalog "$catalog" 2>/dev/null |
  while IFS= read -r line; do
    echo "=== ${titles[$n]:-message}"
    echo "$line"
    echo
    n=$((n + 1))
  done
