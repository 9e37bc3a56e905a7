#!/usr/bin/env bash
# CPU time and page faults per cold load, from the kernel's counters
# (`perf stat -e task-clock,page-faults` on the service process): what a
# cold load costs the machine, which a busy machine's wall clock hides.
#
#   benches/cold_cpu.sh [loads=8] [endpoint=detail] [rounds=3]
#   BEFORE=/path/to/older/shared-board-api benches/cold_cpu.sh   # both, interleaved by round
#
# Needs the release binary, nginx, curl, python3, perf. Each round starts
# each binary afresh, runs one unrecorded cold load, then counts `loads`
# sequential cold loads of the 7,000-card board (5.3 MB raw). Prints each
# round, then the medians of the per-load figures.
source "$(dirname "$0")/lib_upstream.sh"
LOADS=${1:-8}
EP=${2:-detail}
ROUNDS=${3:-3}
watchdog $(( 60 + ROUNDS * LOADS * 6 ))
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 1; }
RUN=$RANDOM$$
gen_boards 7000 26
start_nginx
NAMES=(now); BIN_now=$BIN
[ -z "${BEFORE:-}" ] || { NAMES=(before now); BIN_before=$BEFORE; }
echo "cold_cpu.sh: $LOADS cold /api/$EP per round, $ROUNDS rounds, ${NAMES[*]}"
for r in $(seq "$ROUNDS"); do
  for n in "${NAMES[@]}"; do
    bin_var=BIN_$n; BIN=${!bin_var}; CONF_FORM=
    start_service "$n$r"
    curl -s -o /dev/null --max-time 60 "http://127.0.0.1:$SVC_PORT/api/$EP?$(share_q "$BIG" "w$n$RUN$r")"
    perf stat -x, -e task-clock,page-faults -o "$TMP/stat" -p "$SVC_PID" &
    ps=$!; sleep 0.3
    for i in $(seq "$LOADS"); do
      curl -s -o /dev/null --max-time 60 "http://127.0.0.1:$SVC_PORT/api/$EP?$(share_q "$BIG" "c$n$RUN${r}x$i")"
    done
    kill -INT "$ps"; wait "$ps" || true
    kill "$SVC_PID"; wait "$SVC_PID" 2>/dev/null || true
    awk -F, -v n="$n" -v l="$LOADS" '$3=="task-clock"{cpu=$1} $3=="page-faults"{pf=$1} END{printf "%s %.2f %.0f\n", n, cpu/l, pf/l}' "$TMP/stat" | tee -a "$TMP/rounds.txt"
  done
done
echo
echo "| per cold /api/$EP (median of $ROUNDS rounds) | CPU ms | page faults |"
echo "|---|---:|---:|"
for n in "${NAMES[@]}"; do
  printf '| %s | %s | %s |\n' "$n" "$(awk -v n="$n" '$1==n{print $2}' "$TMP/rounds.txt" | median)" "$(awk -v n="$n" '$1==n{print $3}' "$TMP/rounds.txt" | median)"
done
