#!/usr/bin/env bash
# The JSON and Markdown renders of the 7,000-card board (the `render/` group of
# benches/pipeline.rs) in interleaved rounds, for a machine too noisy for one
# criterion run: each round runs every given bench binary once, in turn, over
# the six renders (JSON and Markdown, three views), and the table gives each
# render's median over the rounds and the median of the per-round
# Markdown/JSON ratios (both renders of a ratio come from the same binary
# and round, seconds apart).
#
#   benches/render_rounds.sh [rounds=5] [bench binary ...]
#
# With no binary, the current tree's (cargo bench --bench pipeline --no-run).
# To compare two commits: build each, copy its target/release/deps/pipeline-*
# binary aside, and pass both.
set -euo pipefail
ROUNDS=${1:-5}
shift || true
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    bin=$(cargo bench --bench pipeline --no-run 2>&1 | grep -o '/[^ ()]*/deps/pipeline-[0-9a-f]*' | tail -1)
    set -- "$bin"
fi
FILTER='render/tiptap-7000/(json|markdown)/(full|standard|compact)$'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq "$ROUNDS"); do
    for bin in "$@"; do
        "$bin" --bench "$FILTER" --warm-up-time 1 --measurement-time 2 2>/dev/null |
            python3 -c '
import re, sys
name = None
for line in sys.stdin:
    m = re.match(r"^(render/\S+)", line)
    if m:
        name = m.group(1)
    t = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+)", line)
    if t and name:
        value = float(t.group(1)) * {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}[t.group(2)]
        print(sys.argv[1], sys.argv[2], name, value)
        name = None
' "$round" "$(basename "$bin")" >>"$out"
    done
    echo "round $round of $ROUNDS done" >&2
done
python3 - "$out" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
times = {}
for round_, binary, name, value in rows:
    times.setdefault((binary, name), {})[round_] = float(value)
binaries = sorted({r[1] for r in rows}, key=[r[1] for r in rows].index)
print(f"{'binary':<28} {'view':<9} {'JSON ms':>8} {'Markdown ms':>12} {'Markdown/JSON':>14}  (medians of {len({r[0] for r in rows})} rounds)")
for binary in binaries:
    for view in ("full", "standard", "compact"):
        json = times.get((binary, f"render/tiptap-7000/json/{view}"), {})
        md = times.get((binary, f"render/tiptap-7000/markdown/{view}"), {})
        ratios = [md[r] / json[r] for r in json if r in md]
        if not ratios:
            continue
        print(f"{binary:<28} {view:<9} {statistics.median(json.values()):>8.2f} "
              f"{statistics.median(md.values()):>12.2f} {statistics.median(ratios):>14.2f}"
              f"  per round {' '.join(f'{x:.2f}' for x in ratios)}")
EOF
