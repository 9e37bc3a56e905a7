"""Reads a board's two feeds with feed libraries from PyPI and prints what
they read as one JSON object, for tests/it/feeds.rs to check:

    python3 scripts/feed_check.py feed.atom feed.json [FEED_URL]

- the Atom feed with `feedparser`, the library many feed readers and
  services are built on, handed over with its Content-Type as a reader that
  fetched it would;
- the JSON Feed with `jsonfeed-util` (`import jsonfeed`): no released
  feedparser (6.0.x) reads JSON Feed, it only tries XML.

With FEED_URL (loopback), feedparser also fetches the feed itself, with its
own `Accept` header, as a reader subscribed to that URL does (`"fetched"`).

Prints `{"atom": {...}, "json": {...}}`, each with the format's `version`
(feedparser's `atom10`; `json11` for a JSON Feed 1.1), `bozo` (true when
the library found the feed malformed, and why), the feed's `title` and
`feed_id`, and per entry its `id`, `title`, `updated` (and whether it
parsed as a date) and `content`.
"""

import datetime
import json
import sys

import feedparser
import jsonfeed


def read_atom(path):
    with open(path, "rb") as f:
        body = f.read()
    return summary(feedparser.parse(body, response_headers={"content-type": "application/atom+xml; charset=utf-8"}))


def summary(d):
    entries = []
    for e in d.entries:
        content = e.get("content")
        entries.append({
            "id": e.get("id"),
            "title": e.get("title"),
            "updated": e.get("updated"),
            "updated_parsed": bool(e.get("updated_parsed")),
            "content": content[0].get("value") if content else None,
            "content_type": content[0].get("type") if content else None,
        })
    return {
        "version": d.get("version"),
        "bozo": bool(d.get("bozo")),
        "bozo_exception": str(d.get("bozo_exception", "")),
        "title": d.feed.get("title"),
        "feed_id": d.feed.get("id"),
        "entries": entries,
    }


def parses_as_date(text):
    try:
        datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return True
    except (TypeError, ValueError):
        return False


def read_json(path):
    with open(path, "rb") as f:
        body = f.read().decode("utf-8")
    try:
        feed = jsonfeed.Feed.parse_string(body)
    except (jsonfeed.ParseError, ValueError) as e:
        return {"bozo": True, "bozo_exception": repr(e)}
    version = json.loads(body).get("version")
    return {
        "version": "json11" if version == "https://jsonfeed.org/version/1.1" else version,
        "bozo": False,
        "title": feed.title,
        "feed_id": None,
        "entries": [{
            "id": i.id,
            "title": i.title,
            "updated": i.date_modified,
            "updated_parsed": parses_as_date(i.date_modified),
            "content": i.content_text,
            "content_type": "text",
        } for i in feed.items],
    }


def main():
    out = {"atom": read_atom(sys.argv[1]), "json": read_json(sys.argv[2])}
    if len(sys.argv) > 3:
        out["fetched"] = summary(feedparser.parse(sys.argv[3]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
