#!/usr/bin/env python3
"""A later version of a board that benches/gen_board.py wrote: reads the raw
/api/boards answer on stdin, writes it edited on stdout, the way a week of
use edits a board. Deterministic. Of the cards, in id order:

- every 100th has its text changed (1 %),
- every 700th from the 50th moves to the board's unsorted tray (INBOX),
- every 700th from the 350th is deleted,
- ten new cards are added, copies of the first ones with new ids and text.

    python3 benches/gen_board.py | python3 benches/edit_board.py > edited.json
"""
import copy
import json
import sys


def main():
    body = json.load(sys.stdin)
    elements = body["elements"]
    cards = sorted(k for k, v in elements.items() if v.get("elementType") == "CARD")
    for i, key in enumerate(cards):
        card = elements[key]
        if i % 100 == 0:
            card["content"]["textContent"] = {"type": "doc", "content": [
                {"type": "paragraph", "content": [{"type": "text", "text": f"edited card {i}"}]}]}
        if i % 700 == 50:
            card["location"]["section"] = "INBOX"
            card["location"]["position"] = {"index": i, "score": i * 65536}
        if i % 700 == 350:
            del elements[key]
    for n in range(10):
        new = copy.deepcopy(elements[cards[n + 1]])
        new_id = f"Added{n:09d}x"
        new["id"] = new_id
        new["content"]["textContent"] = {"type": "doc", "content": [
            {"type": "paragraph", "content": [{"type": "text", "text": f"a card added later {n}"}]}]}
        elements[new_id] = new
    json.dump(body, sys.stdout, separators=(",", ":"))


if __name__ == "__main__":
    main()
