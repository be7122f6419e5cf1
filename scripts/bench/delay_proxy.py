#!/usr/bin/env python3
"""A TCP proxy on loopback that adds latency, for the remote-roots benchmark
(scripts/bench-remote.sh): every byte is held DELAY_MS / 2 on its way to the
server and DELAY_MS / 2 on its way back, so each request/answer exchange costs
DELAY_MS more, while bandwidth is unchanged (bytes are queued with the time
they may go, not sent one burst at a time). Only this proxy's connections are
slowed, unlike `tc`, which changes the whole machine.

It also counts round trips: each time a client sends after the server last
spoke (or first) on a connection is one exchange. The running total over all
connections is written to COUNT_FILE after each, so a benchmark can read how
many round trips a phase took.

scripts/bench-remote.sh runs examples/delay_proxy.rs, the same proxy in compiled
code, unless PROXY=python: this one's copying in Python costs the client it measures
about 0.1 s of CPU per 185 MB on two cores (docs/benchmarks.md, "Remote roots").

Usage: delay_proxy.py LISTEN_PORT UPSTREAM_PORT DELAY_MS [COUNT_FILE]
Prints "ready" once listening."""
import asyncio
import os
import sys
import time

listen_port, upstream_port, delay_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
count_file = sys.argv[4] if len(sys.argv) > 4 else None
half = delay_ms / 2000.0
turns = 0


def count_turn():
    global turns
    turns += 1
    if count_file:
        tmp = count_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(turns))
        os.replace(tmp, count_file)


async def pump(reader, writer, state, from_client):
    """Copies reader to writer, each chunk sent `half` seconds after it came."""
    queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.ensure_future(send())
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            if from_client and state["last"] != "client":
                count_turn()
            state["last"] = "client" if from_client else "server"
            await queue.put((time.monotonic() + half, data))
    except (ConnectionError, OSError):
        pass
    await queue.put((0, None))
    try:
        await sender
    except (ConnectionError, OSError):
        pass


async def handle(client_reader, client_writer):
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
    except OSError:
        client_writer.close()
        return
    for w in (client_writer, server_writer):
        sock = w.get_extra_info("socket")
        if sock is not None:
            import socket
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    state = {"last": None}
    await asyncio.gather(
        pump(client_reader, server_writer, state, True),
        pump(server_reader, client_writer, state, False),
    )


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen_port, limit=1 << 20)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
