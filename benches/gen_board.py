#!/usr/bin/env python3
"""Write a Milanote-shaped raw `/api/boards` response for benchmarks.

One root BOARD with N CARD children, in the raw shape of /api/boards: every card carries
TipTap `textContent` rich text (paragraphs of several text nodes, bold/italic/
link marks, some hardBreaks, now and then a heading or a bullet list), realistic
`meta` epoch-millisecond times and a `location` with `parentId` = the root and
`position {x, y, index, score}`. Deterministic (seeded), stdlib only.

    benches/gen_board.py                          # 7,000 cards, ~5.3 MB, to stdout
    benches/gen_board.py --cards 7000 --out /tmp/big.json
    benches/gen_board.py --small --out /tmp/small.json   # 26 cards, ~20 KB
    benches/gen_board.py --cards 50 --board-id 5SmallBoard20x --out x.json
"""

import argparse
import json
import random
import sys

WORDS = (
    "lisbon porto tram train ticket museum azulejo tile river douro bridge cafe "
    "pastry nata sardine market tower castle view street hill night fado bar "
    "booking hotel hostel breakfast lunch dinner walk tour boat sunset beach "
    "budget euro card cash passport flight gate luggage check list idea note "
    "plan maybe must visit avoid queue early late open closed monday weekend "
    "garden park library bookshop gallery church square harbour ferry bus metro"
).split()

COLORS = ["#fff6d9", "#e3f1fb", "#fde2e2", "#e6f4e1", "#f1e6fb", None]
USERS = ["u-4f2c91aa", "u-77d0be12", "u-19ac03ef"]


def sentence(rng, lo, hi):
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    return " ".join(words)


def text_node(rng, text):
    node = {"type": "text", "text": text}
    r = rng.random()
    if r < 0.15:
        node["marks"] = [{"type": "bold"}]
    elif r < 0.22:
        node["marks"] = [{"type": "italic"}]
    elif r < 0.26:
        node["marks"] = [
            {"type": "link", "attrs": {"href": "https://example.com/%s" % rng.choice(WORDS),
                                       "target": "_blank"}}
        ]
    return node


def paragraph(rng):
    content = []
    for i in range(rng.randint(2, 3)):
        if i and rng.random() < 0.12:
            content.append({"type": "hardBreak"})
        content.append(text_node(rng, sentence(rng, 1, 4) + " "))
    return {"type": "paragraph", "content": content}


def doc(rng):
    blocks = []
    if rng.random() < 0.2:
        blocks.append({"type": "heading", "attrs": {"level": rng.choice([1, 2, 3])},
                       "content": [{"type": "text", "text": sentence(rng, 2, 5).title()}]})
    for _ in range(rng.randint(1, 2)):
        blocks.append(paragraph(rng))
    if rng.random() < 0.1:
        blocks.append({"type": "bulletList", "content": [
            {"type": "listItem", "content": [
                {"type": "paragraph", "content": [{"type": "text", "text": sentence(rng, 2, 5)}]}
            ]} for _ in range(rng.randint(2, 3))
        ]})
    return {"type": "doc", "content": blocks}


def make_id(rng, prefix):
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return prefix + "".join(rng.choice(alphabet) for _ in range(14 - len(prefix)))


def board(cards, board_id, seed):
    rng = random.Random(seed)
    t0 = 1796000000000  # 2026-11-30, ms
    elements = {
        board_id: {
            "id": board_id,
            "elementType": "BOARD",
            "location": {"parentId": "0Hm3Pr1vAt3Bd0", "section": "canvas",
                         "position": {"x": 120, "y": 80, "index": 0, "score": 1000}},
            "content": {"title": "Benchmark board, %d cards" % cards, "color": "#f4c542",
                        "secondaryColor": "#fff6d9", "published": True},
            "meta": {"createdTime": t0, "modifiedTime": t0 + 90000,
                     "significantModified": t0 + 60000,
                     "locationSectionModifiedTime": t0 + 30000, "creator": USERS[0]},
        }
    }
    order = []
    for i in range(cards):
        cid = make_id(rng, "C%d" % (i % 10))
        while cid in elements:
            cid = make_id(rng, "C%d" % (i % 10))
        created = t0 + i * 61_000 + rng.randint(0, 60_000)
        modified = created + rng.randint(1_000, 86_400_000)
        content = {"textContent": doc(rng)}
        color = rng.choice(COLORS)
        if color:
            content["background"] = color
        elements[cid] = {
            "id": cid,
            "elementType": "CARD",
            "location": {
                "parentId": board_id,
                "section": "canvas",
                "rootBoard": board_id,
                "position": {"x": (i % 80) * 320 + rng.randint(0, 40),
                             "y": (i // 80) * 260 + rng.randint(0, 40),
                             "index": i, "score": (i + 1) * 1000},
            },
            "content": content,
            "meta": {"createdTime": created, "modifiedTime": modified,
                     "significantModified": modified - rng.randint(0, 1000),
                     "locationSectionModifiedTime": created + rng.randint(0, 5000),
                     "creator": rng.choice(USERS)},
        }
        order.append(cid)
    return {
        "elements": elements,
        "comments": {},
        "errors": {},
        "childrenReturned": {board_id: True},
        "canvasOrder": {board_id: order},
        "boardIds": [board_id],
        "fetchedTime": t0 + 200_000_000,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cards", type=int, default=None, help="number of cards (default 7000; 20 with --small)")
    ap.add_argument("--small", action="store_true", help="a small board: 26 cards (~20 KB), id 5SmallBoard20x")
    ap.add_argument("--board-id", default=None, help="root board id (default 5BigBoard7000x, or 5SmallBoard20x with --small)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="-", help="output file (default stdout)")
    a = ap.parse_args()
    cards = a.cards if a.cards is not None else (26 if a.small else 7000)
    board_id = a.board_id or ("5SmallBoard20x" if a.small else "5BigBoard7000x")
    data = json.dumps(board(cards, board_id, a.seed), ensure_ascii=False, separators=(",", ":"))
    if a.out == "-":
        sys.stdout.write(data)
    else:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(data)
        print("%s: %d cards, board %s, %d bytes" % (a.out, cards, board_id, len(data.encode())), file=sys.stderr)


if __name__ == "__main__":
    main()
