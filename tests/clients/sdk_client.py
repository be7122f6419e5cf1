#!/usr/bin/env python3
"""quarry seen by the official MCP Python SDK (issue #14, part 3).

Launches `quarry mcp` over stdio the way an assistant does, in each of the SDK's
connection modes, and once more as a relay to a running `quarry serve`. In each:
  - the negotiated protocol version is the one the mode asks for;
  - every tool tools/list lists has an entry in tool_args.json, and the table names
    no tool that is not served (but those of its _optional list): a new tool must bring
    its arguments, or this fails naming it;
  - every tool, called with those arguments on the fixture data, succeeds and its
    structured_content validates against the outputSchema it advertises;
  - a call with bad arguments is a tool error (isError) whose text and
    structured content are the spec's error object (error, message, suggestion).
Exits non-zero, naming each failure, when any of that does not hold.
"""

import argparse
import asyncio
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonschema
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_table import ToolTable  # noqa: E402

HERE = Path(__file__).resolve().parent
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"

# mode -> the protocol version quarry must end up speaking in it.
MODES = {"auto": MODERN, "legacy": HANDSHAKE, MODERN: MODERN}


class Failures(list):
    def check(self, ok, what):
        if not ok:
            self.append(what)
        return ok


async def wait_complete(client, label):
    """In-process, `quarry mcp` may still be scanning; results are compared only
    once index_status says the catalog is complete."""
    deadline = time.monotonic() + 120
    while True:
        result = await client.call_tool("index_status", {})
        if result.structured_content and result.structured_content["data"]["complete"]:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{label}: the index never completed")
        await asyncio.sleep(0.2)


async def exercise(params, mode, label, failures, root):
    table = ToolTable.load()
    async with Client(params, mode=mode, read_timeout_seconds=60) as client:
        failures.check(
            client.protocol_version == MODES[mode],
            f"{label}: negotiated {client.protocol_version}, expected {MODES[mode]}",
        )
        await wait_complete(client, label)
        listed = (await client.list_tools()).tools
        names = [t.name for t in listed]
        failures.check(len(names) == len(set(names)), f"{label}: duplicate tool names {names}")
        for problem in table.coverage(names):
            failures.append(f"{label}: {problem}")

        async def structured(tool, arguments):
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise SystemExit(f"{label}: {tool}{json.dumps(arguments)} failed: {result.content[0].text}")
            return result.structured_content

        await table.resolve(structured, root)
        by_name = {t.name: t for t in listed}
        calls = table.calls(names)
        for name, arguments in calls:
            tool = by_name[name]
            what = f"{label}: {name}{json.dumps(arguments)}"
            if not failures.check(tool.output_schema is not None, f"{label}: {name} has no outputSchema"):
                continue
            try:
                result = await client.call_tool(name, arguments)
            except Exception as e:  # noqa: BLE001 - the SDK's own outputSchema check raises
                failures.append(f"{what} raised in the SDK: {str(e)[:300]}")
                continue
            if not failures.check(
                not result.is_error,
                f"{what} failed: {result.content[0].text if result.content else result}",
            ):
                continue
            if not failures.check(result.structured_content is not None, f"{what} returned no structured_content"):
                continue
            try:
                jsonschema.validate(result.structured_content, tool.output_schema)
            except jsonschema.ValidationError as e:
                failures.append(f"{what}: the result breaks its outputSchema: {e.message} at {list(e.path)}")
            # The text item carries the same JSON, for clients that forward only text.
            texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
            failures.check(
                texts and json.loads(texts[0]) == result.structured_content,
                f"{what}: the text item is not its structured content",
            )

        # Bad arguments: a path outside every root, where a file path is expected.
        bad = await client.call_tool("inspect_file", {"path": "../../etc/passwd"})
        failures.check(bad.is_error, f"{label}: inspect_file with a path outside the roots succeeded")
        if bad.is_error:
            error = json.loads(bad.content[0].text)
            shape_ok = (
                isinstance(error.get("error"), str)
                and error["error"]
                and isinstance(error.get("message"), str)
                and isinstance(error.get("suggestion"), str)
            )
            failures.check(shape_ok, f"{label}: the error object lacks error/message/suggestion: {error}")
            if bad.structured_content is not None:
                failures.check(
                    bad.structured_content == error,
                    f"{label}: the error's structured content differs from its text",
                )
        # Arguments of the wrong type are a tool error too, not a protocol failure.
        wrong = await client.call_tool("list_files", {"limit": "many"})
        failures.check(wrong.is_error, f"{label}: list_files with limit='many' succeeded")
        return len({name for name, _ in calls}), len(calls)


def start_daemon(quarry, root, catalog, config):
    proc = subprocess.Popen(
        [quarry, "serve", "--root", f"data={root}", "--catalog", str(catalog), "--config", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sock_path = Path(catalog) / "quarry.sock"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"quarry serve exited with {proc.returncode}")
        if sock_path.exists():
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(sock_path))
                return proc, sock_path
            except OSError:
                pass
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("quarry serve did not listen within 60 s")
        time.sleep(0.05)


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quarry", required=True, help="the quarry binary")
    ap.add_argument("--root", required=True, help="the fixture data root (served as 'data')")
    a = ap.parse_args()

    failures = Failures()
    scratch = Path(tempfile.mkdtemp(prefix="quarry-sdk-"))
    try:
        catalog = scratch / "catalog"
        # An ingest folder, so that ingest_document (which writes) can be called too.
        config = scratch / "quarry.toml"
        config.write_text('[rag]\ningest_dir = "ingest"\n')
        subprocess.run(
            [a.quarry, "rebuild", "--root", f"data={a.root}", "--catalog", str(catalog), "--config", str(config)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        stdio = StdioServerParameters(
            command=a.quarry,
            args=["mcp", "--root", f"data={a.root}", "--catalog", str(catalog), "--config", str(config)],
        )
        for mode in MODES:
            n, k = await exercise(stdio, mode, f"stdio, mode {mode}", failures, a.root)
            print(f"sdk client: stdio, mode {mode}: {n} tools called ({k} calls)", file=sys.stderr)

        # The relay: a daemon owns the catalog, so `quarry mcp` on it can only relay.
        daemon_catalog = scratch / "daemon-catalog"
        daemon, sock_path = start_daemon(a.quarry, a.root, daemon_catalog, config)
        try:
            relay = StdioServerParameters(
                command=a.quarry,
                args=["mcp", "--root", f"data={a.root}", "--catalog", str(daemon_catalog),
                      "--socket", str(sock_path), "--config", str(config)],
            )
            for mode in ("auto", "legacy"):
                n, k = await exercise(relay, mode, f"relay to quarry serve, mode {mode}", failures, a.root)
                print(f"sdk client: relay to quarry serve, mode {mode}: {n} tools called ({k} calls)",
                      file=sys.stderr)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    print(f"sdk client: {'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
