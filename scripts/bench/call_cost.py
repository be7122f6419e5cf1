#!/usr/bin/env python3
"""Daemon CPU time per tool call for the read-only discovery tools.

Starts `QUARRY serve` on a copy of testdata/, waits until its catalog is complete
and the daemon is idle (no background indexing or tree building left), then runs
CLIENTS socket clients at once, each sending CALLS requests one at a time (raw
JSON-RPC lines) in turn over list_files, index_status, inspect_file and
find_document. The daemon's CPU time (user + system, from /proc/PID/stat) over
the load, divided by the calls answered, is the cost per call: CPU time, not wall
time, so other processes on a busy machine change it little.

Usage: call_cost.py QUARRY [--clients 64] [--calls 300] [--rounds 3] [--tools a,b,...]
--tools restricts the mix to some of these tools; `ping` (no tool: the transport
and rmcp alone) may be named too. --attach CMD runs CMD during the rounds ({pid} is
replaced by the daemon's process id) and stops it with SIGINT after them, e.g.
--attach "perf record -e cpu-clock -F 2000 --call-graph dwarf -o perf.data -p {pid}"
or --attach "strace -c -f -o syscalls.txt -p {pid}". Prints one JSON line per round and a last line
with the median round. Standard library only.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")

CALLS = [
    ("list_files", {"kind": "all", "limit": 20}),
    ("index_status", {}),
    ("inspect_file", {"path": "root/uproot-HZZ.root"}),
    ("find_document", {"query": "calibration"}),
]
PING = ("ping", None)


def context_switches(pid):
    """Voluntary context switches of the daemon's live threads: each is a thread
    that went to sleep waiting (for work, a lock, a wake-up), so they count the
    hand-offs between threads a call costs, whatever else runs on the machine."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.file = self.sock.makefile("rwb", buffering=1 << 16)
        self.next_id = 0

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.file.write(json.dumps(msg).encode() + b"\n")
        self.file.flush()
        while True:
            reply = json.loads(self.file.readline())
            if reply.get("id") == self.next_id:
                return reply

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "call-cost", "version": "1"}})
        self.file.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.file.flush()

    def call(self, tool, arguments):
        if tool == "ping":
            return "result" in self.request("ping")
        reply = self.request("tools/call", {"name": tool, "arguments": arguments})
        return "result" in reply and not reply["result"].get("isError")


def wait_ready(sock_path, pid):
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            c = Client(sock_path)
            c.initialize()
            status = c.request("tools/call", {"name": "index_status", "arguments": {}})
            if status["result"]["structuredContent"]["data"].get("complete"):
                break
        except (OSError, KeyError, ValueError):
            pass
        time.sleep(0.2)
    # Idle: under 20 ms of CPU in a second (background passes finished).
    while time.time() < deadline:
        before = cpu_seconds(pid)
        time.sleep(1.0)
        if cpu_seconds(pid) - before < 0.02:
            return
    raise SystemExit("the daemon never became idle")


def run_round(sock_path, pid, clients, calls, mix):
    conns = [Client(sock_path) for _ in range(clients)]
    for c in conns:
        c.initialize()
    failures = []
    start_gate = threading.Barrier(clients + 1)

    def work(k, conn):
        start_gate.wait()
        for i in range(calls):
            tool, args = mix[(k + i) % len(mix)]
            if not conn.call(tool, args):
                failures.append(tool)

    threads = [threading.Thread(target=work, args=(k, c)) for k, c in enumerate(conns)]
    for t in threads:
        t.start()
    cpu0, t0, sw0 = cpu_seconds(pid), time.perf_counter(), context_switches(pid)
    start_gate.wait()
    for t in threads:
        t.join()
    cpu1, t1, sw1 = cpu_seconds(pid), time.perf_counter(), context_switches(pid)
    for c in conns:
        c.sock.close()
    n = clients * calls
    return {"calls": n, "failures": len(failures), "daemon_cpu_s": round(cpu1 - cpu0, 3),
            "cpu_ms_per_call": round((cpu1 - cpu0) * 1000 / n, 4),
            "calls_per_s": round(n / (t1 - t0), 1),
            "context_switches_per_call": round((sw1 - sw0) / n, 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("quarry")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tools", default=",".join(t for t, _ in CALLS))
    parser.add_argument("--attach", help="a profiler command to run during the rounds")
    a = parser.parse_args()
    known = dict(CALLS + [PING])
    mix = [(t, known[t]) for t in a.tools.split(",")]
    quarry, clients, calls, rounds = a.quarry, a.clients, a.calls, a.rounds
    work = Path(tempfile.mkdtemp(prefix="call-cost-"))
    try:
        shutil.copytree(REPO / "testdata", work / "data")
        sock_path = str(work / "cat" / "quarry.sock")
        daemon = subprocess.Popen(
            [quarry, "serve", "--root", f"data={work / 'data'}", "--catalog", str(work / "cat")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(sock_path, daemon.pid)
            attached = None
            if a.attach:
                attached = subprocess.Popen(a.attach.replace("{pid}", str(daemon.pid)).split(),
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            results = []
            for _ in range(rounds):
                r = run_round(sock_path, daemon.pid, clients, calls, mix)
                results.append(r)
                print(json.dumps(r), flush=True)
            if attached:
                attached.send_signal(2)
                attached.wait()
            median = statistics.median(r["cpu_ms_per_call"] for r in results)
            print(json.dumps({"quarry": quarry, "tools": a.tools, "clients": clients,
                              "median_cpu_ms_per_call": median,
                              "median_context_switches_per_call": statistics.median(
                                  r["context_switches_per_call"] for r in results),
                              "median_calls_per_s": statistics.median(r["calls_per_s"] for r in results)}))
        finally:
            daemon.terminate()
            daemon.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
