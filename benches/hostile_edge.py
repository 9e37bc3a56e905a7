#!/usr/bin/env python3
"""What hostile clients cost the edge, for one or more builds side by side.

    benches/hostile_edge.py after=target/release/shared-board-api [before=/path/to/older]

Each build runs the demo (`--demo --listen 127.0.0.1:<port>`, the sample
upstream in the process, its log at the default level) at the same time as
the others, and gets the same treatment:

- idle connections: 100 connections each send one request, read the answer and
  then stay silent; after 75 s (the default idle time is 60 s), how many are still
  open, and how many a client dripping one header line every 3 s still holds;
- log lines: 1,000 requests with an `Accept-Encoding` Pingora cannot parse, and
  1,000 cold loads of a board whose provider answers 500 (each under a permission
  id of its own, so none is a cache hit): WARN lines written per 1,000;
- fair kept versions (in memory, `max_bytes` 1 MiB, the least allowed): a victim
  loads the small demo board, another client loads the 6 MB sample board under 16
  links of its own, then the victim's board changes; what the victim's
  `/api/changes?since=<its version>` answers.

`ONLY=idle|logs|fairness` runs that part alone. Only 127.0.0.1 is contacted.
Stdlib only.
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse


DEMO_LINK = "https://app.milanote.com/1W3ZZU1Qvua02H/demo?p=demo"
DEMO = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conf", "demo.yaml")).read()


def free_port():
    # A benchmark, not a test: the port is picked, then handed to the binary.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, target, headers=()):
    return get_all(port, target, headers).split(b"\r\n", 1)[0]


def get_all(port, target, headers=()):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        head = "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" % target
        head += "".join("%s: %s\r\n" % h for h in headers) + "\r\n"
        s.sendall(head.encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def read_answer(s):
    """Reads one Content-Length answer off a kept-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return False
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            return False
        rest += chunk
    return True


def still_open(s):
    s.setblocking(False)
    try:
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def idle(port, result):
    conns = []
    for _ in range(100):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /api/nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        read_answer(s)
        conns.append(s)
    drip = socket.create_connection(("127.0.0.1", port), timeout=10)
    drip.sendall(b"GET /api/nope HTTP/1.1\r\n")
    started = time.time()
    dripping = True
    while time.time() - started < 75:
        time.sleep(3)
        try:
            drip.sendall(b"X-Drip: 1\r\n")
        except OSError:
            dripping = False
    result["idle open after 75 s"] = "%d of 100" % sum(still_open(s) for s in conns)
    result["dripping head open after 75 s"] = dripping and still_open(drip)
    for s in conns + [drip]:
        s.close()


def logs(port, log_path, result):
    def warns():
        with open(log_path, errors="replace") as f:
            return sum(1 for line in f if " WARN " in line)

    base = warns()
    for _ in range(1000):
        get(port, "/api/search?url=" + urllib.parse.quote(DEMO_LINK, safe=""),
            [("Accept-Encoding", "br, , gzip;q=1.0.0")])
    time.sleep(0.5)
    result["WARN per 1,000 bad Accept-Encoding"] = warns() - base
    base = warns()
    for n in range(1000):
        link = "https://app.milanote.com/fault-500/x?p=hostile%d" % n
        get(port, "/api/search?url=" + urllib.parse.quote(link, safe=""))
    time.sleep(0.5)
    result["WARN per 1,000 failing cold loads"] = warns() - base


def status(port, target):
    return get(port, target)[9:12].decode()


def fairness(port, log_path, result):
    q = lambda link: urllib.parse.quote(link, safe="")
    victim = q("https://app.milanote.com/1W3ZZU1Qvua02H/demo?p=victim")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(("GET /api/detail?url=%s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                   % victim).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(65536)
    version = next(line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")
                   if line.lower().startswith(b"board-version:"))
    time.sleep(1)  # the versions' writer
    for n in range(16):
        status(port, "/api/detail?url=" + q("https://app.milanote.com/s-big/big?p=other%d" % n))
    time.sleep(1)
    # The victim's board changes at the provider (the sample upstream's edit,
    # whose address the demo's banner prints): its kept version is needed now.
    with open(log_path, errors="replace") as f:
        upstream = re.search(r"(http://127\.0\.0\.1:\d+)/demo/edit/", f.read()).group(1)
    up_host, up_port = upstream[len("http://"):].split(":")
    with socket.create_connection((up_host, int(up_port)), timeout=30) as s:
        s.sendall(b"POST /demo/edit/1W3ZZU1Qvua02H HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                  b"Connection: close\r\n\r\n")
        s.recv(65536)
    changes = "/api/changes?url=%s&since=%s" % (victim, version)
    answer = "?"
    for _ in range(150):  # past the demo cache's 5 s
        raw = get_all(port, changes)
        answer = raw[9:12].decode()
        if answer != "200" or b'"to":"%s"' % version.encode() not in raw:
            break
        time.sleep(0.1)
    result["victim's since after 16 large boards of other links"] = answer


def run(label, binary, results):
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="sba-hostile-%s-" % label, suffix=".log", delete=False)
    # The demo's own settings, with its files made private to this run (two
    # builds side by side share nothing): versions in memory, its own pid file.
    conf = tempfile.NamedTemporaryFile("w", prefix="sba-hostile-%s-" % label, suffix=".yaml", delete=False)
    conf.write(DEMO.replace("/tmp/shared-board-api-demo", conf.name + "-run")
               .replace("    store: sqlite\n", "    store: memory\n    max_bytes: 1048576\n")
               .replace("    path: " + conf.name + "-run/state.sqlite\n", ""))
    conf.close()
    proc = subprocess.Popen([binary, "--demo", "--listen", "127.0.0.1:%d" % port, "-c", conf.name],
                            stdout=log, stderr=log)
    try:
        for _ in range(200):
            try:
                if get(port, "/api/search?url=x").startswith(b"HTTP/1.1 400"):
                    break
            except OSError:
                time.sleep(0.1)
        result = {}
        only = os.environ.get("ONLY")  # idle, logs or fairness: that part alone
        t = threading.Thread(target=idle, args=(port, result))
        if only in (None, "idle"):
            t.start()
        if only in (None, "logs"):
            logs(port, log.name, result)
        if only in (None, "fairness"):
            fairness(port, log.name, result)
        if t.is_alive():
            t.join()
        results[label] = result
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    builds = [a.split("=", 1) for a in sys.argv[1:]]
    if not builds:
        raise SystemExit(__doc__)
    results = {}
    threads = [threading.Thread(target=run, args=(label, path, results)) for label, path in builds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    keys = list(next(iter(results.values())).keys()) if results else []
    print("| | " + " | ".join(label for label, _ in builds) + " |")
    print("|---|" + "---:|" * len(builds))
    for k in keys:
        print("| %s | %s |" % (k, " | ".join(str(results.get(l, {}).get(k, "?")) for l, _ in builds)))


if __name__ == "__main__":
    main()
