#!/usr/bin/env python3
"""Checks what the MCP Inspector CLI printed for quarry: every tool of its tools/list has an
entry in tool_args.json and the table names no tool that is not served (but its _optional ones), and its tools/call of inspect_file is a successful result whose
structuredContent describes the file asked for."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_table import ToolTable  # noqa: E402


def main(tools_path, call_path):
    failures = []

    listed = json.loads(Path(tools_path).read_text())
    names = sorted(t["name"] for t in listed["tools"])
    failures += [f"Inspector tools/list: {p}" for p in ToolTable.load().coverage(names)]
    for tool in listed["tools"]:
        if "outputSchema" not in tool:
            failures.append(f"Inspector tools/list: {tool['name']} has no outputSchema")

    call = json.loads(Path(call_path).read_text())
    structured = call.get("structuredContent") or {}
    if call.get("isError"):
        failures.append(f"Inspector tools/call inspect_file failed: {call}")
    elif structured.get("metadata", {}).get("operation") != "inspect_file":
        failures.append(f"Inspector tools/call inspect_file: unexpected result {str(call)[:500]}")
    elif "uproot-HZZ.root" not in json.dumps(structured.get("data")):
        failures.append("Inspector tools/call inspect_file: the result does not name the file")

    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    print(f"inspector: {'FAILED' if failures else 'ok'} ({len(names)} tools listed, one called)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
