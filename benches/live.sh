#!/usr/bin/env bash
# Changes as they happen (board_api.live): what open event streams cost one
# node, and what a followed board costs the fleet's Redis.
#
#   benches/live.sh [streams...]     (default: 1000 5000 10000)
#   BEFORE=/path/to/older/shared-board-api ROUNDS=3 benches/live.sh 1000 10000
#                                    (sections 1 and 2 on both binaries, in
#                                    turn, each ROUNDS times; the medians
#                                    per stream and connection and their ratio)
#   PROTO="h1 h2c" ROUNDS=3 benches/live.sh 1000 10000
#                                    (section 1 over HTTP/1.1 and over
#                                    cleartext HTTP/2, in turn, each ROUNDS
#                                    times; the medians per stream of both)
#   SECTIONS="streams" ...           (only section 1; default
#                                    "streams idle redis")
#
# Reports, in one run:
#   1. for each count N: one release binary (no fleet tier) in front of the
#      nginx upstream, N idle event streams of /api/changes on the small
#      board (benches/support/sse_crowd.py, one asyncio process), for each
#      protocol of PROTO (default h1):
#      - h1: HTTP/1.1, one TCP connection per stream (what a browser does
#        without HTTP/2);
#      - h2c: HTTP/2 with prior knowledge (`server.h2c: true`), the streams
#        multiplexed, as many per connection as the server's
#        SETTINGS_MAX_CONCURRENT_STREAMS allows (what a browser does over
#        HTTP/2: every EventSource to one origin on one connection); the
#        one-stream baseline is one stream on one connection;
#      - the service's RSS with one stream, then with N (VmRSS), and the
#        bytes per stream between the two;
#      - its CPU (utime + stime) over 30 s of N idle streams (keep-alive
#        comments every 15 s, a poll every `every`);
#      - the board edited (the upstream's file rewritten): the time from
#        the first stream's board.changed event to the last one's (the
#        fan-out), and from the edit to the last one (plus up to `every`
#        of polling).
#   2. the baseline: for each N, N idle keep-alive connections that each
#      had one answer (benches/support/idle_conns.py), RSS per connection;
#   3. with a redis-server: one node following B=100 links (one stream
#      each; tier calls bounded by 1 s, so a busy machine does not trip
#      the breaker and leave the leases to expire), one edit; the bytes Redis holds per followed link for the live
#      keys (lease, last version) and the shared document (MEMORY USAGE),
#      and used_memory before and after.
# Needs the release binary (cargo build --release --bin shared-board-api),
# nginx, redis-server, curl, python3; h2c needs a python3 with the `h2`
# package, H2_PYTHON (default python3), e.g.
#   python3 -m venv /tmp/h2venv && /tmp/h2venv/bin/pip install h2
#   H2_PYTHON=/tmp/h2venv/bin/python PROTO="h1 h2c" benches/live.sh 1000
# Only 127.0.0.1 is contacted.
source "$(dirname "$0")/lib_upstream.sh"
BINARIES=1; [ -n "${BEFORE:-}" ] && BINARIES=2
PROTOS=(${PROTO:-h1})
SECTIONS=" ${SECTIONS:-streams idle redis} "
H2_PYTHON=${H2_PYTHON:-python3}
for p in "${PROTOS[@]}"; do
  case $p in
    h1) ;;
    h2c) "$H2_PYTHON" -c 'import h2' 2>/dev/null || { echo "PROTO h2c needs the h2 package in $H2_PYTHON (H2_PYTHON=)" >&2; exit 1; } ;;
    *) echo "PROTO: h1 or h2c, not $p" >&2; exit 1 ;;
  esac
done
watchdog "${WATCHDOG:-$((600 * ${ROUNDS:-1} * BINARIES * ${#PROTOS[@]}))}"
COUNTS=("$@")
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(1000 5000 10000)
[[ $SECTIONS != *" redis "* ]] || command -v redis-server >/dev/null || { echo "needs redis-server" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"
gen_boards 7000 26
start_nginx
EVERY=10
LIVE="  live:
    every: $EVERY
    max_streams: 20000
    max_streams_per_client: 20000"
SEED=7

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
edit_small() {
  SEED=$((SEED + 1))
  python3 "$ROOT/benches/gen_board.py" --cards 26 --board-id "$SMALL" --seed "$SEED" --out "$TMP/www/small.new" 2>/dev/null
  chmod 644 "$TMP/www/small.new"; mv "$TMP/www/small.new" "$SMALL_FILE"
}

# streams_row N: one node of $BIN with N idle streams over $CUR_PROTO;
# prints the table row and sets PER (KiB per stream).
streams_row() {
  local N=$1 port pid q one crowd ready rss1 rssN t0 t1 cpu edited change got first last fan tot conns
  local py=python3 client=() server=
  if [ "$CUR_PROTO" = h2c ]; then
    [ "${CONF_FORM:-}" ] || detect_conf_form
    [ "$CONF_FORM" = server ] || { echo "h2c needs the board_api.server form" >&2; exit 1; }
    py=$H2_PYTHON; client=(--h2c); server="    h2c: true"
  fi
  start_service "live$N-$CUR_PROTO-$RUN" "$LIVE" "$server"
  port=$SVC_PORT; pid=$SVC_PID
  q=$(share_q "$SMALL" "bench")
  # One stream: the board loaded, its poller running.
  "$py" "$ROOT/benches/support/sse_crowd.py" "${client[@]}" --port "$port" --query "$q" --streams 1 --timeout 600 > "$TMP/one$N-$RUN.out" 2>&1 &
  one=$!; PIDS+=("$one")
  wait_line "$TMP/one$N-$RUN.out" ready 30 >/dev/null
  sleep 1
  rss1=$(rss_kb "$pid")
  "$py" "$ROOT/benches/support/sse_crowd.py" "${client[@]}" --port "$port" --query "$q" --streams "$N" --timeout 600 > "$TMP/crowd$N-$RUN.out" 2>"$TMP/crowd$N-$RUN.err" &
  crowd=$!; PIDS+=("$crowd")
  ready=$(wait_line "$TMP/crowd$N-$RUN.out" ready 180)
  [ "$(json "$ready" ready)" = "$N" ] || { echo "only $ready" >&2; cat "$TMP/crowd$N-$RUN.err" >&2; exit 1; }
  conns=$(json "$ready" connections)
  sleep 2
  rssN=$(rss_kb "$pid")
  t0=$(cpu_ticks "$pid"); sleep 30; t1=$(cpu_ticks "$pid")
  cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f %% of a core", (b-a)/hz/30*100}')
  edited=$(date +%s.%N)
  edit_small
  change=$(wait_line "$TMP/crowd$N-$RUN.out" '"change": 1' $((EVERY * 3 + 30)))
  got=$(json "$change" streams)
  [ "$got" = "$N" ] || echo "only $got of $N streams got the change" >&2
  first=$(json "$change" first); last=$(json "$change" last)
  PER=$(awk -v a="$rss1" -v b="$rssN" -v n="$N" 'BEGIN{printf "%.1f", (b-a)/(n)}')
  fan=$(awk -v a="$first" -v b="$last" 'BEGIN{printf "%.0f ms", (b-a)*1000}')
  tot=$(awk -v a="$edited" -v b="$last" 'BEGIN{printf "%.1f s", b-a}')
  printf '| %s%s | %s, %s connections | %s MiB | %s MiB | %s KiB | %s | %s | %s |\n' "$LABEL" "$N" "$CUR_PROTO" "$conns" \
    "$(awk -v k="$rss1" 'BEGIN{printf "%.1f", k/1024}')" "$(awk -v k="$rssN" 'BEGIN{printf "%.1f", k/1024}')" \
    "$PER" "$cpu" "$fan" "$tot"
  kill "$crowd" "$one" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# idle_row N: one node of $BIN with N idle keep-alive connections; prints
# the line and sets PER (KiB per connection).
idle_row() {
  local N=$1 pid rss1 rssN idle
  start_service "idle$N-$RUN" "$LIVE"
  pid=$SVC_PID
  sleep 1
  rss1=$(rss_kb "$pid")
  python3 "$ROOT/benches/support/idle_conns.py" "$SVC_PORT" "$N" > "$TMP/idle$N-$RUN.out" 2>&1 &
  idle=$!; PIDS+=("$idle")
  wait_line "$TMP/idle$N-$RUN.out" "ready $N" 180 >/dev/null
  sleep 2
  rssN=$(rss_kb "$pid")
  PER=$(awk -v a="$rss1" -v b="$rssN" -v n="$N" 'BEGIN{printf "%.1f", (b-a)/n}')
  printf '%s%s connections: RSS %.1f MiB -> %.1f MiB, %s KiB per connection\n' "$LABEL" "$N" \
    "$(awk -v k="$rss1" 'BEGIN{print k/1024}')" "$(awk -v k="$rssN" 'BEGIN{print k/1024}')" "$PER"
  kill "$idle" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# With BEFORE, each measure runs on both binaries, in turn, ROUNDS times;
# streams also on each protocol of PROTO, in turn.
NOW_BIN=$BIN
BINS=(now); [ -n "${BEFORE:-}" ] && BINS=(before now)
ROUNDS=${ROUNDS:-1}
RUN=0
declare -A PERS
CUR_PROTO=h1
measure() {
  local what=$1 N=$2 r b p protos=(h1)
  [ "$what" = streams ] && protos=("${PROTOS[@]}")
  for r in $(seq "$ROUNDS"); do
    for b in "${BINS[@]}"; do
      for p in "${protos[@]}"; do
        RUN=$((RUN + 1))
        CUR_PROTO=$p
        if [ "$b" = before ]; then BIN=$BEFORE; else BIN=$NOW_BIN; fi
        LABEL=; [ -n "${BEFORE:-}" ] && LABEL="$b, "
        "${what}_row" "$N"
        PERS[$what,$N,$b,$p]+="$PER "
      done
    done
  done
  BIN=$NOW_BIN; CUR_PROTO=h1
}
# compare WHAT N: the medians of both binaries and their ratio.
compare() {
  local b m=() i p=${3:-h1}
  [ -n "${BEFORE:-}" ] || return 0
  for b in before now; do m+=("$(printf '%s\n' ${PERS[$1,$2,$b,$p]} | median)"); done
  printf '%s %s%s: median per %s %s KiB before, %s KiB now (%s); now/before %s\n' "$1" "$2" \
    "$([ "$p" = h1 ] || echo " over $p")" \
    "$([ "$1" = streams ] && echo stream || echo connection)" "${m[0]}" "${m[1]}" \
    "$ROUNDS round(s)" "$(awk -v a="${m[0]}" -v b="${m[1]}" 'BEGIN{printf "%.2f", b/a}')"
}

# per_protocol N: each protocol's median per stream (this binary), side by side.
per_protocol() {
  local p out=()
  for p in "${PROTOS[@]}"; do
    out+=("$p $(printf '%s\n' ${PERS[streams,$1,now,$p]} | median) KiB")
  done
  printf 'streams %s: median per stream over %s round(s): %s\n' "$1" "$ROUNDS" "$(IFS=,; echo "${out[*]}" | sed 's/,/, /g')"
}

if [[ $SECTIONS == *" streams "* ]]; then
echo "## idle streams on one node (every: ${EVERY}s, threads: 2)"
printf '| streams | protocol | RSS with 1 | RSS with N | per stream | CPU over 30 s idle | first to last event | edit to last event |\n|---:|---|---:|---:|---:|---:|---:|---:|\n'
for N in "${COUNTS[@]}"; do measure streams "$N"; done
for N in "${COUNTS[@]}"; do per_protocol "$N"; done
for N in "${COUNTS[@]}"; do for p in "${PROTOS[@]}"; do compare streams "$N" "$p"; done; done
fi

if [[ $SECTIONS == *" idle "* ]]; then
echo
echo "## baseline: idle keep-alive connections on one node (one 400 answered on each)"
for N in "${COUNTS[@]}"; do measure idle "$N"; done
for N in "${COUNTS[@]}"; do compare idle "$N"; done
fi
[[ $SECTIONS == *" redis "* ]] || exit 0
echo
echo "## Redis per followed link (one node with the fleet tier, B=100 links, one stream each)"
start_redis
rc() { redis-cli -p "$REDIS_PORT" "$@"; }
SBAPI_FLEET_KEY=$(head -c 48 /dev/urandom | base64 | tr -d '\n'); export SBAPI_FLEET_KEY
before=$(rc info memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r')
start_service fleet1 "  cache:
    shared:
      url: redis://127.0.0.1:$REDIS_PORT/0
      secret_env: SBAPI_FLEET_KEY
      timeout_ms: 1000
$LIVE"
B=100
for i in $(seq $B); do echo "$(share_q "$SMALL" "link$i")"; done > "$TMP/queries"
python3 "$ROOT/benches/support/sse_crowd.py" --port "$SVC_PORT" --queries-file "$TMP/queries" --streams $B --parallel 4 --timeout 600 > "$TMP/links.out" 2>&1 &
PIDS+=($!)
wait_line "$TMP/links.out" ready 60 >/dev/null
edit_small
wait_line "$TMP/links.out" '"change": 1' $((EVERY * 3 + 30)) >/dev/null
leases=$(rc --scan --pattern '*:live:lease' | wc -l)
versions=$(rc --scan --pattern '*:live:version' | wc -l)
sum_usage() { local k t=0; while read -r k; do t=$((t + $(rc memory usage "$k"))); done; echo "$t"; }
live_bytes=$( (rc --scan --pattern '*:live:lease'; rc --scan --pattern '*:live:version') | sum_usage)
doc_bytes=$(rc --scan --pattern '*:doc:full' | sum_usage)
after=$(rc info memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r')
echo "leases $leases, last versions $versions, for $B links followed"
echo "live keys: $((live_bytes / B)) B per link (MEMORY USAGE of the lease and the last version)"
echo "shared document of the small board: $((doc_bytes / B)) B per link"
echo "used_memory: $before before, $after after: $(((after - before) / B)) B per link (everything: documents, kept versions' absence, client buffers)"
