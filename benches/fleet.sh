#!/usr/bin/env bash
# The fleet tier: N=4 release binaries in front of one static
# upstream (nginx, as in governance.sh), with and without a shared Redis.
#
#   benches/fleet.sh [samples=30]
#
# Reports, in one run:
#   1. upstream requests for a 200-request burst spread round-robin over the
#      nodes: one node alone, 4 nodes without the tier, 4 nodes with it;
#      then what a node started afterwards adds for the same board;
#   2. curl time_total p50/p99 of a cold load (node A), a shared hit (node B,
#      new to those boards, warm fleet) and a process hit (node B again), for
#      the small board and the ~5 MB one;
#   3. with Redis killed (breaker open) against 4 nodes without a tier: the
#      statuses and p50/p99 of cold loads;
#   4. with BEFORE=/path/to/another/shared-board-api: the shared hit of the
#      ~5 MB board on two nodes of that binary against two of this one, on
#      the same Redis (each under its own key prefix), interleaved request
#      by request; p50/p99 of each and the ratio of the medians.
#      SECTIONS=4 runs only that one (default: 123, and 4 when BEFORE is set).
# Needs the release binary (cargo build --release --bin shared-board-api),
# nginx, redis-server, curl, python3. Only 127.0.0.1 is contacted.
#
#   BEFORE=/work/bin-before/shared-board-api SECTIONS=4 benches/fleet.sh 30
source "$(dirname "$0")/lib_upstream.sh"
watchdog "${WATCHDOG:-280}"
N=${1:-30}
SECTIONS=${SECTIONS:-123${BEFORE:+4}}
run() { [[ $SECTIONS == *$1* ]]; }
RUN=$RANDOM$$
command -v redis-server >/dev/null || { echo "needs redis-server" >&2; exit 1; }
UP_ACCESS_LOG=$TMP/upstream.log
gen_boards 7000 26
start_nginx
upstream() { wc -l < "$UP_ACCESS_LOG"; }

start_redis
TIER="  cache:
    shared:
      url: redis://127.0.0.1:$REDIS_PORT/0
      secret_env: SBAPI_FLEET_KEY"
SBAPI_FLEET_KEY=$(head -c 48 /dev/urandom | base64 | tr -d '\n')
export SBAPI_FLEET_KEY

# nodes PREFIX COUNT [extra]: starts COUNT services; their ports in PORTS_<PREFIX>.
nodes() {
  local prefix=$1 count=$2 extra=${3:-} i ports=()
  for i in $(seq "$count"); do
    start_service "$prefix$i" "$extra"; ports+=("$SVC_PORT")
  done
  eval "PORTS_$prefix=(${ports[*]})"
}

# burst BOARD PERM PORT...: 200 concurrent GETs round-robin; prints statuses.
burst() {
  local board=$1 perm=$2; shift 2
  local ports=("$@") i
  for i in $(seq 0 199); do
    echo "http://127.0.0.1:${ports[$((i % ${#ports[@]}))]}/api/detail?$(share_q "$board" "$perm")"
  done | xargs -P 64 -n 1 curl -s -o /dev/null -w '%{http_code}\n' | sort | uniq -c | tr -s ' ' | tr '\n' ' '
}

# times PORT BOARD PERM...: time_total (ms) of one GET each, in order.
times() {
  local port=$1 board=$2 p; shift 2
  for p in "$@"; do
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/api/detail?$(share_q "$board" "$p")"
  done | awk '{printf "%.3f\n", $1 * 1000}'
}
# p50/p99 of stdin.
pct() { sort -g | awk '{a[NR]=$1} END {i=int(NR*0.99+0.999); if (i<1) i=1; printf "p50 %.2f ms  p99 %.2f ms  (n=%d)", a[int((NR+1)/2)], a[i], NR}'; }

echo "fleet.sh $(date -u +%FT%TZ): upstream 127.0.0.1:$UP_PORT, redis 127.0.0.1:$REDIS_PORT, $N samples"
echo
if run 1; then
echo "== 1. upstream requests for a 200-request burst (small board)"
nodes solo 1
before=$(upstream); out=$(burst "$SMALL" "solo$RUN" "${PORTS_solo[@]}")
echo "one node:            $(( $(upstream) - before )) upstream requests   statuses: $out"
nodes plain 4
before=$(upstream); out=$(burst "$SMALL" "plain$RUN" "${PORTS_plain[@]}")
echo "4 nodes, no tier:    $(( $(upstream) - before )) upstream requests   statuses: $out"
nodes fleet 4 "$TIER"
before=$(upstream); out=$(burst "$SMALL" "fleet$RUN" "${PORTS_fleet[@]}")
echo "4 nodes, fleet tier: $(( $(upstream) - before )) upstream requests   statuses: $out"
start_service late "$TIER"; LATE=$SVC_PORT
before=$(upstream)
code=$(curl -s -o /dev/null -w '%{http_code} %header{server-timing}' "http://127.0.0.1:$LATE/api/detail?$(share_q "$SMALL" "fleet$RUN")")
echo "a node started now:  $(( $(upstream) - before )) upstream requests   ($code)"
fi
if run 2; then
echo
echo "== 2. latency, curl time_total (node A loads cold, node B is new to the boards)"
A=${PORTS_fleet[0]}; B=${PORTS_fleet[1]}
for which in small big; do
  if [ $which = small ]; then board=$SMALL; n=$N; else board=$BIG; n=$(( N < 12 ? N : 12 )); fi
  perms=(); for i in $(seq "$n"); do perms+=("lat$which$RUN-$i"); done
  times "$A" "$board" "${perms[@]}" > "$TMP/cold-$which.txt"
  # Let the stores (off the request path) land before node B reads.
  sleep 1
  times "$B" "$board" "${perms[@]}" > "$TMP/shared-$which.txt"
  times "$B" "$board" "${perms[@]}" > "$TMP/hit-$which.txt"
  echo "$which board: cold load    $(pct < "$TMP/cold-$which.txt")"
  echo "$which board: shared hit   $(pct < "$TMP/shared-$which.txt")"
  echo "$which board: process hit  $(pct < "$TMP/hit-$which.txt")"
  c=$(median < "$TMP/cold-$which.txt"); s=$(median < "$TMP/shared-$which.txt")
  echo "$which board: shared hit / cold load (medians) = $(awk -v s="$s" -v c="$c" 'BEGIN{printf "%.3f", s/c}')"
done
fi
if run 4; then
  [ -x "${BEFORE:-}" ] || { echo "section 4 needs BEFORE=/path/to/shared-board-api" >&2; exit 1; }
  echo
  echo "== 4. shared hit of the big board: before ($BEFORE) against after ($BIN), interleaved"
  # Each binary under its own prefix: neither reads (nor deletes) the
  # other's values. The before binary may not know secret_env.
  BEFORE_TIER="  cache:
    shared:
      url: redis://127.0.0.1:$REDIS_PORT/0
      key_prefix: \"before:\""
  [ -n "${CONF_FORM:-}" ] || detect_conf_form
  write_conf "$TMP/probe-before.yaml" "$CONF_FORM" 1 "$BEFORE_TIER" ""
  if ! "$BEFORE" -t -c "$TMP/probe-before.yaml" > /dev/null 2>&1; then
    # A binary that seals its values needs the fleet key too.
    BEFORE_TIER="$TIER
      key_prefix: \"before:\""
  fi
  AFTER_TIER="$TIER
      key_prefix: \"after:\""
  AFTER_BIN=$BIN
  BIN=$BEFORE
  start_service before-a "$BEFORE_TIER"; BA=$SVC_PORT
  start_service before-b "$BEFORE_TIER"; BB=$SVC_PORT
  BIN=$AFTER_BIN
  start_service after-a "$AFTER_TIER"; AA=$SVC_PORT
  start_service after-b "$AFTER_TIER"; AB=$SVC_PORT
  # shared PORT PERM FILE: one GET; its time (ms) to FILE, its cache level
  # to FILE.levels.
  shared() {
    curl -s -o /dev/null -w '%{time_total} %header{server-timing}\n' \
      "http://127.0.0.1:$1/api/detail?$(share_q "$BIG" "$2")" |
      awk -v f="$3" '{printf "%.3f\n", $1 * 1000 >> f; print $2 >> (f ".levels")}'
  }
  : > "$TMP/sh-before.txt"; : > "$TMP/sh-after.txt"
  for i in $(seq "$N"); do
    p="cmp$RUN-$i"
    # Node A of each loads the board cold and stores it; node B reads it.
    times "$BA" "$BIG" "$p" > /dev/null
    times "$AA" "$BIG" "$p" > /dev/null
    # Until both stores (off the request path) have landed and the locks
    # are released, so that node B reads rather than waits for a load.
    for _ in $(seq 100); do
      docs=$(redis-cli -p "$REDIS_PORT" --scan --pattern '*:doc:full' | grep -c '^\(before\|after\):' || true)
      locks=$(redis-cli -p "$REDIS_PORT" --scan --pattern '*:lock:*' | wc -l)
      [ "$docs" -ge $(( 2 * i )) ] && [ "$locks" -eq 0 ] && break
      sleep 0.05
    done
    if (( i % 2 )); then
      shared "$BB" "$p" "$TMP/sh-before.txt"; shared "$AB" "$p" "$TMP/sh-after.txt"
    else
      shared "$AB" "$p" "$TMP/sh-after.txt"; shared "$BB" "$p" "$TMP/sh-before.txt"
    fi
  done
  levels() { grep -c 'desc=shared' "$1.levels" || true; }
  echo "before: $(pct < "$TMP/sh-before.txt")   shared hits: $(levels "$TMP/sh-before.txt")/$N"
  echo "after:  $(pct < "$TMP/sh-after.txt")   shared hits: $(levels "$TMP/sh-after.txt")/$N"
  b=$(median < "$TMP/sh-before.txt"); a=$(median < "$TMP/sh-after.txt")
  echo "after / before (medians) = $(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", a/b}')"
  for name in before-b after-b; do log_problems "$name"; done
fi
if run 3; then
echo
echo "== 3. the tier down (Redis killed) against no tier: cold loads of the small board"
kill -9 "$REDIS_PID" 2>/dev/null || true
sleep 0.2
# Open the breaker first (5 failed calls), then measure.
for i in $(seq 6); do curl -s -o /dev/null "http://127.0.0.1:$A/api/detail?$(share_q "$SMALL" "open$RUN-$i")"; done
perms=(); for i in $(seq "$N"); do perms+=("down$RUN-$i"); done
codes=$(for p in "${perms[@]}"; do curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$A/api/detail?$(share_q "$SMALL" "$p")"; done | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
# Interleaved, 5N each, so both see the same machine.
: > "$TMP/down.txt"; : > "$TMP/none.txt"
for i in $(seq $(( 5 * N ))); do
  times "$A" "$SMALL" "downt$RUN-$i" >> "$TMP/down.txt"
  times "${PORTS_plain[0]}" "$SMALL" "none$RUN-$i" >> "$TMP/none.txt"
done
echo "tier down: statuses $codes"
echo "tier down (breaker open): $(pct < "$TMP/down.txt")"
echo "no tier:                  $(pct < "$TMP/none.txt")"
fi
run 1 && for name in fleet1 fleet2; do log_problems "$name"; done
