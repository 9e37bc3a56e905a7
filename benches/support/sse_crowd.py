#!/usr/bin/env python3
"""Many idle Server-Sent Events clients of /api/changes, for benches/live.sh.

Opens --streams event streams (spread over --port values, --query each, or
one query per stream from --queries-file), prints one JSON line when every
stream has its first event, then one line per later change once every
stream got it or was ended by the server: when the first and the last stream
got it (epoch seconds), the error events and the streams ended so far; and
stays connected until killed or --timeout. Only
127.0.0.1 is contacted.
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
    event = None
    while True:
        line = await reader.readline()
        if not line:
            state["closed"] += 1
            state["ended"][i] = True
            return
        line = line.rstrip(b"\r\n")
        if line.startswith(b"event: "):
            event = line[7:]
        elif line.startswith(b"id: "):
            pass
        elif line.startswith(b"data: ") and event == b"error":
            print(json.dumps({"error": line[6:].decode()}), file=sys.stderr, flush=True)
        elif line == b"" and event is not None:
            now = time.time()
            if event == b"board.version":
                state["opened"][i] = now
            elif event == b"board.changed":
                state["changes"][i].append(now)
            elif event == b"error":
                state["errors"] += 1
            event = None


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, action="append", required=True)
    ap.add_argument("--query")
    ap.add_argument("--queries-file")
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--changes", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--parallel", type=int, default=200, help="connections opened at once")
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

    async def one(i):
        async with gate:
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
            {"ready": opened, "refused": state["refused"], "open_seconds": round(time.time() - started, 2)}
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
