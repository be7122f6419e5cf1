#!/usr/bin/env python3
"""quarry's MCP tasks seen by the official MCP Python SDK (issue #28, part 3).

The SDK (mcp 2.3.0) ships no tasks client: on 2026-07-28 tasks are an extension
(`io.modelcontextprotocol/tasks`), and its 2025-11-25 task types are types only.
What it does ship is the extension API a client takes a task through: a
`ClientExtension` whose `ResultClaim` claims the `resultType: "task"` of a
`tools/call`, advertised in every request's capabilities. `TasksExtension` below
is that client side of the extension, a few lines over the SDK's public API
(`ClientSession.send_request` with typed requests).

Against a running `quarry serve`, through `quarry mcp` relays as an assistant
connects, on a generated root where one search takes a second or more:
  - a long call by a client with the extension is answered with a task that the
    claim resolves by polling tasks/get (status `working` then `completed`), and
    its result equals the plain call's (a client without the extension);
  - a task cancelled mid-run with tasks/cancel reads `cancelled` afterwards;
  - a client starts a task and disconnects; a new client (a new relay process)
    polls it by id and gets its result;
  - on the 2025-11-25 wire, the initialize result declares `capabilities.tasks`
    and tools/list gives each tool its `execution.taskSupport`; tasks/get,
    tasks/result, tasks/list and tasks/cancel answer through the SDK's legacy
    types.
Exits non-zero, naming each failure.
"""

import argparse
import asyncio
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
from mcp import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sdk_client import Failures, start_daemon  # noqa: E402

TASKS = "io.modelcontextprotocol/tasks"
HEAVY = {"query": "a|e|i|o|u", "scope": {"type": "global"}, "max_results": 5}


# ---- the client side of the Tasks extension (2026-07-28) --------------------


class TaskHandle(types.Result):
    """A `tools/call` answered with a task (`resultType: "task"`)."""

    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """A `tasks/get` answer: the task, its result or error inlined."""

    task_id: str
    status: str
    status_message: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskAck(types.Result):
    """The empty acknowledgement of tasks/cancel."""

    result_type: str | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


async def get_task(session, task_id):
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), DetailedTask)


async def poll(session, task_id, seen, limit=120):
    """tasks/get until the task ends, at the interval the server asks for."""
    deadline = time.monotonic() + limit
    while True:
        task = await get_task(session, task_id)
        seen.append(task)
        if task.status not in ("working", "input_required"):
            return task
        if time.monotonic() > deadline:
            raise SystemExit(f"task {task_id} never ended")
        await asyncio.sleep((task.poll_interval_ms or 1000) / 1000)


class TasksExtension(ClientExtension):
    """Declares the extension and resolves a task result into the call's result."""

    identifier = TASKS

    def __init__(self):
        self.polls = []

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle, ctx):
        task = await poll(ctx.session, handle.task_id, self.polls)
        if task.status == "completed":
            return types.CallToolResult.model_validate(task.result)
        raise RuntimeError(f"task {handle.task_id} ended {task.status}: {task.status_message}")


# ---- the checks ---------------------------------------------------------------


def heavy_root(root):
    """60 documents of 2,000 lines of eight random words: every line has a vowel,
    so HEAVY matches all 120,000 lines (the Rust tests' heavy corpus)."""
    rnd = random.Random(7)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(3, 9)))
             for _ in range(4000)]
    docs = Path(root) / "docs"
    docs.mkdir(parents=True)
    for f in range(60):
        lines = (" ".join(rnd.choice(words) for _ in range(8)) for _ in range(2000))
        (docs / f"doc{f}.txt").write_text("\n".join(lines) + "\n")


def comparable(result):
    """A result without its timing (two runs differ only there)."""
    data = json.loads(result.content[0].text)
    data["metadata"].pop("execution_time_ms", None)
    return data


async def wait_indexed(client):
    deadline = time.monotonic() + 120
    while True:
        status = await client.call_tool("index_status", {})
        if status.structured_content["data"]["complete"]:
            return
        if time.monotonic() > deadline:
            raise SystemExit("the index never completed")
        await asyncio.sleep(0.2)


async def extension_checks(relay, failures):
    async with Client(relay, read_timeout_seconds=120) as plain_client:
        failures.check(plain_client.protocol_version == "2026-07-28",
                       f"negotiated {plain_client.protocol_version}")
        await wait_indexed(plain_client)
        started = time.monotonic()
        plain = await plain_client.call_tool("search_documents", HEAVY)
        alone = time.monotonic() - started
        failures.check(not plain.is_error, f"the plain search failed: {plain}")
        print(f"tasks client: one heavy search takes {alone:.2f} s", file=sys.stderr)

    tasks = TasksExtension()
    async with Client(relay, read_timeout_seconds=120, extensions=[tasks]) as client:
        caps = client.server_capabilities
        failures.check(TASKS in (caps.extensions or {}), f"the server does not declare {TASKS}: {caps}")
        # The claim resolves the task: the caller sees the call's result.
        result = await client.call_tool("search_documents", HEAVY)
        statuses = [p.status for p in tasks.polls]
        failures.check(statuses[:1] == ["working"], f"the first poll was not working: {statuses}")
        failures.check(statuses[-1:] == ["completed"], f"the task did not complete: {statuses}")
        failures.check(comparable(result) == comparable(plain),
                       "the task's result differs from the plain call's")
        # A quick tool is answered plainly, even to a client with the extension.
        quick = await client.session.call_tool("list_files", {"kind": "all", "limit": 1}, allow_claimed=True)
        failures.check(isinstance(quick, types.CallToolResult), f"list_files became a task: {quick}")

        # Cancelled mid-run.
        handle = await client.session.call_tool("search_documents", HEAVY, allow_claimed=True)
        failures.check(isinstance(handle, TaskHandle), f"no task for a long call: {handle}")
        ack = await client.session.send_request(CancelTask(params=TaskIdParams(task_id=handle.task_id)), TaskAck)
        failures.check(ack.result_type == "complete", f"tasks/cancel answered {ack}")
        after = await get_task(client.session, handle.task_id)
        failures.check(after.status == "cancelled", f"a cancelled task reads {after.status}")

        # Started, then the client goes away.
        left = await client.session.call_tool("search_documents", HEAVY, allow_claimed=True)
        failures.check(isinstance(left, TaskHandle), f"no task for a long call: {left}")

    async with Client(relay, read_timeout_seconds=120, extensions=[TasksExtension()]) as again:
        seen = []
        ended = await poll(again.session, left.task_id, seen)
        failures.check(ended.status == "completed",
                       f"the task of a client that left ended {ended.status}: {ended.status_message}")
        if ended.result is not None:
            fetched = types.CallToolResult.model_validate(ended.result)
            failures.check(comparable(fetched) == comparable(plain),
                           "the result fetched after reconnecting differs from the plain call's")


async def legacy_checks(relay, failures):
    async with Client(relay, mode="legacy", read_timeout_seconds=120) as client:
        failures.check(client.protocol_version == "2025-11-25", f"negotiated {client.protocol_version}")
        tasks_cap = client.server_capabilities.model_extra or {}
        declared = getattr(client.server_capabilities, "tasks", None) or tasks_cap.get("tasks")
        failures.check(declared is not None, f"no tasks capability: {client.server_capabilities}")
        tools = {t.name: t for t in (await client.list_tools()).tools}
        support = {n: (t.execution.task_support if getattr(t, "execution", None) else None)
                   for n, t in tools.items()}
        failures.check(support.get("search_documents") == "optional", f"search_documents: {support}")
        failures.check(support.get("list_files") == "forbidden", f"list_files: {support}")
        listed = await client.session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        ids = [t.task_id for t in listed.tasks]
        # The tasks the 2026 clients made are the daemon's: listed here too.
        failures.check(len(ids) >= 3, f"tasks/list lists {ids}")
        if ids:
            got = await client.session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=ids[0])), types.GetTaskResult)
            failures.check(got.status == "completed", f"the first task reads {got.status}")
            payload = await client.session.send_request(
                types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=ids[0])),
                types.CallToolResult)
            failures.check(not payload.is_error and payload.structured_content is not None,
                           f"tasks/result of a completed task: {payload}")
            try:
                await client.session.send_request(
                    types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=ids[0])),
                    types.CancelTaskResult)
                failures.append("cancelling a completed task was accepted")
            except Exception as e:  # noqa: BLE001 - the SDK raises MCPError
                failures.check(getattr(e, "code", None) == -32602, f"cancelling an ended task: {e!r}")


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quarry", required=True, help="the quarry binary")
    a = ap.parse_args()

    failures = Failures()
    scratch = Path(tempfile.mkdtemp(prefix="quarry-tasks-"))
    try:
        root = scratch / "data"
        heavy_root(root)
        config = scratch / "quarry.toml"
        config.write_text("[toolsets]\nrag = false\n")
        catalog = scratch / "catalog"
        daemon, sock_path = start_daemon(a.quarry, root, catalog, config)
        try:
            relay = StdioServerParameters(
                command=a.quarry,
                args=["mcp", "--catalog", str(catalog), "--socket", str(sock_path), "--config", str(config)],
            )
            await extension_checks(relay, failures)
            await legacy_checks(relay, failures)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    print(f"tasks client: {'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
