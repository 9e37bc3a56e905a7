#!/usr/bin/env bash
# Resource governance: do cached responses keep flowing while cold
# loads saturate the service, and what does a burst of cold loads cost?
#
#   benches/governance.sh            (needs the release binary, nginx, wrk, curl, python3)
#
# Upstream: nginx on loopback serving a 7,000-card board (~5.3 MB raw, id
# 5BigBoard7000x) and a 26-card one (~20 KB, id 5SmallBoard20x); any
# permission id gets a token. The service runs with the default settings of
# the current code (only listen + provider set).
#   1. idle: wrk -t1 -c8 -d10s on /api/search for the small board (cached, fixed p)
#   2. the same while a flood runs: 8 connections of /api/detail for the big
#      board, a new permission id per request (every request a cache miss)
#   3. after the flood, 64 concurrent cold /api/detail (new ids), 60 s timeout each
# The whole run is bounded at ~3 minutes (watchdog).
source "$(dirname "$0")/lib_upstream.sh"
watchdog 175
DUR=${DUR:-10}
RUN=$RANDOM$$

gen_boards 7000 26
start_nginx
start_service gov
P=http://127.0.0.1:$SVC_PORT
echo "governance.sh: binary $BIN, config form board_api.$([ "$CONF_FORM" = server ] && echo server.listen || echo listen), upstream 127.0.0.1:$UP_PORT, service 127.0.0.1:$SVC_PORT"
echo "raw boards: big $(wc -c <"$BIG_FILE") bytes, small $(wc -c <"$SMALL_FILE") bytes"

SMALL_URL="$P/api/search?$(share_q "$SMALL" fixedperm)"
for _ in 1 2 3; do curl -s -o /dev/null "$SMALL_URL"; done
code=$(curl -s -o /dev/null -w '%{http_code}' "$SMALL_URL")
[ "$code" = 200 ] || { echo "small board search answered $code"; curl -s "$SMALL_URL" | head -c 400; exit 1; }

cat > "$TMP/flood.lua" <<LUA
-- Every request a new permission id: every request is a cold load.
local threads = {}
local counter = 0
local nthreads = 0
function setup(thread) nthreads = nthreads + 1; thread:set("tid", nthreads); table.insert(threads, thread) end
function init(args) counts = {} end
function request()
  counter = counter + 1
  local p = "flood${RUN}t" .. tid .. "n" .. counter
  return wrk.format("GET", "/api/detail?url=https%3A%2F%2Fapp.milanote.com%2F${BIG}%2Fb%3Fp%3D" .. p)
end
function response(status, headers, body)
  local k = tostring(status)
  counts[k] = (counts[k] or 0) + 1
end
function done(summary, latency, requests)
  local all = {}
  for _, t in ipairs(threads) do
    local c = t:get("counts")
    if c then for k, v in pairs(c) do all[k] = (all[k] or 0) + v end end
  end
  local parts = {}
  for k, v in pairs(all) do table.insert(parts, k .. "=" .. v) end
  table.sort(parts)
  io.write("FLOODSTATUS " .. table.concat(parts, " ") .. "\n")
  local e = summary.errors
  io.write(string.format("FLOODERRORS connect=%d read=%d write=%d timeout=%d status=%d\n", e.connect, e.read, e.write, e.timeout, e.status))
end
LUA

wrk_stats() { # file -> "req/s p50 p99 errors"
  awk '/Requests\/sec/{r=$2} $1=="50%"{p50=$2} $1=="99%"{p99=$2} /Socket errors/{err=$0} /Non-2xx/{n2=$NF}
       END{sub(/^ *Socket errors: */,"",err); if(err=="")err="none"; if(n2=="")n2=0; printf "%s|%s|%s|%s|%s\n", r, p50, p99, n2, err}' "$1"
}

echo "phase 1: idle, wrk -t1 -c8 -d${DUR}s on the cached small-board search"
wrk -t1 -c8 -d"${DUR}s" --timeout 10s --latency "$SMALL_URL" > "$TMP/idle.txt"
IFS='|' read -r idle_rps idle_p50 idle_p99 idle_n2 idle_err < <(wrk_stats "$TMP/idle.txt")

echo "phase 2: same, during a cold flood (8 connections, new permission id per request)"
cpu0=$(awk '{print $14+$15}' "/proc/$SVC_PID/stat")
wrk -t1 -c8 -d"${DUR}s" --timeout 60s -s "$TMP/flood.lua" "$P/" > "$TMP/flood.txt" 2>&1 &
flood_pid=$!; PIDS+=("$flood_pid")
wrk -t1 -c8 -d"${DUR}s" --timeout 10s --latency "$SMALL_URL" > "$TMP/busy.txt"
wait "$flood_pid" || true
IFS='|' read -r busy_rps busy_p50 busy_p99 busy_n2 busy_err < <(wrk_stats "$TMP/busy.txt")
flood_status=$(awk '/^FLOODSTATUS/{$1=""; print substr($0,2)}' "$TMP/flood.txt")
flood_errors=$(awk '/^FLOODERRORS/{$1=""; print substr($0,2)}' "$TMP/flood.txt")
flood_rps=$(awk '/Requests\/sec/{print $2}' "$TMP/flood.txt")
flood_lat=$(awk '/^ *Latency/{print $2" avg, max "$4}' "$TMP/flood.txt")
hwm_flood=$(awk '/VmHWM/{print $2}' "/proc/$SVC_PID/status")

# The service may keep working on the flood's cold loads after its clients
# left: wait (at most 30 s) until its CPU use drops below 5% of a core.
t_settle0=$(date +%s.%N)
prev=$(awk '{print $14+$15}' "/proc/$SVC_PID/stat")
settled=no
for _ in $(seq 60); do
  sleep 0.5
  now=$(awk '{print $14+$15}' "/proc/$SVC_PID/stat")
  # clock ticks (100/s) per 0.5 s; < 3 ticks is below ~6% of one core
  if [ $((now - prev)) -lt 3 ]; then settled=yes; break; fi
  prev=$now
done
settle=$(awk -v a="$t_settle0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
rss_before=$(awk '/VmRSS/{print $2}' "/proc/$SVC_PID/status")

echo "phase 3: 64 concurrent cold /api/detail for the big board (60 s timeout each)"
cat > "$TMP/burst.py" <<'PY'
import http.client, socket, sys, threading, time, collections
port, board, run, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
results = [None] * n
lat = [None] * n
start = threading.Barrier(n)
def one(i):
    path = "/api/detail?url=https%%3A%%2F%%2Fapp.milanote.com%%2F%s%%2Fb%%3Fp%%3Dburst%sx%d" % (board, run, i)
    try:
        start.wait(10)
    except threading.BrokenBarrierError:
        pass
    t = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        results[i] = str(r.status)
        c.close()
    except ConnectionResetError:
        results[i] = "reset"
    except (socket.timeout, TimeoutError):
        results[i] = "timeout"
    except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionAbortedError):
        results[i] = "reset"
    except Exception as e:  # noqa
        results[i] = "other:" + type(e).__name__
    lat[i] = time.monotonic() - t
t0 = time.monotonic()
ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in ts: t.start()
for t in ts: t.join(75)
wall = time.monotonic() - t0
c = collections.Counter(r or "unfinished" for r in results)
ok = sorted(l for l, r in zip(lat, results) if r == "200")
print("BURST wall=%.2f" % wall)
print("BURST counts=" + " ".join("%s=%d" % kv for kv in sorted(c.items())))
print("BURST ok_latency min=%s median=%s max=%s" % (
    "%.2f" % ok[0] if ok else "-", "%.2f" % ok[len(ok)//2] if ok else "-", "%.2f" % ok[-1] if ok else "-"))
PY
python3 "$TMP/burst.py" "$SVC_PORT" "$BIG" "$RUN" 64 > "$TMP/burst.txt"
burst_wall=$(awk -F= '/^BURST wall/{print $2}' "$TMP/burst.txt")
burst_counts=$(sed -n 's/^BURST counts=//p' "$TMP/burst.txt")
burst_lat=$(sed -n 's/^BURST ok_latency //p' "$TMP/burst.txt")
hwm=$(awk '/VmHWM/{print $2}' "/proc/$SVC_PID/status")
rss_after=$(awk '/VmRSS/{print $2}' "/proc/$SVC_PID/status")
sleep 5
rss_5s=$(awk '/VmRSS/{print $2}' "/proc/$SVC_PID/status")
alive=$(kill -0 "$SVC_PID" 2>/dev/null && echo yes || echo "NO (exited)")
mb() { awk -v k="$1" 'BEGIN{printf "%.0f MiB", k/1024}'; }

echo
echo "### governance.sh ($(date -u +%Y-%m-%d), $(nproc) cores)"
echo
echo "| cached small-board /api/search, wrk -t1 -c8 -d${DUR}s | req/s | p50 | p99 | non-2xx | socket errors |"
echo "|---|---:|---:|---:|---:|---|"
echo "| idle | $idle_rps | $idle_p50 | $idle_p99 | $idle_n2 | $idle_err |"
echo "| during cold flood | $busy_rps | $busy_p50 | $busy_p99 | $busy_n2 | $busy_err |"
echo
echo "| cold flood: 8 conns /api/detail big board, new p per request, ${DUR}s | |"
echo "|---|---|"
echo "| statuses | ${flood_status:-none} |"
echo "| wrk errors | ${flood_errors:-?} |"
echo "| req/s, latency | ${flood_rps:-?} req/s, ${flood_lat:-?} |"
echo "| CPU after the flood's clients left | busy for ${settle} s more (settled: $settled) |"
echo "| peak RSS (VmHWM) after the flood | $(mb "$hwm_flood") |"
echo
echo "| 64 concurrent cold /api/detail, big board | |"
echo "|---|---|"
echo "| statuses | $burst_counts |"
echo "| wall time | ${burst_wall} s |"
echo "| 200 latency | $burst_lat (s) |"
echo "| RSS before the burst | $(mb "$rss_before") |"
echo "| peak RSS (VmHWM) after the burst | $(mb "$hwm") |"
echo "| RSS right after / 5 s after the burst | $(mb "$rss_after") / $(mb "$rss_5s") |"
echo "| service alive at the end | $alive |"
echo
log_problems gov
