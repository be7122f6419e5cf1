#!/usr/bin/env python3
"""Load and fault soak for `quarry serve` (issue #14, part 6). Standard library only.

Phases, each optional:
  load      CLIENTS concurrent socket clients for SECONDS, each sending one request at a
            time (a mix of the read-only tools that tools/list offers, with the arguments
            of tool_args.json), checking that every reply carries the id it was asked with.
  pipeline  CLIENTS clients each writing DEPTH requests before reading any reply.
  kill      kill -9 at random instants during `quarry rebuild` and during `quarry serve`
            while files are written and deleted under the root; after each, a restarted
            daemon must open the catalog and, once settled, answer list_files and
            index_status exactly as a daemon on a freshly rebuilt catalog does.

The last line printed is the summary the issue asks for:
  soak: N calls, E errors, X crossed, p50 A ms, p99 B ms, rss C->D MB (peak P), fds F->G
The exit status is non-zero when a target is missed.
"""

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOCOL = "2025-11-25"
REPLY_TIMEOUT = 60.0


def log(msg):
    print(msg, file=sys.stderr, flush=True)


sys.path.insert(0, str(HERE))
from tool_table import ToolTable  # noqa: E402


# ---- daemon process and its resources -------------------------------------------------


def rss_kb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Daemon:
    def __init__(self, quarry, root, catalog):
        self.socket_path = Path(catalog) / "quarry.sock"
        # The daemon's log is kept, so a failed start says why.
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [quarry, "serve", "--root", f"data={root}", "--catalog", str(catalog)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        deadline = time.monotonic() + 120
        while not self.answers():
            if self.proc.poll() is not None:
                self.log.seek(0)
                tail = self.log.read().decode(errors="replace").splitlines()[-15:]
                raise SystemExit(f"quarry serve exited with {self.proc.returncode} at start:\n"
                                 + "\n".join(tail))
            if time.monotonic() > deadline:
                raise SystemExit("quarry serve did not listen within 120 s")
            time.sleep(0.05)

    def answers(self):
        if not self.socket_path.exists():
            return False
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(self.socket_path))
            return True
        except OSError:
            return False

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill9(self):
        self.proc.kill()
        self.proc.wait()


class Session:
    """One blocking MCP session over the socket (handshake, then ordered requests)."""

    def __init__(self, socket_path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(REPLY_TIMEOUT)
        self.sock.connect(str(socket_path))
        self.reader = self.sock.makefile("rb")
        self.next_id = 1
        self.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {},
             "clientInfo": {"name": "quarry-soak", "version": "1"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.sock.sendall((json.dumps(message) + "\n").encode())

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        reply = json.loads(self.reader.readline())
        if reply.get("id") != rid:
            raise RuntimeError(f"reply id {reply.get('id')} for request {rid}")
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def call(self, tool, arguments):
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result['content'][0]['text']}")
        return result["structuredContent"]

    def close(self):
        self.reader.close()
        self.sock.close()


# Calls on the files scripts/soak.sh generates (used when the file is there), so the
# load also reads the generated data, not only the fixtures tool_args.json points at.
GENERATED_CALLS = [
    ("gen/events_20000.root", "inspect_file", {"path": "gen/events_20000.root"}),
    ("gen/events_20000.root", "list_branches",
     {"path": "gen/events_20000.root", "tree": "events", "include_stats": True}),
    ("gen/docs", "search_documents",
     {"query": "luminosity", "scope": {"type": "collection", "path": "gen/docs"}}),
    ("gen/docs", "list_collections", {"path": "gen/docs"}),
    ("gen/code", "list_files", {"kind": "code", "pattern": "gen/code/**", "limit": 50}),
    ("gen/data_20000x4.h5", "list_files", {"kind": "hdf5"}),
]


def read_only_calls(socket_path, root):
    """The (tool, arguments) mix: every read-only tool the daemon lists, with its table
    entries (a listed tool without one is an error, so new tools join the soak), plus the
    calls on generated files that the daemon offers."""
    table = ToolTable.load()
    s = Session(socket_path)
    try:
        tools = s.request("tools/list", {})["tools"]
        problems = table.coverage(t["name"] for t in tools)
        if problems:
            raise SystemExit("; ".join(problems))

        async def call(tool, arguments):
            return s.call(tool, arguments)

        # On generated data the RAG trees of 200 documents take minutes in a debug build.
        asyncio.run(table.resolve(call, root, patience=600))
    finally:
        s.close()
    read_only = {t["name"] for t in tools if (t.get("annotations") or {}).get("readOnlyHint")}
    calls = sorted(table.calls(read_only), key=lambda c: c[0])
    calls += [(tool, args) for needed, tool, args in GENERATED_CALLS
              if tool in read_only and (Path(root) / needed).exists()]
    return calls


def wait_settled(socket_path, timeout=300):
    """Waits until index_status says every root is scanned and nothing is pending."""
    deadline = time.monotonic() + timeout
    while True:
        s = Session(socket_path)
        try:
            status = s.call("index_status", {})
        finally:
            s.close()
        if status["data"]["complete"]:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"index not complete after {timeout} s: {status}")
        time.sleep(0.2)


# ---- load -----------------------------------------------------------------------------


class Tally:
    def __init__(self):
        self.calls = 0
        self.errors = 0
        self.crossed = 0
        self.latencies = []
        self.first_errors = []

    def error(self, what):
        self.errors += 1
        if len(self.first_errors) < 5:
            self.first_errors.append(what)


async def open_session(socket_path):
    reader, writer = await asyncio.open_unix_connection(str(socket_path), limit=1 << 24)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                       "clientInfo": {"name": "quarry-soak", "version": "1"}}}
    writer.write((json.dumps(init) + "\n").encode())
    writer.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    await writer.drain()
    reply = json.loads(await asyncio.wait_for(reader.readline(), REPLY_TIMEOUT))
    if reply.get("id") != 0 or "result" not in reply:
        raise RuntimeError(f"handshake failed: {reply}")
    return reader, writer


def judge(reply, expected_id, tool, tally):
    """Counts one reply: crossed when its id is not the one asked, an error when the
    call failed or its result is not that tool's (the operation names the tool)."""
    if reply.get("id") != expected_id:
        tally.crossed += 1
        return
    if "error" in reply:
        tally.error(f"{tool}: {reply['error']}")
        return
    result = reply["result"]
    if result.get("isError"):
        tally.error(f"{tool}: {result['content'][0]['text'][:300]}")
        return
    operation = (result.get("structuredContent") or {}).get("metadata", {}).get("operation")
    if operation not in (None, tool):
        # A reply meant for another request that happened to carry our id.
        tally.crossed += 1


async def steady_client(socket_path, calls, stop_at, tally, seed):
    rng = random.Random(seed)
    try:
        reader, writer = await open_session(socket_path)
    except Exception as e:  # noqa: BLE001 - every failure to connect counts as an error
        tally.error(f"connect: {e}")
        return
    rid = 1
    try:
        while time.monotonic() < stop_at:
            tool, args = rng.choice(calls)
            msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}
            started = time.monotonic()
            writer.write((json.dumps(msg) + "\n").encode())
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), REPLY_TIMEOUT)
            if not line:
                tally.error(f"{tool}: connection closed")
                return
            tally.latencies.append(time.monotonic() - started)
            tally.calls += 1
            judge(json.loads(line), rid, tool, tally)
            rid += 1
    except Exception as e:  # noqa: BLE001
        tally.error(f"client: {e!r}")
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass


async def pipelined_client(socket_path, calls, depth, tally, seed):
    rng = random.Random(seed)
    try:
        reader, writer = await open_session(socket_path)
    except Exception as e:  # noqa: BLE001
        tally.error(f"connect: {e}")
        return
    asked = {}
    try:
        started = time.monotonic()
        for rid in range(1, depth + 1):
            tool, args = rng.choice(calls)
            asked[rid] = tool
            msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}
            writer.write((json.dumps(msg) + "\n").encode())
        await writer.drain()
        # Replies may come in any order (JSON-RPC allows it); each id must be one we
        # asked and not yet answered.
        for _ in range(depth):
            line = await asyncio.wait_for(reader.readline(), REPLY_TIMEOUT)
            if not line:
                tally.error("connection closed with replies outstanding")
                return
            reply = json.loads(line)
            tool = asked.pop(reply.get("id"), None)
            tally.calls += 1
            tally.latencies.append(time.monotonic() - started)
            if tool is None:
                tally.crossed += 1
                continue
            judge(reply, reply["id"], tool, tally)
    except Exception as e:  # noqa: BLE001
        tally.error(f"pipelined client: {e!r}")
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass


class Sampler:
    """Samples the daemon's RSS every 100 ms while the load runs."""

    def __init__(self, pid):
        self.pid = pid
        self.peak_kb = 0
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            self.peak_kb = max(self.peak_kb, rss_kb(self.pid))
            time.sleep(0.1)

    def stop(self):
        self.running = False
        self.thread.join()


async def run_load(daemon, calls, clients, seconds):
    tally = Tally()
    # Warm-up is the first tenth of the run (at least a second) under full load: caches
    # fill there, so the RSS growth target is measured from its end.
    warmup = max(1.0, seconds / 10)
    stop_at = time.monotonic() + warmup + seconds
    tasks = [asyncio.create_task(steady_client(daemon.socket_path, calls, stop_at, tally, i))
             for i in range(clients)]
    await asyncio.sleep(warmup)
    rss_start = rss_kb(daemon.pid)
    calls_at_warmup = tally.calls
    await asyncio.gather(*tasks)
    rss_end = rss_kb(daemon.pid)
    return tally, rss_start, rss_end, calls_at_warmup


async def run_pipelined(daemon, calls, clients, depth):
    tally = Tally()
    await asyncio.gather(*[pipelined_client(daemon.socket_path, calls, depth, tally, 1000 + i)
                           for i in range(clients)])
    return tally


def wait_fds(pid, target, timeout=10.0):
    """The fd count once closed connections are reaped (or after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        n = fd_count(pid)
        if n <= target or time.monotonic() > deadline:
            return n
        time.sleep(0.1)


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))] * 1000


# ---- kill -9 trials -------------------------------------------------------------------


def catalog_state(socket_path):
    """What a settled daemon says about its roots, minus what legitimately differs
    between two catalogs of the same files (scan times)."""
    wait_settled(socket_path)
    s = Session(socket_path)
    try:
        files = s.call("list_files", {"limit": 1000})["data"]
        status = s.call("index_status", {})["data"]
    finally:
        s.close()
    if files["total_matched"] > len(files["files"]):
        raise SystemExit("more than 1000 files: the kill trials compare whole listings")
    for root in status["roots"]:
        root.pop("last_full_scan", None)
        root["failed_files"].sort(key=lambda f: f["path"])
    return {"files": sorted(files["files"], key=lambda f: f["path"]), "status": status}


def state_after_restart(quarry, root, catalog):
    daemon = Daemon(quarry, root, catalog)
    try:
        return catalog_state(daemon.socket_path)
    finally:
        daemon.stop()


def fresh_state(quarry, root, scratch):
    catalog = Path(tempfile.mkdtemp(prefix="fresh-", dir=scratch))
    subprocess.run([quarry, "rebuild", "--root", f"data={root}", "--catalog", str(catalog)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = state_after_restart(quarry, root, catalog)
    shutil.rmtree(catalog)
    return state


def describe_difference(got, want):
    got_paths = {f["path"] for f in got["files"]}
    want_paths = {f["path"] for f in want["files"]}
    if got_paths != want_paths:
        return (f"files only after the kill: {sorted(got_paths - want_paths)[:5]}, "
                f"only in the fresh rebuild: {sorted(want_paths - got_paths)[:5]}")
    if got["files"] != want["files"]:
        return "same paths, different file entries"
    return f"index_status differs: {got['status']} vs {want['status']}"


class Churn:
    """Writes, rewrites and deletes files under ROOT/churn until stopped, so a kill
    lands while the watcher and indexer have work in flight."""

    def __init__(self, root, seed):
        self.dir = Path(root) / "churn"
        self.dir.mkdir(exist_ok=True)
        self.rng = random.Random(seed)
        self.sample_root = next(Path(root).rglob("*.root"), None)
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        n = 0
        while self.running:
            n += 1
            name = self.dir / f"f{self.rng.randrange(40)}"
            kind = self.rng.choice(["md", "py", "txt", "root"])
            path = name.with_suffix("." + kind)
            try:
                if self.rng.random() < 0.3:
                    for old in self.dir.glob(name.name + ".*"):
                        old.unlink()
                elif kind == "root" and self.sample_root is not None:
                    shutil.copyfile(self.sample_root, path)
                elif kind == "py":
                    path.write_text(f"class Churn{n}:\n    def step(self):\n        return {n}\n")
                else:
                    path.write_text(f"# Note {n}\n\nchurn line {n} about pedestal drift\n")
            except OSError:
                pass
            time.sleep(self.rng.uniform(0.001, 0.02))

    def stop(self):
        self.running = False
        self.thread.join()


def kill_trials(quarry, root, scratch, trials, seed):
    """Returns the failures (empty when every trial ended on the fresh rebuild's state)."""
    rng = random.Random(seed)
    failures = []
    reference = fresh_state(quarry, root, scratch)

    # How long a clean rebuild takes, so the kills spread over all of it.
    catalog = Path(tempfile.mkdtemp(prefix="timing-", dir=scratch))
    started = time.monotonic()
    subprocess.run([quarry, "rebuild", "--root", f"data={root}", "--catalog", str(catalog)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rebuild_seconds = time.monotonic() - started
    shutil.rmtree(catalog)

    # One catalog for all rebuild trials: each kill lands on whatever the last one left.
    catalog = Path(tempfile.mkdtemp(prefix="killed-rebuild-", dir=scratch))
    for trial in range(trials):
        proc = subprocess.Popen(
            [quarry, "rebuild", "--root", f"data={root}", "--catalog", str(catalog)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        at = rng.uniform(0, rebuild_seconds)
        time.sleep(at)
        proc.kill()
        proc.wait()
        state = state_after_restart(quarry, root, catalog)
        ok = state == reference
        log(f"kill -9 during rebuild, trial {trial + 1}, at {at:.2f} s: "
            f"{'same as a fresh rebuild' if ok else 'DIFFERS'}")
        if not ok:
            failures.append(f"rebuild trial {trial + 1}: {describe_difference(state, reference)}")

    # Serve trials on a copy of the root, which the churn changes.
    live = Path(tempfile.mkdtemp(prefix="live-", dir=scratch)) / "data"
    shutil.copytree(root, live, symlinks=True)
    catalog = Path(tempfile.mkdtemp(prefix="killed-serve-", dir=scratch))
    for trial in range(trials):
        daemon = Daemon(quarry, live, catalog)
        churn = Churn(live, seed + trial)
        at = rng.uniform(0.05, 3.0)
        time.sleep(at)
        daemon.kill9()
        churn.stop()
        state = state_after_restart(quarry, live, catalog)
        want = fresh_state(quarry, live, scratch)
        ok = state == want
        log(f"kill -9 during serve with churn, trial {trial + 1}, at {at:.2f} s: "
            f"{'same as a fresh rebuild' if ok else 'DIFFERS'}")
        if not ok:
            failures.append(f"serve trial {trial + 1}: {describe_difference(state, want)}")
    return failures


# ---- main -----------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quarry", required=True, help="the quarry binary")
    ap.add_argument("--root", required=True, help="the data root (served as 'data')")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--pipeline-depth", type=int, default=100,
                    help="requests each client pipelines in the pipelined run (0: skip it)")
    ap.add_argument("--kill-trials", type=int, default=10,
                    help="kill -9 trials during rebuild and during serve, each (0: skip)")
    ap.add_argument("--check-rss", action="store_true",
                    help="fail when RSS grows more than 10%% after warm-up")
    ap.add_argument("--seed", type=int, default=14)
    a = ap.parse_args()

    scratch = tempfile.mkdtemp(prefix="quarry-soak-")
    failures = []
    try:
        catalog = Path(scratch) / "catalog"
        daemon = Daemon(a.quarry, a.root, catalog)
        try:
            wait_settled(daemon.socket_path)
            calls = read_only_calls(daemon.socket_path, a.root)
            log(f"soak: {a.clients} clients x {a.seconds:g} s, {len(calls)} calls in the mix, "
                f"over {', '.join(sorted({t for t, _ in calls}))}")
            fds_start = fd_count(daemon.pid)
            sampler = Sampler(daemon.pid)
            tally, rss_start, rss_end, _ = asyncio.run(
                run_load(daemon, calls, a.clients, a.seconds))
            sampler.stop()
            fds_end = wait_fds(daemon.pid, fds_start)
            peak_mb = max(sampler.peak_kb, rss_end) / 1024
            for e in tally.first_errors:
                log(f"error: {e}")

            if a.pipeline_depth > 0:
                pipe = asyncio.run(run_pipelined(daemon, calls, a.clients, a.pipeline_depth))
                for e in pipe.first_errors:
                    log(f"pipelined error: {e}")
                log(f"pipelined: {a.clients} clients x {a.pipeline_depth} requests: "
                    f"{pipe.calls} replies, {pipe.errors} errors, {pipe.crossed} crossed, "
                    f"daemon peak RSS {rss_kb(daemon.pid, 'VmHWM') / 1024:.0f} MB")
                if pipe.errors or pipe.crossed or pipe.calls != a.clients * a.pipeline_depth:
                    failures.append("pipelined run: errors, crossed or missing replies")
        finally:
            daemon.stop()

        if a.kill_trials > 0:
            failures += kill_trials(a.quarry, a.root, scratch, a.kill_trials, a.seed)

        if tally.errors:
            failures.append(f"{tally.errors} errors")
        if tally.crossed:
            failures.append(f"{tally.crossed} crossed replies")
        if fds_end > fds_start:
            failures.append(f"fd leak: {fds_start} -> {fds_end}")
        growth = (rss_end - rss_start) / max(rss_start, 1)
        if a.check_rss and growth > 0.10:
            failures.append(f"RSS grew {growth:.0%} after warm-up")
        for f in failures:
            log(f"FAILED: {f}")
        print(f"soak: {tally.calls} calls, {tally.errors} errors, {tally.crossed} crossed, "
              f"p50 {percentile(tally.latencies, 50):.1f} ms, "
              f"p99 {percentile(tally.latencies, 99):.1f} ms, "
              f"rss {rss_start / 1024:.0f}->{rss_end / 1024:.0f} MB (peak {peak_mb:.0f}), "
              f"fds {fds_start}->{fds_end}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
