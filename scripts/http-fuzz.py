#!/usr/bin/env python3
"""Fuzz every endpoint of a running shared-board-api over loopback, for a time.

    scripts/http-fuzz.py --addr 127.0.0.1:PORT --seconds 600 [--pid PID] [--threads 4]

Sends raw HTTP/1.1 requests built from the service's own vocabulary and then
mutated: every endpoint (search, detail, canvas, changes as JSON, Markdown, events,
long poll and feeds, the POST form, MCP, the playground, unknown paths), every
method, share links of the sample upstream's boards and fault scenarios, views,
selectors, versions, hostile headers (Accept, Accept-Encoding, If-None-Match,
Last-Event-ID, traceparent, request ids, Expect, Content-Type), and JSON bodies
cut, nested and swollen. Counts answers by status; a `500`, a connection closed
without an answer or an answer that is not HTTP is unexpected. With --pid, samples
the server's RSS every 10 s. Only the address given is contacted. Stdlib only.
Exit status 1 when anything unexpected was seen.
"""

import argparse
import json
import random
import socket
import threading
import time
import urllib.parse

BOARDS = ["1W3ZZU1Qvua02H", "s-big", "s-big-4", "2Xk9PqRt7LmN4v", "3Hq7ZsWd2KpL8c",
          "fault-404", "fault-500", "fault-slow", "fault-garbage", "fault-denied",
          "fault-gzip", "fault-challenge", "fault-reset", "fault-not-found",
          "fault-password", "fault-skeleton", "fault-odd-error", "nope"]
PATHS = ["/api/search", "/api/detail", "/api/canvas", "/api/changes", "/api/board",
         "/api/mcp", "/", "/playground", "/api", "/api/", "/api/nope", "/metrics",
         "/api//detail", "/api/detail/", "/api/%64etail", "/API/detail",
         "/api/../api/detail", "/demo/edit/1W3ZZU1Qvua02H"]
METHODS = ["GET"] * 8 + ["HEAD", "POST", "POST", "OPTIONS", "PUT", "DELETE", "PATCH",
                         "TRACE", "CONNECT", "GETT", "get"]
ACCEPTS = ["application/json", "text/markdown", "text/event-stream", "application/atom+xml",
           "application/feed+json", "*/*", "text/*", "application/*;q=0", "text/html",
           "application/json;q=0.1, text/markdown;q=0.9", "x" * 5000, "", "\u00e9",
           "application/json, text/event-stream", "text/event-stream;q=0"]
ENCODINGS = ["gzip", "br", "zstd", "gzip;q=0", "*", "identity;q=0, *;q=0", "gzip, br, zstd",
             "gz\x01ip", "br;q=abc", ";;;", "a" * 3000]
VIEWS = ["compact", "standard", "full", "outline", "", "FULL", "none", "full,compact"]
SELECTORS = ["*", "**", "board.title", "**.title", "board.children.*.text", "a..b", ".", "**.",
             "*" * 300, "board.children[0]", "x" * 3000, "board.title,**.content", "\u2028"]
MCP_TOOLS = ["read_board", "search_board", "board_changes", "nope", ""]


def link(rng):
    board = rng.choice(BOARDS)
    permission = "demo" if rng.random() < 0.5 else rng.choice(
        ["p1", "fault-denied", "", "a" * 200, "%00", "é"])
    base = "https://app.milanote.com/%s/slug?p=%s" % (board, permission)
    if rng.random() < 0.6:
        return base
    return rng.choice([base, "http://app.milanote.com/%s/x?p=demo" % board,
                       "https://evil.example.com/%s/x?p=demo" % board,
                       "https://app.milanote.com/%s" % board, "not a link", "",
                       base + "&p=other", base + "#frag", "https://app.milanote.com:99999/x/y?p=z"])


def version(rng):
    return rng.choice(["%032x" % rng.getrandbits(128), "0" * 32, "zz", "", "a" * 5000,
                       "%032X" % rng.getrandbits(128), "../../etc", "%00"])


def mutate(rng, text):
    """Byte-level damage to a string now and then."""
    if not text or rng.random() > 0.15:
        return text
    i = rng.randrange(len(text))
    op = rng.randrange(5)
    if op == 0:
        return text[:i] + text[i + 1:]
    if op == 1:
        return text[:i] + rng.choice(["%", "%ZZ", "%C3%28", "\x00", "\r\n", " ", "&", "="]) + text[i:]
    if op == 2:
        return text * rng.randint(2, 50)
    if op == 3:
        return text[:i]
    return text[:i] + chr(rng.randint(0x80, 0x10FFFF)) + text[i:]


def query(rng):
    params = []
    if rng.random() < 0.9:
        params.append(("url", link(rng)))
    for key, gen in [("view", lambda: rng.choice(VIEWS)),
                     ("include", lambda: rng.choice(SELECTORS)),
                     ("exclude", lambda: rng.choice(SELECTORS)),
                     ("since", lambda: version(rng)),
                     ("wait", lambda: rng.choice(["1", "2", "0", "61", "-1", "1e3", "x"])),
                     ("tab", lambda: rng.choice(["changes", "json", "md", "<script>"])),
                     ("board", lambda: rng.choice(BOARDS)),
                     ("format", lambda: rng.choice(["json", "markdown", "x"]))]:
        if rng.random() < 0.2:
            params.append((key, gen()))
    if rng.random() < 0.05:
        params.append(("url", link(rng)))  # twice
    q = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    return mutate(rng, q)


def json_body(rng):
    if rng.random() < 0.5:
        tool = rng.choice(MCP_TOOLS)
        args = {"url": link(rng)}
        for k, v in [("since", version(rng)), ("query", rng.choice(["Note", "", "x" * 999])),
                     ("max_chars", rng.choice([1000, 0, -1, 10**12, "x"])),
                     ("cursor", rng.choice(["", "abc", "x" * 500])), ("wait", rng.choice([1, 31, "1"])),
                     ("view", rng.choice(VIEWS)), ("include", rng.choice([SELECTORS, "**", 5]))]:
            if rng.random() < 0.3:
                args[k] = v
        method = rng.choice(["tools/call", "tools/list", "initialize", "ping", "nope", "server/discover"])
        body = {"jsonrpc": rng.choice(["2.0", "1.0", 2]), "id": rng.choice([1, "x", None, [], 1.5]),
                "method": method, "params": {"name": tool, "arguments": args}}
    else:
        body = {"url": link(rng), "view": rng.choice(VIEWS)}
        if rng.random() < 0.3:
            body["include"] = rng.sample(SELECTORS, 2)
        if rng.random() < 0.3:
            body["exclude"] = rng.choice(SELECTORS)
    text = json.dumps(body)
    r = rng.random()
    if r < 0.05:
        text = "[" * 5000 + "]" * 5000
    elif r < 0.1:
        text = text[: rng.randrange(len(text) + 1)]
    elif r < 0.12:
        text = text + " " * 300_000
    return mutate(rng, text).encode("utf-8", "surrogatepass")


def request(rng):
    path = rng.choice(PATHS) if rng.random() < 0.3 else rng.choice(PATHS[:6])
    if rng.random() < 0.8:
        # The method the endpoint takes, most of the time.
        method = "POST" if path in ("/api/board", "/api/mcp") else rng.choice(["GET"] * 9 + ["HEAD"])
    else:
        method = rng.choice(METHODS)
    target = path + ("?" + query(rng) if rng.random() < 0.95 else "")
    headers = [("Host", rng.choice(["127.0.0.1", "localhost", "", "evil.example.com", "a" * 300]))]
    if rng.random() < 0.7:
        headers.append(("Accept", rng.choice(ACCEPTS)))
    for name, values in [("Accept-Encoding", ENCODINGS),
                         ("If-None-Match", ['W/"abc"', "*", '"x"', 'W/"' + "a" * 40 + '"', ",,,"]),
                         ("Last-Event-ID", ["%032x" % rng.getrandbits(128), "", "x" * 400]),
                         ("traceparent", ["00-%032x-%016x-01" % (rng.getrandbits(128), rng.getrandbits(64)),
                                          "00-" + "0" * 32 + "-" + "0" * 16 + "-00", "ff-x", "a" * 600]),
                         ("X-Request-Id", ["abc", "x" * 300, "\u00e9", "req-000001"]),
                         ("Origin", ["http://127.0.0.1", "https://evil.example.com", "null"]),
                         ("Expect", ["100-continue", "200-ok"]),
                         ("Range", ["bytes=0-10", "bytes=x"]),
                         ("MCP-Protocol-Version", ["2026-07-28", "1999-01-01", ""])]:
        if rng.random() < 0.12:
            headers.append((name, mutate(rng, rng.choice(values))))
    body = b""
    if method in ("POST", "PUT", "PATCH") or rng.random() < 0.03:
        body = json_body(rng)
        headers.append(("Content-Type", rng.choice(["application/json", "application/json; charset=utf-8",
                                                    "text/plain", "application/json; charset=utf-16", ""])))
        if rng.random() < 0.95:
            headers.append(("Content-Length", str(len(body))))
        else:
            headers.append(("Transfer-Encoding", "chunked"))
            body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = "%s %s HTTP/1.1\r\n" % (method, target)
    head += "".join("%s: %s\r\n" % (k, v) for k, v in headers)
    head += "Connection: close\r\n\r\n"
    return method, target, head.encode("utf-8", "surrogatepass") + body


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.status = {}
        self.unexpected = []
        self.sent = 0

    def add(self, status, what):
        with self.lock:
            self.sent += 1
            self.status[status] = self.status.get(status, 0) + 1
            if status in ("500", "no answer", "not http") and len(self.unexpected) < 50:
                self.unexpected.append((status, what[:1500]))


def one(addr, rng, stats):
    method, target, raw = request(rng)
    # A stream (or a long poll) stays open: read what comes for a while.
    events = target.startswith("/api/changes") and (
        b"text/event-stream" in raw.split(b"\r\n\r\n", 1)[0] or "wait=" in target)
    try:
        with socket.create_connection(addr, timeout=10) as s:
            s.settimeout(10 if events else 40)
            s.sendall(raw)
            data = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    if events and data:
                        break  # a stream or a long poll that is still open
                    raise
                if not chunk:
                    break
                data += chunk
                if len(data) > 200_000_000:
                    break
        if not data:
            stats.add("no answer", raw[:1500].decode("utf-8", "replace"))
            return
        # Past interim answers (100 Continue) to the final one.
        while data.startswith(b"HTTP/1.1 1") and b"\r\n\r\n" in data:
            data = data.split(b"\r\n\r\n", 1)[1]
        line = data.split(b"\r\n", 1)[0]
        if not line.startswith(b"HTTP/1.1 "):
            stats.add("not http", "%s %s: %r" % (method, target, line[:80]))
            return
        stats.add(line[9:12].decode("ascii", "replace"), "%s %s" % (method, target))
    except (ConnectionResetError, BrokenPipeError):
        # A refused request head (too long, bad framing) may be cut by the server.
        stats.add("reset", "%s %s" % (method, target))
    except socket.timeout:
        stats.add("no answer", "timeout: " + raw[:1500].decode("utf-8", "replace"))


def rss(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--addr", required=True)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pid", type=int)
    a = ap.parse_args()
    host, port = a.addr.rsplit(":", 1)
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("loopback only")
    addr = (host, int(port))
    stats = Stats()
    end = time.time() + a.seconds

    def worker(n):
        rng = random.Random(a.seed * 1000 + n)
        while time.time() < end:
            one(addr, rng, stats)

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(a.threads)]
    for t in threads:
        t.start()
    samples = []
    while any(t.is_alive() for t in threads):
        if a.pid:
            samples.append(rss(a.pid))
        time.sleep(10)
    for t in threads:
        t.join()
    print("requests: %d in %.0f s" % (stats.sent, a.seconds))
    print("by status: %s" % json.dumps(dict(sorted(stats.status.items()))))
    if a.pid:
        print("RSS MiB every 10 s: %s" % samples)
    for status, what in stats.unexpected:
        print("UNEXPECTED %s: %s" % (status, what))
    raise SystemExit(1 if stats.unexpected else 0)


if __name__ == "__main__":
    main()
