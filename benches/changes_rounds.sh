#!/usr/bin/env bash
# The two ratios issue-level goals of benches/changes.rs are stated in,
# measured in interleaved rounds (for a machine too noisy for one criterion
# run): each round runs every given bench binary once, in turn, and each
# ratio's two sides come from the same binary and round.
#
#   changes/tiptap-7000: compare (two versions of the 5.3 MB board) / normalize
#   changes/cached-s-big: a cached /api/changes / a cached /api/detail
#
#   benches/changes_rounds.sh [rounds=5] [bench binary ...]
#
# With no binary, the current tree's (cargo bench --bench changes --no-run).
# To compare two commits, build each, copy its target/release/deps/changes-*
# binary aside and pass both: the table has a column per binary.
set -euo pipefail
ROUNDS=${1:-5}
shift || true
cd "$(dirname "$0")/.."
. benches/rounds.sh
[ $# -gt 0 ] || set -- "$(bench_binary changes)"
FILTER='changes/(tiptap-7000/(normalize|compare)|cached-s-big/(detail|changes))$'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run_rounds "$ROUNDS" "$FILTER" 3 "$out" "$@"
python3 - "$out" "$@" <<'PY'
import statistics, sys, os
rows = [l.split() for l in open(sys.argv[1])]
bins = [os.path.basename(b) for b in sys.argv[2:]]
t = {}
for r, b, name, v in rows:
    t.setdefault((b, name), {})[r] = float(v)
def med(b, name):
    v = t.get((b, name), {})
    return statistics.median(v.values()) if v else float("nan")
def ratio(b, a, c):
    x, y = t.get((b, a), {}), t.get((b, c), {})
    rs = [x[r] / y[r] for r in x if r in y]
    return statistics.median(rs) if rs else float("nan")
names = ["changes/tiptap-7000/normalize", "changes/tiptap-7000/compare",
         "changes/cached-s-big/detail", "changes/cached-s-big/changes"]
print("| benchmark (median ms) | " + " | ".join(bins) + " |")
print("|---|" + "---:|" * len(bins))
for n in names:
    print(f"| {n} | " + " | ".join(f"{med(b, n):.6g}" for b in bins) + " |")
print(f"| compare / normalize (median of per-round ratios) | " +
      " | ".join(f"{ratio(b, names[1], names[0]):.3f}" for b in bins) + " |")
print(f"| cached changes / cached detail | " +
      " | ".join(f"{ratio(b, names[3], names[2]):.3f}" for b in bins) + " |")
PY
