#!/usr/bin/env python3
"""Write a deep Milanote-shaped board, two versions of it, as raw `/api/boards`
answers, one file per board: the shape that made `/api/changes` amplify.

A chain of DEPTH boards (the root, a board inside it, one inside that, ...), each
with a long title, and CARDS cards in the deepest board (`--spread`: spread evenly
over them). Version 2 replaces every card with a new one (`--edit`: rewrites every
card's text), so `/api/changes` between the two lists every card as removed and
every new one as added (or every card as changed), each under its parent board at
its depth. Deterministic (seeded), stdlib only.

    benches/gen_deep_board.py --out DIR            # DIR/v1/b<id>.json, DIR/v2/b<id>.json
    benches/gen_deep_board.py --cards 15000 --depth 31 --title-chars 600 --out DIR

Prints the root board id and the bytes of each version.
"""

import argparse
import json
import os
import random

WORDS = (
    "lisbon porto tram train ticket museum azulejo tile river douro bridge cafe "
    "pastry nata sardine market tower castle view street hill night fado bar"
).split()
T0 = 1796000000000


def make_id(rng, prefix):
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return prefix + "".join(rng.choice(alphabet) for _ in range(14 - len(prefix)))


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def board_element(bid, parent, title, index):
    return {
        "id": bid,
        "elementType": "BOARD",
        "location": {"parentId": parent, "section": "canvas",
                     "position": {"x": 0, "y": 0, "index": index, "score": 1000}},
        "content": {"title": title, "color": "#f4c542"},
        "meta": {"createdTime": T0, "modifiedTime": T0 + 1000, "creator": "u-4f2c91aa"},
    }


def answer(bid, parent, title, child, cards, version, edit):
    elements = {bid: board_element(bid, parent, title, 0)}
    order = []
    if child is not None:
        cid, ctitle = child
        elements[cid] = board_element(cid, bid, ctitle, 0)
        order.append(cid)
    for i, (cid, words) in enumerate(cards):
        body = words
        if version == 2 and edit:
            body = words + " edited"
        elif version == 2:
            cid = "N" + cid[1:]
        elements[cid] = {
            "id": cid,
            "elementType": "CARD",
            "location": {"parentId": bid, "section": "canvas", "rootBoard": bid,
                         "position": {"x": (i % 40) * 320, "y": (i // 40) * 260,
                                      "index": i + 1, "score": (i + 2) * 1000}},
            "content": {"textContent": {"type": "doc", "content": [
                {"type": "paragraph", "content": [{"type": "text", "text": body}]}]}},
            "meta": {"createdTime": T0 + i, "modifiedTime": T0 + i + version,
                     "creator": "u-77d0be12"},
        }
        order.append(cid)
    return {"elements": elements, "comments": {}, "errors": {},
            "childrenReturned": {bid: True}, "canvasOrder": {bid: order},
            "boardIds": [bid], "fetchedTime": T0 + 200_000_000}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cards", type=int, default=15000)
    ap.add_argument("--depth", type=int, default=31)
    ap.add_argument("--title-chars", type=int, default=600)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--spread", action="store_true", help="cards over every board, not the deepest")
    ap.add_argument("--edit", action="store_true", help="version 2 edits every card instead of replacing it")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    ids = ["5DeepBoard0000"] + [make_id(rng, "D%d" % (k % 10)) for k in range(1, a.depth)]
    titles = [("Level %d " % k + text(rng, a.title_chars))[: a.title_chars]
              for k in range(a.depth)]
    cards = [[] for _ in range(a.depth)]
    for i in range(a.cards):
        at = i % a.depth if a.spread else a.depth - 1
        cards[at].append((make_id(rng, "K%d" % (i % 10)), text(rng, 6)))
    for version in (1, 2):
        d = os.path.join(a.out, "v%d" % version)
        os.makedirs(d, exist_ok=True)
        total = 0
        for k, bid in enumerate(ids):
            parent = "0Hm3Pr1vAt3Bd0" if k == 0 else ids[k - 1]
            child = (ids[k + 1], titles[k + 1]) if k + 1 < a.depth else None
            data = json.dumps(answer(bid, parent, titles[k], child, cards[k], version, a.edit),
                              separators=(",", ":")).encode()
            total += len(data)
            with open(os.path.join(d, "b%s.json" % bid), "wb") as f:
                f.write(data)
        print("v%d: %d boards, %d cards, %d bytes" % (version, a.depth, a.cards, total))
    print("root", ids[0])


if __name__ == "__main__":
    main()
