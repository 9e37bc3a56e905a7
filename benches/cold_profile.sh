#!/usr/bin/env bash
# A CPU profile of cold loads: `perf record` on the running service while
# it answers `loads` sequential cold requests for the 7,000-card board,
# then the report by thread and by function (inclusive), for the profile
# summary in benches/README.md.
#
#   benches/cold_profile.sh [loads=10] [endpoint=detail]
#   KEEP_TMP=1 benches/cold_profile.sh    # keep $TMP/perf.data for perf report
#
# Needs the release binary (built with debug = 1, as the release profile
# is), perf, nginx, curl, python3. Each request's `Server-Timing` is printed.
source "$(dirname "$0")/lib_upstream.sh"
N=${1:-10}
EP=${2:-detail}
watchdog $(( 90 + N * 5 ))
gen_boards 7000 26
start_nginx
start_service prof
P=http://127.0.0.1:$SVC_PORT
curl -s -o /dev/null --max-time 60 "$P/api/$EP?$(share_q "$BIG" "w$RANDOM$$")"
perf record -e cpu-clock -F 2000 -g --call-graph dwarf,16384 -o "$TMP/perf.data" -p "$SVC_PID" 2>"$TMP/perf-record.log" &
rec=$!
sleep 1
for i in $(seq "$N"); do
  curl -s -o /dev/null -D - --max-time 60 "$P/api/$EP?$(share_q "$BIG" "c$RANDOM$$x$i")" | grep -i '^server-timing' || true
done
kill -INT "$rec"; wait "$rec" || true
perf report -i "$TMP/perf.data" --no-children --sort comm -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -4
perf report -i "$TMP/perf.data" --children --sort symbol -g none --percent-limit 2 2>/dev/null \
  | grep -E 'shared_board_api::(provider|pipeline|store)' | cut -c1-160 | head -40
