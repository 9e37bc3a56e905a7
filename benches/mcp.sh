#!/usr/bin/env bash
# A cached `read_board` (Markdown) over MCP against a cached
# `GET /api/detail` with `Accept: text/markdown` for the same board, side by
# side in one run: what the MCP envelope (reading a JSON-RPC body, the
# protocol checks, wrapping the cached tool result) costs on the hot path.
#
#   benches/mcp.sh [rounds=5] [seconds=5]
#
# Needs the release binary (cargo build --release --bin shared-board-api),
# wrk, curl and python3. Runs `--demo` (the bundled sample boards, loopback
# only) with a one-hour cache so every request of the run is a hit, checks
# that both answers carry the same Markdown, then interleaves rounds:
# wrk -t2 -c32 for SECONDS on the endpoint, then on the MCP call (a
# 2026-07-28 tools/call with its headers, POSTed by a wrk Lua script).
# Prints each round and the medians, and the ratio MCP / endpoint.
#
# PIN=1 puts the server (one worker thread) on CPU 1 and wrk (one thread)
# on CPU 0, so that the load generator does not take its CPU time from the
# server: on a 2-core machine that is what makes the ratio the server's.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${BIN:-$TARGET/release/shared-board-api}
ROUNDS=${1:-5}
SECS=${2:-5}
[ -x "$BIN" ] || { echo "no release binary at $BIN (cargo build --release --bin shared-board-api)" >&2; exit 1; }
for tool in wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
TMP=$(mktemp -d /tmp/sba-mcp-bench.XXXXXX)
SVC=""
cleanup() {
  [ -z "$SVC" ] || kill "$SVC" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
BASE=http://127.0.0.1:$PORT
PIN=${PIN:-0}
THREADS=2; SERVER_CPU=(); WRK_CPU=(); WRK_THREADS=2
if [ "$PIN" = 1 ]; then
  command -v taskset >/dev/null || { echo "PIN=1 needs taskset" >&2; exit 1; }
  THREADS=1; SERVER_CPU=(taskset -c 1); WRK_CPU=(taskset -c 0); WRK_THREADS=1
fi
cat > "$TMP/bench.yaml" <<YAML
version: 1
threads: $THREADS
board_api:
  server:
    listen: ["127.0.0.1:$PORT"]
  provider:
    name: milanote
    share_host: app.milanote.com
    origin: http://127.0.0.1:9
  cache:
    ttl_seconds: 3600
YAML
"${SERVER_CPU[@]}" "$BIN" --demo -c "$TMP/bench.yaml" > "$TMP/server.log" 2>&1 &
SVC=$!
LINK='https://app.milanote.com/1W3ZZU1Qvua02H/demo?p=demo'
Q=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$LINK")
DETAIL="$BASE/api/detail?url=$Q"
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$DETAIL")" = 200 ] && break
  kill -0 "$SVC" 2>/dev/null || { cat "$TMP/server.log" >&2; exit 1; }
  sleep 0.1
done

BODY=$(python3 -c 'import json, sys; print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_board", "arguments": {"url": sys.argv[1]}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}))' "$LINK")
mcp_curl() {
  curl -s "$BASE/api/mcp" -H 'Content-Type: application/json' -H 'MCP-Protocol-Version: 2026-07-28' \
    -H 'Mcp-Method: tools/call' -H 'Mcp-Name: read_board' --data-binary "$BODY"
}
# Warm both, then check they answer the same Markdown.
for _ in 1 2 3; do curl -s -o "$TMP/detail.md" -H 'Accept: text/markdown' "$DETAIL"; mcp_curl > "$TMP/mcp.json"; done
python3 - "$TMP/detail.md" "$TMP/mcp.json" <<'PY'
import json, sys
md = open(sys.argv[1], encoding="utf-8").read()
answer = json.load(open(sys.argv[2], encoding="utf-8"))
text = answer["result"]["content"][0]["text"]
assert text == md, "read_board and /api/detail disagree"
print(f"same Markdown: {len(md.encode())} bytes; MCP response {len(open(sys.argv[2], 'rb').read())} bytes")
PY

python3 - "$BODY" > "$TMP/post.lua" <<'PY'
import json, sys
body = sys.argv[1]
print("wrk.method = \"POST\"")
print("wrk.body = " + json.dumps(body))
for k, v in [("Content-Type", "application/json"), ("MCP-Protocol-Version", "2026-07-28"),
             ("Mcp-Method", "tools/call"), ("Mcp-Name", "read_board")]:
    print(f'wrk.headers["{k}"] = "{v}"')
PY

rps() { # label wrk-args... -> prints requests/sec, fails on any non-2xx
  local out
  out=$("${WRK_CPU[@]}" wrk -t"$WRK_THREADS" -c32 -d"${SECS}s" "$@")
  if grep -q 'Non-2xx' <<<"$out"; then echo "non-2xx answers in $*" >&2; echo "$out" >&2; exit 1; fi
  awk '/Requests\/sec/ {print $2}' <<<"$out"
}
ENDPOINT=(); MCP=()
for r in $(seq "$ROUNDS"); do
  e=$(rps -H 'Accept: text/markdown' "$DETAIL")
  m=$(rps -s "$TMP/post.lua" "$BASE/api/mcp")
  ENDPOINT+=("$e"); MCP+=("$m")
  printf 'round %d: GET /api/detail (Markdown) %s req/s, read_board (MCP) %s req/s\n' "$r" "$e" "$m"
done
python3 - "${ENDPOINT[*]}" "${MCP[*]}" <<'PY'
import statistics, sys
e = [float(x) for x in sys.argv[1].split()]
m = [float(x) for x in sys.argv[2].split()]
me, mm = statistics.median(e), statistics.median(m)
print(f"median: endpoint {me:.0f} req/s, read_board {mm:.0f} req/s, ratio MCP/endpoint {mm / me:.3f}")
PY
