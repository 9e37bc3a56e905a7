#!/usr/bin/env bash
# What building the tests costs, from clean: wall time, CPU time (user +
# sys, which a busy machine moves less than wall time), the number of test
# binaries and the size of the target directory afterwards. Each given
# commit is checked out into a temporary worktree and built into a target
# directory of its own, one after the other; both are deleted afterwards.
#
#   benches/test-build.sh <commit> [<commit> ...]
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'for d in "$work"/wt-*; do git worktree remove --force "$d" 2>/dev/null || true; done; rm -rf "$work"' EXIT
printf '| commit | wall | user+sys | test binaries | target/ |\n|---|---:|---:|---:|---:|\n' >"$work/table"
for commit in "$@"; do
    short=$(git rev-parse --short "$commit")
    git worktree add --quiet --detach "$work/wt-$short" "$commit"
    target="$work/target-$short"
    start=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$work/time-$short" \
        env CARGO_INCREMENTAL=0 CARGO_TARGET_DIR="$target" \
        cargo test --no-run --manifest-path "$work/wt-$short/Cargo.toml" >"$work/log-$short" 2>&1
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    cpu=$(awk '{print $1 + $2}' "$work/time-$short")
    bins=$(grep -c 'Executable tests/' "$work/log-$short" || true)
    [ "$bins" -gt 0 ] || bins=$(find "$target/debug/deps" -maxdepth 1 -type f -executable -newer "$work/time-$short" 2>/dev/null | wc -l)
    size=$(du -sh "$target" | cut -f1)
    printf '| %s | %.0f s | %.0f s | %s | %s |\n' "$short" "$wall" "$cpu" "$bins" "$size" >>"$work/table"
    rm -rf "$target"
done
cat "$work/table"
