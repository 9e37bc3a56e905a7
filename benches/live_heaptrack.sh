#!/usr/bin/env bash
# Where the memory of open event streams goes: the release binary under
# heaptrack with N idle event streams of /api/changes (as benches/live.sh
# opens them), or N idle keep-alive connections (`idle`), then each
# allocation site live at the peak with its bytes per allocation, split
# into the request's (the API's futures, the stream, its response header)
# and the connection's (Pingora's session and task, the listener's
# buffers) (benches/support/heaptrack_sites.py).
#
#   benches/live_heaptrack.sh [streams|idle] [N=1000]
#   BIN=/path/to/older/shared-board-api benches/live_heaptrack.sh streams 1000
#
# Needs heaptrack (apt-get install heaptrack), the release binary (built
# with debug info: `[profile.release] debug = 1`), nginx, curl, python3.
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
start_service heaptrack "  live:
    every: 10
    max_streams: 20000
    max_streams_per_client: 20000"
q=$(share_q "$SMALL" "bench")
if [ "$MODE" = streams ]; then
  python3 "$ROOT/benches/support/sse_crowd.py" --port "$SVC_PORT" --query "$q" --streams "$N" --timeout 600 > "$TMP/clients.out" 2>&1 &
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
python3 "$ROOT/benches/support/heaptrack_sites.py" "$rec" "$N"
