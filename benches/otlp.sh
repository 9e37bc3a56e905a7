#!/usr/bin/env bash
# What the span export costs a cached request, and that a slow or gone
# collector costs it nothing more: cached small-board /api/search from four
# services of one binary, interleaved round by round: without
# board_api.server.otlp (absent), exporting to a collector that takes every
# batch (up: nginx answering 200 to POST /v1/traces), to a port nothing
# listens on (down: every batch refused), and to a listener that accepts and
# never answers (stuck: every batch waits its 5 s deadline). wrk's p99 and
# req/s per round; then each service's board_api_otlp_spans_total.
#
#   benches/otlp.sh [rounds=5] [seconds=3]
#
# Needs the release binary, nginx, wrk, curl, python3 (see lib_upstream.sh).
source "$(dirname "$0")/lib_upstream.sh"
ROUNDS=${1:-5}; SECS=${2:-3}
watchdog $(( 90 + ROUNDS * 4 * (SECS + 2) ))
gen_boards 7000 26
start_nginx

# down: a free port, nothing listening. stuck: python holds every
# connection open and reads nothing back.
DOWN_PORT=$(rand_port); while ! port_free "$DOWN_PORT"; do DOWN_PORT=$(rand_port); done
STUCK_PORT=$(rand_port); while ! port_free "$STUCK_PORT"; do STUCK_PORT=$(rand_port); done
python3 - "$STUCK_PORT" <<'PY' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(128)
held = []
while True:
    c, _ = s.accept(); held.append(c)
PY
PIDS+=($!)

declare -A PORT METRICS
for kind in absent up down stuck; do
  m=$(rand_port); while ! port_free "$m"; do m=$(rand_port); done
  server="    metrics:
      listen: \"127.0.0.1:$m\""
  case $kind in
    up) endpoint="http://127.0.0.1:$UP_PORT/v1/traces" ;;
    down) endpoint="http://127.0.0.1:$DOWN_PORT" ;;
    stuck) endpoint="http://127.0.0.1:$STUCK_PORT" ;;
    *) endpoint= ;;
  esac
  [ -z "$endpoint" ] || server="$server
    otlp:
      endpoint: $endpoint"
  start_service "$kind" "" "$server"
  PORT[$kind]=$SVC_PORT; METRICS[$kind]=$m
done

Q=$(share_q "$SMALL" otlpbench)
# wrk's p99 in ms and its req/s, one line.
run() {
  wrk -t2 -c32 -d"${SECS}s" --latency "$1" | awk '
    / 99%/ { v=$2; u=v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
             ms = (u=="us") ? v/1000 : (u=="s") ? v*1000 : v }
    /Requests\/sec/ { rps=$2 }
    END { printf "%.3f %s\n", ms, rps }'
}
for kind in absent up down stuck; do
  for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:${PORT[$kind]}/api/search?$Q"; done
  : > "$TMP/$kind"
done
for r in $(seq "$ROUNDS"); do
  for kind in absent up down stuck; do
    run "http://127.0.0.1:${PORT[$kind]}/api/search?$Q" >> "$TMP/$kind"
  done
done
printf '%-7s %-40s %9s %10s\n' collector "p99 ms by round" "p99 med" "req/s med"
for kind in absent up down stuck; do
  printf '%-7s %-40s %9s %10s\n' "$kind" "$(cut -d' ' -f1 "$TMP/$kind" | paste -sd' ')" \
    "$(cut -d' ' -f1 "$TMP/$kind" | median)" "$(cut -d' ' -f2 "$TMP/$kind" | median)"
done
# Let the last batches end (a stuck one takes its 5 s deadline).
sleep 6
for kind in up down stuck; do
  printf '%-7s spans: %s\n' "$kind" "$(curl -s "http://127.0.0.1:${METRICS[$kind]}/metrics" \
    | awk '/^board_api_otlp_spans_total/ { match($0, /outcome="[a-z]+"/); o=substr($0, RSTART+9, RLENGTH-10); printf "%s %s  ", o, $2 }')"
done
for kind in absent up down stuck; do log_problems "$kind"; done
