#!/usr/bin/env python3
"""Many idle Server-Sent Events clients of /api/changes, for benches/live.sh.

Opens --streams event streams (spread over --port values, --query each, or
one query per stream from --queries-file), prints one JSON line when every
stream has its first event, then one line per later change once every
stream got it or was ended by the server: when the first and the last stream
got it (epoch seconds), the error events and the streams ended so far; and
stays connected until killed or --timeout. Only
127.0.0.1 is contacted.

With --h2c the streams travel over cleartext HTTP/2 with prior knowledge,
multiplexed: --per-connection streams share one connection (default and
at most the server's SETTINGS_MAX_CONCURRENT_STREAMS), so N streams need
ceil(N / per-connection) connections. This needs the `h2` package (PyPI).
"""

import argparse
import asyncio
import json
import sys
import time


async def stream(port, query, state, i):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 16)
    writer.write(
        (
            f"GET /api/changes?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Accept: text/event-stream\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        state["refused"] += 1
        print(json.dumps({"refused": head.split(b"\r\n")[0].decode()}), file=sys.stderr)
        writer.close()
        return
    sse = Sse(state, i)
    while True:
        line = await reader.readline()
        if not line:
            sse.end()
            return
        sse.line(line.rstrip(b"\r\n"))


class Sse:
    """One stream's events, line by line, recorded in `state`."""

    def __init__(self, state, i):
        self.state, self.i, self.event, self.rest = state, i, None, b""
        self.done = asyncio.get_running_loop().create_future()

    def end(self):
        if not self.done.done():
            self.state["closed"] += 1
            self.state["ended"][self.i] = True
            self.done.set_result(None)

    def feed(self, data):
        lines = (self.rest + data).split(b"\n")
        self.rest = lines.pop()
        for line in lines:
            self.line(line.rstrip(b"\r"))

    def line(self, line):
        state, i = self.state, self.i
        if line.startswith(b"event: "):
            self.event = line[7:]
        elif line.startswith(b"id: "):
            pass
        elif line.startswith(b"data: ") and self.event == b"error":
            print(json.dumps({"error": line[6:].decode()}), file=sys.stderr, flush=True)
        elif line == b"" and self.event is not None:
            now = time.time()
            if self.event == b"board.version":
                state["opened"][i] = now
            elif self.event == b"board.changed":
                state["changes"][i].append(now)
            elif self.event == b"error":
                state["errors"] += 1
            self.event = None


class H2c:
    """One cleartext HTTP/2 connection (prior knowledge) carrying many streams."""

    def __init__(self, port):
        self.port = port
        self.streams = {}

    async def open(self):
        import h2.config
        import h2.connection

        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 16)
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        self.conn.initiate_connection()
        self.flush()
        self.settings = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self.read())
        await self.settings
        return self.conn.remote_settings.max_concurrent_streams

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.writer.write(data)

    async def read(self):
        import h2.events as ev

        while True:
            data = await self.reader.read(1 << 16)
            if not data:
                for sse, _ in self.streams.values():
                    sse.end()
                if not self.settings.done():
                    self.settings.set_exception(ConnectionError("closed before SETTINGS"))
                return
            for e in self.conn.receive_data(data):
                if isinstance(e, ev.RemoteSettingsChanged) and not self.settings.done():
                    self.settings.set_result(None)
                elif isinstance(e, ev.ResponseReceived):
                    sse, state = self.streams[e.stream_id]
                    status = dict(e.headers).get(":status")
                    if status != "200":
                        state["refused"] += 1
                        print(json.dumps({"refused": status}), file=sys.stderr)
                        sse.end()
                elif isinstance(e, ev.DataReceived):
                    # Give the window back at once: an idle client never
                    # holds the server's writes up.
                    self.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                    self.streams[e.stream_id][0].feed(e.data)
                elif isinstance(e, (ev.StreamEnded, ev.StreamReset)):
                    self.streams[e.stream_id][0].end()
                elif isinstance(e, ev.ConnectionTerminated):
                    for sse, _ in self.streams.values():
                        sse.end()
            self.flush()

    def request(self, query, state, i):
        sse = Sse(state, i)
        sid = self.conn.get_next_available_stream_id()
        self.streams[sid] = (sse, state)
        self.conn.send_headers(
            sid,
            [
                (":method", "GET"),
                (":scheme", "http"),
                (":authority", "127.0.0.1"),
                (":path", f"/api/changes?{query}"),
                ("accept", "text/event-stream"),
            ],
            end_stream=True,
        )
        self.flush()
        return sse.done


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, action="append", required=True)
    ap.add_argument("--query")
    ap.add_argument("--queries-file")
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--changes", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--parallel", type=int, default=200, help="streams opening at once")
    ap.add_argument("--h2c", action="store_true", help="HTTP/2 with prior knowledge, streams multiplexed")
    ap.add_argument("--per-connection", type=int, help="streams per HTTP/2 connection (default: the server's maximum)")
    args = ap.parse_args()
    if args.queries_file:
        with open(args.queries_file) as f:
            queries = [l.strip() for l in f if l.strip()]
    else:
        queries = [args.query]
    n = args.streams
    state = {
        "opened": [None] * n,
        "changes": [[] for _ in range(n)],
        "ended": [False] * n,
        "refused": 0,
        "closed": 0,
        "errors": 0,
    }
    started = time.time()
    gate = asyncio.Semaphore(args.parallel)
    tasks = []
    conns = {}
    if args.h2c:
        # The first connection tells the server's stream limit.
        first = H2c(args.port[0])
        limit = await first.open()
        per = min(args.per_connection or limit, limit)
        conns[0] = asyncio.get_running_loop().create_future()
        conns[0].set_result(first)
        print(
            json.dumps({"max_concurrent_streams": limit, "per_connection": per, "connections": -(-n // per)}),
            file=sys.stderr,
            flush=True,
        )

    async def h2_stream(i):
        k = i // per
        if k not in conns:
            conns[k] = asyncio.get_running_loop().create_future()
            c = H2c(args.port[k % len(args.port)])
            await c.open()
            conns[k].set_result(c)
        c = await conns[k]
        await c.request(queries[i % len(queries)], state, i)

    async def one(i):
        async with gate:
            if args.h2c:
                t = asyncio.create_task(h2_stream(i))
            else:
                t = asyncio.create_task(
                    stream(args.port[i % len(args.port)], queries[i % len(queries)], state, i)
                )
            tasks.append(t)
            # Hold the slot until the stream's first event (or its end).
            while state["opened"][i] is None and not t.done():
                await asyncio.sleep(0.01)

    await asyncio.gather(*(one(i) for i in range(n)))
    opened = sum(1 for t in state["opened"] if t is not None)
    print(
        json.dumps(
            {
                "ready": opened,
                "refused": state["refused"],
                "connections": len(conns) if args.h2c else n,
                "open_seconds": round(time.time() - started, 2),
            }
        ),
        flush=True,
    )
    deadline = started + args.timeout
    for k in range(1, args.changes + 1):
        while time.time() < deadline:
            # A stream the server ended (an error event) gets no more.
            if all(len(c) >= k or e for c, e in zip(state["changes"], state["ended"])):
                break
            await asyncio.sleep(0.005)
        got = [c[k - 1] for c in state["changes"] if len(c) >= k]
        print(
            json.dumps(
                {
                    "change": k,
                    "streams": len(got),
                    "first": min(got) if got else None,
                    "last": max(got) if got else None,
                    "extra": sum(max(0, len(c) - k) for c in state["changes"]),
                    "errors": state["errors"],
                    "ended": sum(state["ended"]),
                }
            ),
            flush=True,
        )
    # Stay connected until killed (or --timeout): a stream that leaves
    # would stop its board's poller and give its lease back.
    await asyncio.sleep(max(0, deadline - time.time()))
    for t in tasks:
        t.cancel()


if __name__ == "__main__":
    asyncio.run(main())
