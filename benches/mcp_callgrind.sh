#!/usr/bin/env bash
# The server's instructions per cached request, counted by callgrind: a
# `read_board` (Markdown) over MCP against `GET /api/detail` with
# `Accept: text/markdown` for the same demo board, each sent COUNT times on
# one keep-alive connection, in one server process. Instruction counts do
# not move with the load on the machine, so this is the repeatable half of
# benches/mcp.sh (whose wrk figures move by about ten points a run).
#
#   benches/mcp_callgrind.sh [count=2000]
#   BIN=/path/to/other/shared-board-api benches/mcp_callgrind.sh
#
# Needs valgrind (callgrind_control, callgrind_annotate), python3 and the
# release binary. Prints instructions per request for each, their ratio,
# and the functions of the MCP call's profile that the endpoint's lacks.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${BIN:-$TARGET/release/shared-board-api}
COUNT=${1:-2000}
[ -x "$BIN" ] || { echo "no release binary at $BIN (cargo build --release --bin shared-board-api)" >&2; exit 1; }
for tool in valgrind callgrind_control callgrind_annotate python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
TMP=$(mktemp -d /tmp/sba-mcp-cg.XXXXXX)
SVC=""
cleanup() {
  [ -z "$SVC" ] || kill "$SVC" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

# The server binds port 0; the script finds the port in /proc.
cat > "$TMP/bench.yaml" <<YAML
version: 1
threads: 1
board_api:
  server:
    listen: ["127.0.0.1:0"]
  provider:
    name: milanote
    share_host: app.milanote.com
    origin: http://127.0.0.1:9
  cache:
    ttl_seconds: 3600
YAML
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$TMP/cg.out" \
  "$BIN" --demo -c "$TMP/bench.yaml" > "$TMP/server.log" 2>&1 &
SVC=$!

python3 - "$TMP" "$SVC" "$COUNT" <<'PY'
import http.client, json, os, re, subprocess, sys, time, urllib.parse
tmp, pid, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
log = os.path.join(tmp, "server.log")

def listening_ports():
    """The ports of the server's listening sockets (the API's is bound to
    port 0; --demo's sample upstream has its own): socket inodes from
    /proc/PID/fd, matched in /proc/net/tcp."""
    inodes, ports = set(), []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        if f[3] == "0A" and f[9] in inodes and f[1].startswith("0100007F:"):
            ports.append(int(f[1].split(":")[1], 16))
    return ports
link = "https://app.milanote.com/1W3ZZU1Qvua02H/demo?p=demo"
detail = "/api/detail?url=" + urllib.parse.quote(link, safe="")
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "read_board", "arguments": {"url": link},
                              "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                        "io.modelcontextprotocol/clientCapabilities": {}}}})
mcp_headers = {"Content-Type": "application/json", "MCP-Protocol-Version": "2026-07-28",
               "Mcp-Method": "tools/call", "Mcp-Name": "read_board"}

def endpoint(c):
    c.request("GET", detail, headers={"Accept": "text/markdown"})
    r = c.getresponse(); data = r.read()
    assert r.status == 200, (r.status, data[:200])
    return data.decode()

def mcp(c):
    c.request("POST", "/api/mcp", body=body, headers=mcp_headers)
    r = c.getresponse(); data = r.read()
    assert r.status == 200, (r.status, data[:200])
    return json.loads(data)["result"]["content"][0]["text"]

def api_connection():
    """A connection to the listener that answers the API (the sample
    upstream's answers 404 there), once the server is up."""
    for _ in range(1200):
        for port in listening_ports():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            try:
                c.request("GET", detail, headers={"Accept": "text/markdown"})
                r = c.getresponse(); r.read()
                if r.status == 200:
                    return c
            except (ConnectionError, OSError):
                pass
        time.sleep(0.1)
    sys.exit("the API never answered:\n" + open(log, errors="replace").read())

c = api_connection()
md = endpoint(c)
for _ in range(20):
    assert endpoint(c) == md and mcp(c) == md, "read_board and /api/detail disagree"

def counted(label, send):
    subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True)
    subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
    for _ in range(count):
        send(c)
    subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
    subprocess.run(["callgrind_control", "-d", label, pid], check=True, capture_output=True)

counted("endpoint", endpoint)
counted("mcp", mcp)
PY

kill -INT "$SVC" 2>/dev/null || true
wait "$SVC" 2>/dev/null || true
SVC=""
python3 - "$TMP" "$COUNT" <<'PY'
import glob, os, re, subprocess, sys
tmp, count = sys.argv[1], int(sys.argv[2])
def profile(label):
    files = [f for f in glob.glob(f"{tmp}/cg.out*") if open(f, errors="replace").read(4096).find(f"Trigger: dump {label}\n") >= 0]
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100"] + files,
                         capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"([\d,]+).*PROGRAM TOTALS", out).group(1).replace(",", ""))
    funcs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*:(.+?)(?: \[.*\])?$", line)
        if m:
            funcs[m.group(2).strip()] = funcs.get(m.group(2).strip(), 0) + int(m.group(1).replace(",", ""))
    return total, funcs
e_total, e_funcs = profile("endpoint")
m_total, m_funcs = profile("mcp")
print(f"instructions per request: endpoint {e_total / count:,.0f}, read_board {m_total / count:,.0f}, "
      f"ratio read_board/endpoint {m_total / e_total:.3f}")
extra = sorted(((m_funcs.get(f, 0) - e_funcs.get(f, 0)) / count, f) for f in set(m_funcs) | set(e_funcs))
print("where read_board spends more, per request (instructions, function):")
for d, f in reversed(extra[-int(os.environ.get("TOP", "15")):]):
    if d > 0:
        print(f"  {d:>9,.0f}  {f[:160]}")
PY
