# Sourced by benches/render_rounds.sh and benches/changes_rounds.sh: runs
# criterion bench binaries in interleaved rounds, for a machine too noisy
# for one criterion run, and appends one line per benchmark to a file:
# `<round> <binary> <benchmark> <median ms>`.
#
#   run_rounds ROUNDS FILTER MEASUREMENT_SECONDS OUT BINARY...
#   bench_binary NAME   (prints the current tree's benches/NAME.rs binary,
#                        built with cargo bench --no-run)
bench_binary() {
    cargo bench --bench "$1" --no-run 2>&1 | grep -o "[^ ()]*/deps/$1-[0-9a-f]*" | tail -1
}

run_rounds() {
    local rounds=$1 filter=$2 measure=$3 out=$4 round bin
    shift 4
    for round in $(seq "$rounds"); do
        for bin in "$@"; do
            "$bin" --bench "$filter" --warm-up-time 1 --measurement-time "$measure" 2>/dev/null |
                python3 -c '
import re, sys
name = None
for line in sys.stdin:
    m = re.match(r"^(\S+/\S+)", line)
    if m:
        name = m.group(1)
    t = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+)", line)
    if t and name:
        value = float(t.group(1)) * {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}[t.group(2)]
        print(sys.argv[1], sys.argv[2], name, value)
        name = None
' "$round" "$(basename "$bin")" >>"$out"
        done
        echo "round $round of $rounds done" >&2
    done
}
