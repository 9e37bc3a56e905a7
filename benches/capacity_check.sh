#!/usr/bin/env bash
# docs/capacity.md checked by a run at one hundredth of the scale: its
# example fleet (1,000 followed links, 10,000 browsers, 20 nodes, one Redis)
# becomes LINKS=10 followed links of the 26-card board and STREAMS=100 event
# streams on NODES=2 release binaries with the fleet tier on one
# redis-server (the nodes scaled further: every per-node figure is
# per node), `live.every` at its minimum of 10 s. Each figure the document
# derives is printed beside what the run measured:
#
#   - Milanote loads per interval per followed link (the upstream's access
#     log over WINDOW seconds of idle following): 1 for the fleet;
#   - Redis calls per second (INFO commandstats over the same window), and
#     what they are: one lease call per following node per link per
#     `every`, plus the holder's writes of the document;
#   - Redis memory per followed link: the live keys and the shared document
#     (MEMORY USAGE), and used_memory's growth, per link followed after the
#     first (the first link, followed before, pays the connections and the
#     subscription);
#   - pub/sub: messages published per new version (one edit of the board: a
#     new version of every link), messages each node received, their size;
#   - each change once on every stream, and the RSS per stream of each node.
#
#   benches/capacity_check.sh            (LINKS=10 STREAMS=100 NODES=2 WINDOW=60)
#
# Needs the release binary (cargo build --release --bin shared-board-api),
# nginx, redis-server, redis-cli, curl, python3. Only 127.0.0.1 is contacted.
source "$(dirname "$0")/lib_upstream.sh"
watchdog "${WATCHDOG:-400}"
LINKS=${LINKS:-10}
STREAMS=${STREAMS:-100}
NODES=${NODES:-2}
WINDOW=${WINDOW:-60}
EVERY=10
command -v redis-server >/dev/null || { echo "needs redis-server" >&2; exit 1; }
command -v redis-cli >/dev/null || { echo "needs redis-cli" >&2; exit 1; }
[ $((STREAMS % (LINKS * NODES))) -eq 0 ] && [ "$STREAMS" -gt $((LINKS * NODES)) ] || { echo "STREAMS must be a multiple of LINKS * NODES, and more" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"

# What docs/capacity.md states (its "Measured costs" and "A fleet"), the
# predictions this run checks.
DOC_LOADS_PER_INTERVAL=1      # per followed board, whatever the nodes and streams
DOC_LIVE_KEYS_B=528           # lease and last version, per followed link
DOC_DOC_B=4200                # the shared document of the 26-card board
DOC_MSG_B=144                 # an announcement
DOC_RSS_STREAM_KIB=39         # memory per open stream

UP_ACCESS_LOG=$TMP/upstream.log
gen_boards 7000 26
start_nginx
loads() { grep -c 'GET /api/boards' "$UP_ACCESS_LOG" || true; }

start_redis
rc() { redis-cli -p "$REDIS_PORT" "$@"; }
used_memory() { rc info memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r'; }
# The data alone: used_memory less the server's overhead (client buffers,
# which move by kilobytes with each call at this scale).
dataset() { rc info memory | awk -F: '/^used_memory_dataset:/ {print $2}' | tr -d '\r'; }
# commandstats: "name calls" per command, the script's own look-ups left out.
cmdstats() {
  rc info commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ {
    name = substr($1, 9)
    if (name ~ /^(info|memory|scan|psubscribe|ping|command|config)/) next
    print name, $3 }' | sort
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
SEED=7
edit_small() {
  SEED=$((SEED + 1))
  python3 "$ROOT/benches/gen_board.py" --cards 26 --board-id "$SMALL" --seed "$SEED" --out "$TMP/www/small.new" 2>/dev/null
  chmod 644 "$TMP/www/small.new"; mv "$TMP/www/small.new" "$SMALL_FILE"
}

SBAPI_FLEET_KEY=$(head -c 48 /dev/urandom | base64 | tr -d '\n'); export SBAPI_FLEET_KEY
CONF="  cache:
    shared:
      url: redis://127.0.0.1:$REDIS_PORT/0
      secret_env: SBAPI_FLEET_KEY
      timeout_ms: 1000
  live:
    every: $EVERY
    max_streams: 20000
    max_streams_per_client: 20000"
NODE_PORTS=(); NODE_PIDS=(); METRICS_PORTS=()
for n in $(seq "$NODES"); do
  mport=$(rand_port); while ! port_free "$mport"; do mport=$(rand_port); done
  start_service "node$n" "$CONF" "    metrics:
      listen: \"127.0.0.1:$mport\""
  NODE_PORTS+=("$SVC_PORT"); NODE_PIDS+=("$SVC_PID"); METRICS_PORTS+=("$mport")
done
# metric_sum REGEX: a metric's value summed over its series and the nodes.
metric_sum() {
  local p s=0
  for p in "${METRICS_PORTS[@]}"; do
    s=$((s + $(curl -s "http://127.0.0.1:$p/metrics" | awk -v re="$1" '$0 ~ re {s += $2} END {printf "%d", s}')))
  done
  echo "$s"
}
# Announcements the nodes received.
received() { metric_sum '^board_api_live_messages_total\\{.*result="received"'; }
port_args=(); for p in "${NODE_PORTS[@]}"; do port_args+=(--port "$p"); done

# Every announcement on the fleet's channel, one CSV line each.
rc --csv psubscribe '*live' > "$TMP/messages.csv" 2>&1 &
PIDS+=($!)

# open NAME QUERIES: streams of each line of QUERIES (line i on node
# i % NODES), waited for until each has its first event.
open_streams() {
  local n
  n=$(wc -l < "$2")
  python3 "$ROOT/benches/support/sse_crowd.py" "${port_args[@]}" --queries-file "$2" --streams "$n" --parallel 20 --timeout 900 > "$TMP/$1.out" 2>"$TMP/$1.err" &
  PIDS+=($!)
  ready=$(wait_line "$TMP/$1.out" ready 120)
  [ "$(json "$ready" ready)" = "$n" ] || { echo "$1: only $ready of $n" >&2; exit 1; }
}
node_rss() { local p; for p in "${NODE_PIDS[@]}"; do rss_kb "$p"; done; }
# 1. The first link, on each node: the tier's connections and each node's
#    subscription are open before Redis's baseline.
for n in $(seq "$NODES"); do share_q "$SMALL" "link1"; echo; done > "$TMP/first.q"
open_streams first "$TMP/first.q"
sleep 2
mem0=$(used_memory); data0=$(dataset)
# 2. The other links, on each node: every link followed (and its board
#    loaded and cached on every node) before the nodes' baseline.
for l in $(seq 2 "$LINKS"); do for n in $(seq "$NODES"); do share_q "$SMALL" "link$l"; echo; done; done > "$TMP/links.q"
open_streams links "$TMP/links.q"
sleep 2
mem_links=$(used_memory); data_links=$(dataset)
mapfile -t rss0 < <(node_rss)
# 3. The rest of the streams, spread over the links and the nodes.
REST=$((STREAMS - LINKS * NODES))
for i in $(seq 0 $((REST - 1))); do
  share_q "$SMALL" "link$(( (i / NODES) % LINKS + 1 ))"; echo
done > "$TMP/crowd.q"
open_streams crowd "$TMP/crowd.q"
sleep 2
mapfile -t rss1 < <(node_rss)

# Idle following: loads and Redis calls over WINDOW seconds, from the start
# of an interval's worth of settling.
sleep "$EVERY"
# MONITOR tells the nodes' calls from the commands their scripts run
# (`[0 lua]`), which commandstats counts alike.
rc monitor > "$TMP/monitor" 2>&1 &
MONITOR=$!; PIDS+=("$MONITOR")
sleep 1
loads0=$(loads); cmdstats > "$TMP/cmd0"; t0=$(date +%s.%N); mon0=$(wc -l < "$TMP/monitor")
sleep "$WINDOW"
loads1=$(loads); cmdstats > "$TMP/cmd1"; t1=$(date +%s.%N); mon1=$(wc -l < "$TMP/monitor")
kill "$MONITOR" 2>/dev/null || true
# The nodes' own calls in the window, by command (this script's INFO aside).
sed -n "$((mon0 + 1)),${mon1}p" "$TMP/monitor" | grep -v ' lua\]' \
  | awk '{c = toupper($4); gsub(/"/, "", c); if (c != "INFO" && c != "") n[c]++} END {for (k in n) print k, n[k]}' | sort > "$TMP/client_calls"
client_total=$(awk '{s += $2} END {print s + 0}' "$TMP/client_calls")
mem1=$(used_memory); data1=$(dataset)
leases=$(rc --scan --pattern '*:live:lease' | wc -l)

# One edit: a new version of every link.
msgs0=$(grep -c pmessage "$TMP/messages.csv" || true); recv0=$(received)
pub0=$(cmdstats | awk '$1 == "publish" {print $2}'); pub0=${pub0:-0}
edit_small
got=0; extra=0; ended=0
for part in first links crowd; do
  change=$(wait_line "$TMP/$part.out" '"change": 1' $((EVERY * 3 + 30)))
  got=$((got + $(json "$change" streams))); extra=$((extra + $(json "$change" extra)))
  ended=$((ended + $(json "$change" ended)))
done
sleep 2
msgs1=$(grep -c pmessage "$TMP/messages.csv" || true)
pub1=$(cmdstats | awk '$1 == "publish" {print $2}'); pub1=${pub1:-0}
msg_len=$(grep pmessage "$TMP/messages.csv" | tail -n $((msgs1 - msgs0)) | awk -F'","' '{gsub(/"$/, "", $4); n += length($4)} END {if (NR) printf "%.0f", n / NR; else print 0}')
recv1=$(received)
mem2=$(used_memory); data2=$(dataset)
# Every key, by kind (its tag left out): count and MEMORY USAGE.
for k in $(rc --scan); do echo "$k $(rc memory usage "$k")"; done \
  | sed -E 's/\{[^}]*\}/{tag}/' | awk '{n[$1]++; b[$1] += $2} END {for (k in n) print k, n[k], b[k]}' | sort > "$TMP/keys"
kind_b() { awk -v re="$1" '$1 ~ re {s += $3} END {print s + 0}' "$TMP/keys"; }
live_b=$(kind_b ':live:(lease|version)$')
doc_b=$(kind_b ':doc:full$'); docs=$(awk '$1 ~ /:doc:full$/ {print $2}' "$TMP/keys"); docs=${docs:-0}
versions=$(awk '$1 ~ /:live:version$/ {print $2}' "$TMP/keys"); versions=${versions:-0}

# The report.
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}')
intervals=$(awk -v s="$secs" -v e="$EVERY" 'BEGIN{printf "%.2f", s / e}')
calls=$(join -a1 -e0 -o 0,1.2,2.2 "$TMP/cmd1" "$TMP/cmd0" | awk '{d = $2 - $3; if (d > 0) printf "%s %d\n", $1, d}')
calls_total=$(echo "$calls" | awk '{s += $2} END {print s + 0}')
per_stream=()
for n in $(seq 0 $((NODES - 1))); do
  per_stream+=("$(awk -v a="${rss0[$n]}" -v b="${rss1[$n]}" -v s="$((REST / NODES))" 'BEGIN{printf "%.1f", (b - a) / s}')")
done
echo "## docs/capacity.md at 1/100: $LINKS followed links, $STREAMS streams, $NODES nodes, one Redis, every: ${EVERY}s"
echo "window: $secs s ($intervals intervals) of idle following; $leases leases held"
echo
printf '| figure | predicted | measured |\n|---|---:|---:|\n'
printf '| Milanote loads per interval per followed link | %s | %s (%s loads of the board in %s s, %s links) |\n' \
  "$DOC_LOADS_PER_INTERVAL" \
  "$(awk -v l=$((loads1 - loads0)) -v n="$LINKS" -v i="$intervals" 'BEGIN{printf "%.2f", l / n / i}')" \
  "$((loads1 - loads0))" "$secs" "$LINKS"
printf '| Redis calls per second, no new version (the nodes'"'"' calls, MONITOR) | %s ((%s nodes + 1 holder'"'"'s write) x %s links / %s s) | %s (%s calls in %s s) |\n' \
  "$(awk -v n="$NODES" -v l="$LINKS" -v e="$EVERY" 'BEGIN{printf "%.1f", (n + 1) * l / e}')" "$NODES" "$LINKS" "$EVERY" \
  "$(awk -v c="$client_total" -v s="$secs" 'BEGIN{printf "%.2f", c / s}')" "$client_total" "$secs"
printf '| lease calls (EVAL) per following node per link per interval | 1 | %s |\n' \
  "$(awk -v c="$(awk '$1 ~ /^EVAL/ {s += $2} END {print s + 0}' "$TMP/client_calls")" -v n="$NODES" -v l="$LINKS" -v i="$intervals" 'BEGIN{printf "%.2f", c / n / l / i}')"
printf '| document writes (SET) per link per interval | 1 | %s |\n' \
  "$(awk -v c="$(awk '$1 == "SET" {s += $2} END {print s + 0}' "$TMP/client_calls")" -v l="$LINKS" -v i="$intervals" 'BEGIN{printf "%.2f", c / l / i}')"
printf '| commands Redis ran per call, the scripts'"'"' included (commandstats) | about 3.3 | %s (%s in %s s) |\n' \
  "$(awk -v c="$calls_total" -v k="$client_total" 'BEGIN{printf "%.2f", (k > 0 ? c / k : 0)}')" "$calls_total" "$secs"
printf '| live keys per followed link (MEMORY USAGE, after the edit) | %s B | %s B (%s leases, %s last versions) |\n' "$DOC_LIVE_KEYS_B" "$((live_b / LINKS))" "$leases" "$versions"
printf '| shared document per followed link (MEMORY USAGE) | %s B | %s B (%s documents) |\n' "$DOC_DOC_B" "$((doc_b / (docs > 0 ? docs : 1)))" "$docs"
printf '| used_memory_dataset per followed link (links 2 to %s followed) | %s B (live keys + document) | %s B (just followed), %s B (after %s s), %s B (after the edit) |\n' \
  "$LINKS" "$((DOC_LIVE_KEYS_B + DOC_DOC_B))" "$(((data_links - data0) / (LINKS - 1)))" "$(((data1 - data0) / (LINKS - 1)))" "$secs" "$(((data2 - data0) / (LINKS - 1)))"
printf '| announcements published per new version | 1 | %s (%s published for %s new versions) |\n' \
  "$(awk -v p=$((pub1 - pub0)) -v l="$LINKS" 'BEGIN{printf "%.2f", p / l}')" "$((pub1 - pub0))" "$LINKS"
printf '| announcements on the channel per new version (a subscriber of its own) | 1 | %s (%s messages) |\n' \
  "$(awk -v m=$((msgs1 - msgs0)) -v l="$LINKS" 'BEGIN{printf "%.2f", m / l}')" "$((msgs1 - msgs0))"
printf '| announcements each node receives per new version | 1 | %s (%s received by %s nodes) |\n' \
  "$(awk -v m=$((recv1 - recv0)) -v l="$LINKS" -v n="$NODES" 'BEGIN{printf "%.2f", m / l / n}')" "$((recv1 - recv0))" "$NODES"
printf '| announcement size | about %s B | %s B |\n' "$DOC_MSG_B" "$msg_len"
printf '| streams that got the change once | %s | %s (extra events: %s; ended by an error event instead: %s) |\n' "$STREAMS" "$got" "$extra" "$ended"
printf '| versions not kept (the store'"'"'s queue full) | 0 | %s |\n' "$(metric_sum '^board_api_versions_not_kept_total')"
printf '| RSS per stream | %s KiB | %s KiB (median of the nodes: %s KiB, %s streams each added to %s) |\n' \
  "$DOC_RSS_STREAM_KIB" "$(printf '%s\n' "${per_stream[@]}" | median)" "${per_stream[*]}" "$((REST / NODES))" "$LINKS"
echo
echo "the nodes' Redis calls in the window, by command: $(tr '\n' ' ' < "$TMP/client_calls")"
echo "commands Redis ran in the window (commandstats, the scripts' included): $(echo "$calls" | tr '\n' ' ')"
echo "used_memory: $mem0 B with the first link followed, $mem_links B with $LINKS, $mem1 B after $secs s, $mem2 B after the edit (client buffers included)"
echo "Redis keys by kind (count, MEMORY USAGE in all):"
sed 's/^/  /' "$TMP/keys"
echo "error events the streams got: $(cat "$TMP"/first.err "$TMP"/links.err "$TMP"/crowd.err | grep -h '"error"' | sort | uniq -c | tr -s ' ' || true)"
for n in $(seq "$NODES"); do log_problems "node$n"; done
