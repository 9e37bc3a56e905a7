#!/usr/bin/env python3
"""Idle HTTP/1.1 keep-alive connections, for benches/live.sh's baseline: each
asks one request (GET /api/search?url=x, a 400 answered at once), reads the
answer and stays open. Prints "ready N", then holds them until killed (or
600 s). Only 127.0.0.1 is contacted.

    idle_conns.py PORT COUNT
"""

import asyncio
import sys


async def one(port, held):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /api/search?url=x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)
    held.append((reader, writer))


async def main():
    port, count = int(sys.argv[1]), int(sys.argv[2])
    held = []
    gate = asyncio.Semaphore(200)

    async def gated():
        async with gate:
            await one(port, held)

    await asyncio.gather(*(gated() for _ in range(count)))
    print(f"ready {len(held)}", flush=True)
    await asyncio.sleep(600)


if __name__ == "__main__":
    asyncio.run(main())
