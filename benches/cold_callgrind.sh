#!/usr/bin/env bash
# Instructions per cold load, counted by callgrind over the whole service
# (every thread: the socket reads, the answer's reader, the build, the
# render and the response write), so two builds compare on a busy machine.
#
#   benches/cold_callgrind.sh [loads=3] [endpoint=detail]
#   BIN=/path/to/other/shared-board-api benches/cold_callgrind.sh
#
# Needs the release binary, valgrind, nginx, curl, python3. The service
# starts under callgrind (slowly: allow a minute), answers one unrecorded
# cold load of the 7,000-card board (5.3 MB raw), then its counters are
# zeroed and `loads` cold loads (a new permission id each) are counted.
# What callgrind cannot see: the kernel's side (page faults, socket copies).
source "$(dirname "$0")/lib_upstream.sh"
N=${1:-3}
EP=${2:-detail}
watchdog $(( 150 + N * 30 ))
command -v callgrind_control >/dev/null || { echo "needs valgrind" >&2; exit 1; }
gen_boards 7000 26
start_nginx
detect_conf_form
port=$(rand_port)
write_conf "$TMP/cg.yaml" "$CONF_FORM" "$port"
RUST_LOG=warn valgrind --tool=callgrind --dump-instr=no --callgrind-out-file="$TMP/cg.out" \
  "$BIN" -c "$TMP/cg.yaml" > "$TMP/cg.log" 2>&1 &
pid=$!
PIDS+=("$pid")
for _ in $(seq 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/search?url=x")" = 400 ] && break
  sleep 0.2
done
# A load keeps its version (the zstd seal) on the work pool after its
# answer: wait until the service's CPU time stops moving (at most one tick
# in a second) so that each counted load's seal is counted, and no seal of
# the warm-up load is.
settle() {
  local before after
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  for _ in $(seq 120); do
    sleep 1
    before=$after
    after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    [ $((after - before)) -le 1 ] && return 0
  done
  echo "the service did not settle" >&2
}
curl -s -o /dev/null --max-time 120 "http://127.0.0.1:$port/api/$EP?$(share_q "$BIG" "w$RANDOM$$")"
settle
callgrind_control -z "$pid" >/dev/null 2>&1
for i in $(seq "$N"); do
  code=$(curl -s -o /dev/null --max-time 120 -w '%{http_code}' "http://127.0.0.1:$port/api/$EP?$(share_q "$BIG" "c$RANDOM$$x$i")")
  [ "$code" = 200 ] || echo "load $i: HTTP $code" >&2
  settle
done
callgrind_control -d "$pid" >/dev/null 2>&1
sleep 1
out=$(ls -t "$TMP"/cg.out* | head -1)
total=$(grep -h '^summary:' "$out" | awk '{print $2}')
echo "$BIN: cold /api/$EP, $(( total / N )) instructions per load ($N loads)"
# Two parts of that count, per load. SHA-256 of the document (its version):
# valgrind offers the program no SHA extensions, so ring runs its AVX code
# here, while natively, on a CPU with them, it runs its SHA-NI loop (98
# instructions a 64-byte block). The kept version's seal (zstd): CPU work
# each new version costs, on the work pool after the answer.
sha=$(callgrind_annotate --auto=no --inclusive=no --threshold=100 "$out" 2>/dev/null |
  awk '/:[^ ]*sha256_block_data_order/ { gsub(",", "", $1); n += $1 } END { print n + 0 }')
seal=$(callgrind_annotate --auto=no --inclusive=yes --threshold=100 "$out" 2>/dev/null |
  awk '/:[^ ]*store::versions::codec::seal \[/ && !n { gsub(",", "", $1); n = $1 } END { print n + 0 }')
echo "  of which SHA-256 blocks $(( sha / N )) (under valgrind), the version's seal $(( seal / N ))"
