"""Drives the MCP endpoint with the official MCP Python SDK (`mcp` on PyPI),
as an agent's client would, in every protocol era the endpoint serves:

- `auto`: the SDK probes `server/discover` and stays on 2026-07-28 (stateless);
- `legacy`: the `initialize` handshake at 2025-11-25;
- `legacy` offering 2025-06-18 (the SDK's handshake version set to it).

In each: discovery or initialization, the tool list, read_board as Markdown
and as JSON, a selector error, a bad share link, and search_board on a board
with nested boards (the SDK validates its structured result against the
tool's output schema).

    python3 scripts/mcp_sdk_check.py http://127.0.0.1:PORT/api/mcp 'https://app.milanote.com/BOARD/x?p=PERM' QUERY

Prints one line per check and `N passed, N failed`; exits 1 on any failure.
"""

import asyncio
import json
import sys

import mcp.client.session as session_module
from mcp.client import Client

URL, SHARE, QUERY = sys.argv[1], sys.argv[2], sys.argv[3]
passed = failed = 0


def check(label, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {label}")
    else:
        failed += 1
        print(f"FAIL {label} {detail}")


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def run(era, mode, handshake_version=None):
    if handshake_version is not None:
        session_module.LATEST_HANDSHAKE_VERSION = handshake_version
    async with Client(URL, mode=mode) as client:
        session = client.session
        if mode == "auto":
            check(f"{era}: discover adopted", session.discover_result is not None, session.protocol_version)
            check(f"{era}: version", session.protocol_version == "2026-07-28", session.protocol_version)
        else:
            check(f"{era}: initialized", session.initialize_result is not None)
            check(f"{era}: version", session.protocol_version == handshake_version, session.protocol_version)
        info = session.server_info
        check(f"{era}: server info", info is not None and info.name == "shared-board-api", info)

        tools = (await client.list_tools()).tools
        names = [t.name for t in tools]
        check(f"{era}: tools listed", names == ["read_board", "search_board"], names)
        for tool in tools:
            a = tool.annotations
            check(
                f"{era}: {tool.name} read-only, open world, with a schema",
                a is not None and a.read_only_hint is True and a.open_world_hint is True
                and tool.input_schema.get("required", [None])[0] == "url",
                a,
            )

        md = await client.call_tool("read_board", {"url": SHARE})
        text = text_of(md)
        check(f"{era}: read_board markdown", not md.is_error and text.startswith("# "), text[:80])

        js = await client.call_tool("read_board", {"url": SHARE, "format": "json"})
        data = js.structured_content or {}
        check(
            f"{era}: read_board json",
            not js.is_error and data.get("board", {}).get("type") == "BOARD"
            and json.loads(text_of(js)) == data,
            str(data)[:80],
        )

        sel = await client.call_tool("read_board", {"url": SHARE, "include": "board.nope"})
        err = (sel.structured_content or {}).get("error", {})
        check(
            f"{era}: selector error",
            sel.is_error and err.get("code") == "INVALID_FIELD_SELECTOR" and err.get("field") == "include",
            err,
        )

        bad = await client.call_tool("read_board", {"url": "https://example.com/b/x?p=s3cretperm"})
        err = (bad.structured_content or {}).get("error", {})
        check(
            f"{era}: bad link",
            bad.is_error and err.get("code") == "INVALID_SHARE_URL" and "s3cretperm" not in text_of(bad),
            err,
        )

        found = await client.call_tool("search_board", {"url": SHARE, "query": QUERY, "limit": 5})
        result = found.structured_content or {}
        matches = result.get("matches", [])
        check(
            f"{era}: search in nested boards",
            not found.is_error and result.get("total", 0) >= 1 and len(matches[0]["path"]) >= 2
            and QUERY.lower() in matches[0]["snippet"].lower(),
            str(result)[:200],
        )


async def main():
    await run("2026-07-28", "auto")
    await run("2025-11-25", "legacy", "2025-11-25")
    await run("2025-06-18", "legacy", "2025-06-18")


try:
    asyncio.run(main())
except Exception as e:  # a transport or protocol failure is a failed check too
    failed += 1
    print(f"FAIL the client raised: {type(e).__name__}: {e}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
