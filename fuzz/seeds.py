#!/usr/bin/env python3
"""Writes the seed corpora of seven fuzz targets (run from anywhere; needs
python3 and the `zstd` command):

- fuzz/corpus/tier_value/: board documents as this service writes them
  (compact JSON, sanitized; a small board, tests/golden/markdown/every-type.json,
  a board with nested boards not loaded for a lasting and a transient reason,
  an outline), each twice: as a flag byte (coverage, unloaded count,
  transient, as the target reads it) followed by the document, and as a
  whole value sealed with the target's fleet key under its key name
  (src/store/shared/format.rs's layout: header, zstd body, HMAC tag).
- fuzz/corpus/select_depth/: operation strings for the target's document
  builder (open each container kind, scalars, siblings, closes, and a few
  thousand levels of nesting).
- fuzz/corpus/capture_read/: capture directories as the target reads its
  input (index.json, then each file as its name, a newline and its bytes,
  joined by NUL bytes): the checked-in captured-board fixture, and a root
  with a batch of nested boards (trash, a thread, an orphan, a cycle).
- fuzz/corpus/mcp_jsonrpc/: a header-choice byte followed by a JSON-RPC POST
  body: initialize, notifications/initialized, tools/list, tools/call
  read_board and search_board, ping of the handshake era (2025-06-18,
  2025-11-25); server/discover, tools/list and tools/call of the 2026-07-28
  era with their `_meta`; a batch, a response and a malformed body.
- fuzz/corpus/kept_version/: kept documents for /api/changes: the target's
  own document as stored (its mark and zstd), and bare, edited (a card's
  text, a move) and with repeated members; and tier_value's documents.
- fuzz/corpus/normalize/ and fuzz/corpus/pipeline/: `/api/boards` answers:
  the checked-in captured board, a generated 26-card board
  (benches/gen_board.py --small), and a board of the rich-text shapes the
  content reader's rules turn on (a mention, a break, a board link, lists,
  a node with both `text` and `content`, `type` after `content`, repeated
  keys, Draft.js text in a string, a table, sensitive keys).

Existing files of the same names are overwritten; other corpus files are
left alone. Then: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run <target> ...
"""

import hashlib
import hmac
import json
import struct
import subprocess
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
CORPUS = FUZZ / "corpus"

# What fuzz_targets/tier_value.rs seals with and reads under.
FLEET_KEY = b"fuzz-fleet-key-fuzz-fleet-key-32"
NAME = "sbapi:{00112233445566778899aabbccddeeff}:doc:full"
FORMAT_VERSION = 2  # format::VERSION


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def write(target, name, data):
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data)


# ---------------------------------------------------------------- tier_value


def document(board_id, title, children, fetched_at="2026-11-25T05:00:00.000Z"):
    return {
        "version": 1,
        "source": {"provider": "milanote", "boardId": board_id},
        "fetchedAt": fetched_at,
        "board": {
            "id": board_id,
            "type": "BOARD",
            "title": title,
            "childrenLoaded": True,
            "children": children,
        },
    }


def card(node_id, text):
    return {
        "id": node_id,
        "type": "CARD",
        "richText": {
            "plainText": text,
            "blocks": [{"type": "paragraph", "content": [{"type": "text", "text": text}]}],
        },
        "children": [],
    }


def unloaded_board(node_id, reason):
    return {
        "id": node_id,
        "type": "BOARD",
        "title": "Nested " + reason.lower(),
        "childrenLoaded": False,
        "unloadedReason": reason,
        "children": [],
    }


def flags(outline=False, unloaded=0, transient=False):
    """The first byte as tier_value.rs reads it."""
    return bytes([int(outline) | (min(unloaded, 3) << 1) | (int(transient) << 3)])


def sealed(json_bytes, outline=False, unloaded=0, transient=False):
    """format::encode's value, sealed as seal::Seal::seal does."""
    doc = json.loads(json_bytes)
    fetched_at = doc.get("fetchedAt", "").encode() if isinstance(doc, dict) else b""
    body = subprocess.run(
        ["zstd", "-1", "-q", "-c", "--no-check"], input=json_bytes, capture_output=True, check=True
    ).stdout
    out = b"SBAD" + bytes([FORMAT_VERSION, int(outline), int(transient), 0])
    out += struct.pack("<Iq", unloaded, 2**63 - 1)
    out += struct.pack("<I", len(json_bytes)) + bytes([len(fetched_at)]) + fetched_at + body
    key = hmac.new(FLEET_KEY, NAME.encode(), hashlib.sha256).digest()
    return out + hmac.new(key, out, hashlib.sha256).digest()


def documents():
    """tier_value's documents, each with its header's flags."""
    every_type = json.loads((ROOT / "tests/golden/markdown/every-type.json").read_text())
    docs = {
        "small": (document("b", "T", [card("c", "alpha")]), {}),
        "empty": (document("root", "Empty", []), {}),
        "every-type": (every_type, {}),
        "nested": (
            document(
                "r",
                "Nested",
                [
                    {
                        "id": "n",
                        "type": "BOARD",
                        "title": "Loaded",
                        "childrenLoaded": True,
                        "children": [card("d", "a table below"), unloaded_board("u", "NOT_FOUND")],
                    },
                    {
                        "id": "t",
                        "type": "TABLE",
                        "table": {"rows": [[{"value": "a"}, {"value": 1}], []]},
                        "children": [],
                    },
                ],
            ),
            {"unloaded": 1},
        ),
        "transient": (
            document("r", "Transient", [unloaded_board("u", "DEADLINE"), unloaded_board("v", "BOARD_LIMIT")]),
            {"unloaded": 2, "transient": True},
        ),
        "outline": (document("o", "Outline", [{"id": "x", "type": "LINE", "children": []}]), {"outline": True}),
    }
    return docs


def tier_value():
    for name, (doc, header) in documents().items():
        data = compact(doc)
        write("tier_value", f"doc-{name}", flags(**header) + data)
        write("tier_value", f"value-{name}", sealed(data, **header))


# -------------------------------------------------------------- select_depth


def op(kind, times_log2=0, scalar=0):
    """One operation byte of select_depth.rs's builder: kind in the low
    three bits, the scalar choice in bits 3-4, 2^times_log2 repeats."""
    return bytes([(times_log2 << 5) | (scalar << 3) | kind])


def select_depth():
    board, content, array, rich, table, title, scalar, empty = range(8)
    seeds = {
        "flat": op(scalar) + op(scalar) + op(empty),  # children a scalar; the rest finds nothing open
        "each-container": b"".join(op(k) + op(scalar, 0, k % 4) + op(empty) for k in range(6)),
        "siblings": op(array) + op(scalar) + op(scalar) + op(board) + op(empty) + op(empty) + op(empty),
        "rich": op(board) + op(rich) + op(title) + op(scalar, 0, 3) + op(empty) + op(scalar) + op(rich),
        "table": op(table) + op(content) + op(scalar, 0, 1) + op(empty) + op(scalar) + op(empty),
        "deep-boards": op(board, 7) * 8 + op(scalar) + op(empty, 7) * 8,
        "deep-arrays": op(array, 7) * 40,
        "deep-mixed": (op(board, 4) + op(rich, 4) + op(table, 4) + op(content, 4)) * 16,
        "empty": b"",
    }
    for name, data in seeds.items():
        write("select_depth", name, data)


# --------------------------------------------------------------- mcp_jsonrpc

URL = "https://app.milanote.com/1XbZEplawr6y01/a-board?p=abcdefghij"
MODERN = "2026-07-28"


def rpc(method, params=None, id_=1):
    message = {"jsonrpc": "2.0"}
    if id_ is not None:
        message["id"] = id_
    message["method"] = method
    if params is not None:
        message["params"] = params
    return compact(message)


def modern_meta(params):
    params = dict(params)
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return params


# The header-choice byte (fuzz_targets/mcp_jsonrpc.rs): bit 0 sends
# MCP-Protocol-Version (VERSIONS[byte >> 4]), bit 1 Mcp-Method, bit 2 Mcp-Name.
NO_HEADERS = 0x00
HANDSHAKE_2025_11 = 0x11
HANDSHAKE_2025_06 = 0x21
MODERN_ALL = 0x07  # VERSIONS[0] is 2026-07-28
MODERN_BAD_VERSION = 0x47  # VERSIONS[4] is unknown


def mcp_jsonrpc():
    read = {"name": "read_board", "arguments": {"url": URL, "view": "compact", "format": "json"}}
    read_md = {"name": "read_board", "arguments": {"url": URL, "include": "board.title,board.children.richText"}}
    search = {"name": "search_board", "arguments": {"url": URL, "query": "alpha", "limit": 5}}
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "seed", "version": "1"},
    }
    seeds = {
        "initialize-2025-06-18": (NO_HEADERS, rpc("initialize", init, 0)),
        "initialize-2025-11-25": (NO_HEADERS, rpc("initialize", dict(init, protocolVersion="2025-11-25"), "init")),
        "initialized": (HANDSHAKE_2025_06, rpc("notifications/initialized", None, None)),
        "tools-list": (HANDSHAKE_2025_11, rpc("tools/list", {}, 2)),
        "read-board": (HANDSHAKE_2025_06, rpc("tools/call", read, 3)),
        "read-board-markdown": (HANDSHAKE_2025_11, rpc("tools/call", read_md, 4)),
        "search-board": (HANDSHAKE_2025_11, rpc("tools/call", search, "s-1")),
        "ping": (NO_HEADERS, rpc("ping", None, 5)),
        "modern-discover": (MODERN_ALL, rpc("server/discover", modern_meta({}), 6)),
        "modern-tools-list": (MODERN_ALL, rpc("tools/list", modern_meta({}), 7)),
        "modern-read-board": (MODERN_ALL, rpc("tools/call", modern_meta(read), 8)),
        "modern-search-board": (MODERN_ALL, rpc("tools/call", modern_meta(search), 9)),
        "modern-no-meta": (MODERN_ALL, rpc("tools/list", {}, 10)),
        "modern-bad-version": (MODERN_BAD_VERSION, rpc("tools/list", modern_meta({}), 11)),
        "batch": (NO_HEADERS, b"[" + rpc("ping", None, 12) + b"," + rpc("tools/list", {}, 13) + b"]"),
        "response": (NO_HEADERS, b'{"jsonrpc":"2.0","id":1,"result":{}}'),
        "not-json": (NO_HEADERS, b'{"jsonrpc":"2.0","id":1,"method":'),
    }
    for name, (choice, body) in seeds.items():
        write("mcp_jsonrpc", name, bytes([choice]) + body)


def capture_dir(index, files):
    """A capture directory as fuzz_targets/capture_read.rs reads its input:
    the index, then each file as its name, a newline and its bytes, parts
    joined by NUL bytes."""
    parts = [compact(index)] + [name.encode() + b"\n" + data for name, data in files]
    return b"\0".join(parts)


def capture_read():
    fixture = ROOT / "tests" / "fixtures" / "captured-board"
    index = json.loads((fixture / "index.json").read_text())
    write("capture_read", "captured-board",
          capture_dir(index, [("02-boards.json", (fixture / "02-boards.json").read_bytes())]))

    def boards(ids, name):
        return {"request": "boards", "ids": ids, "status": 200, "file": name}

    # A root and a batch of nested boards: trash, a thread with comments, a
    # canvasOrder list, an orphan, a cycle and a chain that reaches no board.
    elements = {
        "r": {"_id": "r", "elementType": "BOARD", "location": {"parentId": "home"}},
        "a": {"_id": "a", "elementType": "BOARD", "location": {"parentId": "r"}},
        "b": {"_id": "b", "elementType": "BOARD", "location": {"parentId": "r"}},
    }
    nested = {
        "a1": {"_id": "a1", "location": {"parentId": "a", "section": "CANVAS"}},
        "bt": {"_id": "bt", "location": {"parentId": "b-trash", "section": "TRASH"}},
        "th": {"_id": "th", "location": {"parentId": "b"}, "content": {"threadId": "T"}},
        "lost": {"_id": "lost", "location": {"parentId": "nowhere"}},
        "x": {"location": {"parentId": "y"}}, "y": {"location": {"parentId": "x"}},
        "c0": {"_id": "c0", "location": {"parentId": "c1"}},
        "c1": {"_id": "c1", "location": {"parentId": "c2"}},
    }
    nested_answer = {"elements": nested, "comments": {"c": {"threadId": "T", "text": "hi"}},
                     "canvasOrder": {"a": ["a1"]}, "errors": {}, "childrenReturned": {"a": True, "b": True},
                     "fetchedTime": 5}
    index = {"format": "shared-board-api capture 1", "board": "r",
             "answers": [{"request": "token", "ids": ["r"], "status": 200, "file": None},
                         boards(["r"], "02-boards.json"), boards(["a", "b"], "03-boards.json")]}
    write("capture_read", "nested",
          capture_dir(index, [("02-boards.json", compact({"elements": elements})),
                              ("03-boards.json", compact(nested_answer))]))


# -------------------------------------------------------------- kept_version


def kept_version():
    source = (FUZZ / "fuzz_targets/kept_version.rs").read_text()
    now = source.split('const NOW: &[u8] = br#"', 1)[1].split('"#;', 1)[0].encode()
    zstd = subprocess.run(["zstd", "-3", "-c", "-q"], input=now, capture_output=True, check=True)
    write("kept_version", "stored-now", b"SBV1" + zstd.stdout)
    write("kept_version", "now", now)
    edited = now.replace(b"Pack the tent", b"Pack the stove").replace(b'"parentId":"col"', b'"parentId":"b"')
    write("kept_version", "edited", edited)
    write("kept_version", "repeated", now.replace(b'"title":"Ideas"', b'"title":"Ideas","title":"Again","id":"x"'))
    for name, (doc, _) in documents().items():
        write("kept_version", f"doc-{name}", compact(doc))


# ------------------------------------------------------- normalize, pipeline


def rich_shapes():
    """One answer whose cards hold the rich text the content reader's rules
    turn on, written by hand so that repeated keys survive."""
    para = '{"type":"paragraph","content":[{"type":"text","text":"Pack "},{"type":"text","text":"the tent","marks":[{"type":"bold"}]}]}'
    mention = '{"type":"mention","attrs":{"id":"u1","label":" Ann ","mentionKey":"k"}}'
    items = '{"type":"bulletList","content":[{"type":"listItem","content":[%s]},{"type":"listItem","content":[{"type":"paragraph","content":[%s,{"type":"hardBreak"},{"type":"inlineBoardLink","attrs":{"title":"Trip","permissionId":"p"}}]}]}]}' % (para, mention)
    late_type = '{"content":[{"text":"late","type":"text"}],"type":"heading","attrs":{"level":2}}'
    both = '{"type":"paragraph","text":"own","content":[{"type":"text","text":"hidden"}]}'
    repeated = '{"type":"paragraph","content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"last"}],"type":"codeBlock"}'
    draft = json.dumps(json.dumps({"blocks": [{"key": "a", "text": "Draft", "type": "unstyled"}, {"key": "b", "text": "two", "type": "unstyled"}], "entityMap": {}}))
    cards = {
        "c1": '{"type":"doc","content":[%s,%s,%s,%s,%s]}' % (para, items, late_type, both, repeated),
        "c2": draft,
        "c3": '{"type":"doc","text":"root text","content":[%s],"content":[%s]}' % (para, items),
        "c4": '{"blocks":[{"text":"old"}],"type":"doc","content":[{"type":"text","text":"x","token":"t","userId":"u"}]}',
    }
    location = '"location":{"parentId":"root","section":"canvas","position":{"x":1,"y":2,"index":%d,"score":3}}'
    elements = ['"root":{"id":"root","elementType":"BOARD","content":{"title":"Shapes","title":"Shapes again"}}']
    for i, (key, text) in enumerate(cards.items()):
        elements.append('"%s":{"id":"%s","elementType":"CARD",%s,"content":{"textContent":%s,"background":"#fff","background":"#000"},"meta":{"dateCreated":1700000000000}}' % (key, key, location % i, text))
    table = '{"tableContent":{"data":[[{"value":"","textContent":{"type":"doc","content":[%s]}},"plain",{"draftContent":%s}]],"colWidthsGU":[4,4]},"width":2,"width":3}' % (para, draft)
    elements.append('"t1":{"id":"t1","elementType":"TABLE",%s,"content":%s}' % (location % 9, table))
    return ('{"elements":{%s},"rootId":"root"}' % ",".join(elements)).encode()


def board_answers():
    captured = (ROOT / "tests/fixtures/captured-board/02-boards.json").read_bytes()
    small = subprocess.run(["python3", str(ROOT / "benches/gen_board.py"), "--small"],
                           capture_output=True, check=True).stdout
    shapes = rich_shapes()
    json.loads(shapes)  # well-formed (json keeps the last of a repeated key)
    for target in ("normalize", "pipeline"):
        write(target, "captured-board", captured)
        write(target, "small-board", small)
        write(target, "rich-shapes", shapes)


if __name__ == "__main__":
    board_answers()
    kept_version()
    tier_value()
    select_depth()
    mcp_jsonrpc()
    capture_read()
    for target in ("tier_value", "select_depth", "mcp_jsonrpc", "capture_read", "kept_version",
                   "normalize", "pipeline"):
        print(target, len(list((CORPUS / target).iterdir())), "files")
