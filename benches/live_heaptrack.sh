#!/usr/bin/env bash
# Where the memory of open event streams goes: the release binary under
# heaptrack with N idle event streams of /api/changes (as benches/live.sh
# opens them), or N idle keep-alive connections (`idle`), then each
# allocation site live at the peak with its bytes per allocation, split
# into the request's (the API's futures, the stream, its response header)
# and the connection's (Pingora's session and task, the listener's
# buffers) (benches/support/heaptrack_sites.py). `h2c`: the N streams over
# cleartext HTTP/2 (`server.h2c: true`), multiplexed as the server's
# SETTINGS_MAX_CONCURRENT_STREAMS allows, each site's bytes per stream
# (the connections' sites spread over their streams).
#
#   benches/live_heaptrack.sh [streams|idle|h2c] [N=1000]
#   H2_PYTHON=/tmp/h2venv/bin/python benches/live_heaptrack.sh h2c 1000
#   BIN=/path/to/older/shared-board-api benches/live_heaptrack.sh streams 1000
#
# Needs heaptrack (apt-get install heaptrack), the release binary (built
# with debug info: `[profile.release] debug = 1`), nginx, curl, python3;
# h2c a python3 with the `h2` package, H2_PYTHON (see benches/live.sh).
# Only 127.0.0.1 is contacted. Set KEEP=FILE to keep the recording.
source "$(dirname "$0")/lib_upstream.sh"
watchdog "${WATCHDOG:-300}"
MODE=${1:-streams}
N=${2:-1000}
command -v heaptrack >/dev/null || { echo "needs heaptrack" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"
gen_boards 7000 26
start_nginx

# The service under heaptrack (its -t check without).
REAL=$BIN
cat > "$TMP/under-heaptrack" <<EOF
#!/usr/bin/env bash
for a in "\$@"; do [ "\$a" = -t ] && exec "$REAL" "\$@"; done
exec heaptrack -o "$TMP/recording" "$REAL" "\$@"
EOF
chmod +x "$TMP/under-heaptrack"
BIN=$TMP/under-heaptrack
SERVER=
[ "$MODE" = h2c ] && SERVER="    h2c: true"
start_service heaptrack "  live:
    every: 10
    max_streams: 20000
    max_streams_per_client: 20000" "$SERVER"
q=$(share_q "$SMALL" "bench")
if [ "$MODE" = streams ]; then
  python3 "$ROOT/benches/support/sse_crowd.py" --port "$SVC_PORT" --query "$q" --streams "$N" --timeout 600 > "$TMP/clients.out" 2>&1 &
elif [ "$MODE" = h2c ]; then
  "${H2_PYTHON:-python3}" "$ROOT/benches/support/sse_crowd.py" --h2c --port "$SVC_PORT" --query "$q" --streams "$N" --timeout 600 > "$TMP/clients.out" 2>&1 &
else
  python3 "$ROOT/benches/support/idle_conns.py" "$SVC_PORT" "$N" > "$TMP/clients.out" 2>&1 &
fi
PIDS+=($!)
for _ in $(seq 900); do grep -q ready "$TMP/clients.out" && break; sleep 0.2; done
grep ready "$TMP/clients.out" || { echo "the clients did not get ready" >&2; cat "$TMP/clients.out" >&2; exit 1; }
sleep 3
# The service itself ends (heaptrack then writes the recording), the
# clients still connected: the peak is with all N open.
prog=$(pgrep -P "$SVC_PID" -x "$(basename "$REAL" | cut -c1-15)")
echo "$MODE: $N, the service's VmRSS $(awk '/^VmRSS/ {print $2, $3}' "/proc/$prog/status")"
kill -TERM "$prog"
for _ in $(seq 240); do kill -0 "$SVC_PID" 2>/dev/null || break; sleep 0.5; done
rec=$(ls "$TMP"/recording*.zst 2>/dev/null | head -1)
[ -n "$rec" ] || { echo "no recording" >&2; exit 1; }
[ -n "${KEEP:-}" ] && cp "$rec" "$KEEP"
if [ "$MODE" = h2c ]; then
  # Sites with one allocation or more per connection, bytes per stream.
  conns=$(grep ready "$TMP/clients.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["connections"])')
  echo "$N streams over $conns connections"
  python3 "$ROOT/benches/support/heaptrack_sites.py" "$rec" "$N" 200 "$conns"
else
  python3 "$ROOT/benches/support/heaptrack_sites.py" "$rec" "$N"
fi
