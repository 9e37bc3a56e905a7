#!/usr/bin/env bash
# What the access log costs: cached small-board /api/search and
# /api/detail from one binary with the access log off and from the same
# binary with it on (RUST_LOG=info, lines to a file), interleaved round by
# round; with PREV, a second binary with its log on joins each round (its
# ratio is also taken against this binary's log-off run).
#
#   benches/access_log.sh [rounds=7] [seconds=3]
#   PREV=/path/to/older/shared-board-api benches/access_log.sh
#
# Needs the release binary, nginx, wrk, curl, python3 (see lib_upstream.sh).
source "$(dirname "$0")/lib_upstream.sh"
ROUNDS=${1:-7}; SECS=${2:-3}
watchdog $(( 60 + ROUNDS * 6 * (SECS + 2) ))
gen_boards 7000 26
start_nginx
start_service off ""; P1=$SVC_PORT
SVC_LOG=info start_service on "" "    access_log: true"; P2=$SVC_PORT
P3=
if [ -n "${PREV:-}" ]; then
  AFTER=$BIN; BIN=$PREV; SVC_LOG=info start_service prev "" "    access_log: true"; P3=$SVC_PORT; BIN=$AFTER
fi
Q=$(share_q "$SMALL" hotperm)
rps() { wrk -t2 -c32 -d"${SECS}s" "$1" | awk '/Requests\/sec/{print $2}'; }
for kind in search detail; do
  for p in $P1 $P2 $P3; do for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$p/api/$kind?$Q"; done; done
  # Cached answers only from here on: the log-on runs write one line each.
  : > $TMP/a; : > $TMP/b; : > $TMP/c
  for r in $(seq $ROUNDS); do
    rps "http://127.0.0.1:$P1/api/$kind?$Q" >> $TMP/a
    rps "http://127.0.0.1:$P2/api/$kind?$Q" >> $TMP/b
    [ -z "$P3" ] || rps "http://127.0.0.1:$P3/api/$kind?$Q" >> $TMP/c
  done
  echo "$kind log off:          $(paste -sd' ' $TMP/a) median $(median < $TMP/a)"
  echo "$kind log on:           $(paste -sd' ' $TMP/b) median $(median < $TMP/b)"
  echo "$kind per-round median: on/off $(paste $TMP/b $TMP/a | awk '{print $1/$2}' | median)"
  if [ -n "$P3" ]; then
    echo "$kind log on, PREV:     $(paste -sd' ' $TMP/c) median $(median < $TMP/c)"
    echo "$kind per-round median: PREV on / this off $(paste $TMP/c $TMP/a | awk '{print $1/$2}' | median)"
  fi
done
