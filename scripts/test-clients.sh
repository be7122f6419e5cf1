#!/usr/bin/env bash
# quarry under real MCP clients (issue #14, part 3), run by scripts/test.sh:
#   - the official Python SDK (tests/clients/sdk_client.py): stdio in its auto, legacy and
#     pinned 2026-07-28 modes and as a relay to `quarry serve`; every tool called and its
#     result validated against its outputSchema; the error shape of a bad call;
#   - tasks (tests/clients/tasks_client.py): a long call as a task through the SDK's
#     extension API, polled, cancelled, and fetched again after a reconnect;
#   - the MCP Inspector CLI: tools/list and a tools/call through a config file.
# The SDK and the Inspector are installed once into a cache outside the repository
# (QUARRY_TEST_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/quarry-test), in folders named
# after the pinned versions, so a machine that ran this before installs nothing.
# Needs python3 (with venv) and node/npm: scripts/setup-system.sh installs them.
set -euo pipefail
cd "$(dirname "$0")/.."

INSPECTOR_VERSION=2.12.0
cache=${QUARRY_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry-test}
requirements=tests/clients/requirements.txt

for tool in python3 node npm; do
  command -v "$tool" >/dev/null || { echo "test-clients: $tool is missing; run scripts/setup-system.sh" >&2; exit 1; }
done

# A folder is used only once its install finished (the .complete mark), so an
# interrupted install is redone rather than trusted.
venv="$cache/python-$(sha256sum "$requirements" | cut -c1-16)"
if [ ! -e "$venv/.complete" ]; then
  rm -rf "$venv"
  echo "test-clients: installing the MCP Python SDK into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --requirement "$requirements"
  touch "$venv/.complete"
fi

inspector="$cache/inspector-$INSPECTOR_VERSION"
if [ ! -e "$inspector/.complete" ]; then
  rm -rf "$inspector"
  echo "test-clients: installing the MCP Inspector $INSPECTOR_VERSION into $inspector" >&2
  mkdir -p "$inspector"
  npm install --silent --no-audit --no-fund --prefix "$inspector" \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >/dev/null
  touch "$inspector/.complete"
fi

# scripts/test.sh has just built target/debug/quarry for the integration tests (with the
# test profile's fingerprint: `cargo build` would build the same program again).
if [ -z "${QUARRY_DEBUG_BUILT:-}" ]; then cargo build --quiet --bin quarry; fi
quarry="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/quarry"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# quarry's default ingest folder and catalogs go here, not into the user's data folder.
export XDG_DATA_HOME="$work/xdg-data"
cp -r testdata "$work/data"

"$venv/bin/python" tests/clients/sdk_client.py --quarry "$quarry" --root "$work/data"
# Long calls as MCP tasks (2026 Tasks extension and 2025-11-25 tasks) through the SDK.
"$venv/bin/python" tests/clients/tasks_client.py --quarry "$quarry"

# The Inspector launches quarry from a config file: its own --catalog flag would
# swallow quarry's if the command were given on its command line.
"$quarry" rebuild --root "data=$work/data" --catalog "$work/inspector-catalog" >/dev/null 2>&1
"$venv/bin/python" - "$quarry" "$work" >"$work/inspector.json" <<'PY'
import json, sys
quarry, work = sys.argv[1:]
print(json.dumps({"mcpServers": {"quarry": {
    "command": quarry,
    "args": ["mcp", "--root", f"data={work}/data", "--catalog", f"{work}/inspector-catalog"],
}}}))
PY
export MCP_INSPECTOR_SECRET_STORE=memory  # no keychain on CI machines; nothing secret here
inspect() {
  "$inspector/node_modules/.bin/mcp-inspector" --cli --config "$work/inspector.json" --server quarry "$@"
}
# --strict: exit 6 on a tool schema that clients cannot portably use.
# Its report (warnings included) is shown only when it fails.
if ! inspect --method tools/list --strict >"$work/tools.json" 2>"$work/strict.log"; then
  cat "$work/strict.log" >&2
  exit 1
fi
inspect --method tools/call --tool-name inspect_file --tool-arg path=root/uproot-HZZ.root >"$work/call.json"
"$venv/bin/python" tests/clients/check_inspector.py "$work/tools.json" "$work/call.json"
