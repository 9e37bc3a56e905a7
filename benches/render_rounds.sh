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
# binary aside, and pass both; a second table then gives each benchmark's
# median per binary and the median of its per-round ratios to the first.
# FILTER picks other benchmarks of the same binary, such as the whole
# pipeline (answer read, normalized, rendered) on that board:
#
#   FILTER='pipeline/tiptap-7000/fast/full$' benches/render_rounds.sh 3 BEFORE NOW
set -euo pipefail
ROUNDS=${1:-5}
shift || true
cd "$(dirname "$0")/.."
. benches/rounds.sh
[ $# -gt 0 ] || set -- "$(bench_binary pipeline)"
FILTER=${FILTER:-'render/tiptap-7000/(json|markdown)/(full|standard|compact)$'}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run_rounds "$ROUNDS" "$FILTER" 2 "$out" "$@"
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
if len(binaries) > 1:
    first = binaries[0]
    print()
    print(f"{'benchmark':<40} " + " ".join(f"{b[:20]:>20}" for b in binaries) + "   each / first, median of rounds")
    for name in sorted({r[2] for r in rows}):
        base = times.get((first, name), {})
        cells, ratios = [], []
        for b in binaries:
            t = times.get((b, name), {})
            cells.append(f"{statistics.median(t.values()):>17.2f} ms" if t else f"{'-':>20}")
            if b != first:
                per = [t[r] / base[r] for r in t if r in base]
                if per:
                    ratios.append(f"{statistics.median(per):.3f}")
        print(f"{name:<40} " + " ".join(cells) + "   " + " ".join(ratios))
EOF
