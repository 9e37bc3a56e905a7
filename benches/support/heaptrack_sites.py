#!/usr/bin/env python3
"""What each allocation site holds at a heaptrack recording's peak, per
connection: for benches/live_heaptrack.sh.

    heaptrack_sites.py FILE.zst COUNT [TOP] [MIN_CALLS]

Reads `heaptrack_print --print-peaks` (backtraces not merged), keeps the
sites with at least 80 % of COUNT live allocations at the peak (one or more
per connection), and prints for each: bytes per allocation, allocations,
and the first frames that name the code (the allocator's own frames left
out). Then the sum per connection of the sites printed.

With MIN_CALLS (HTTP/2: COUNT streams over fewer connections), sites with
the same first frames are merged first (a stream's allocation is recorded
at several addresses), and each site's bytes are divided by COUNT: bytes
per stream. The sites with at least 80 % of COUNT allocations (one per
stream) come first, with their sum; then those with at least MIN_CALLS
but fewer than one per stream (one per connection, spread over its
streams, and fixed allocations of the process that happen to be as many),
the largest ones.
"""

import re
import subprocess
import sys

path, count = sys.argv[1], int(sys.argv[2])
top = sys.argv[3] if len(sys.argv) > 3 else "60"
min_calls = int(sys.argv[4]) if len(sys.argv) > 4 else None
out = subprocess.run(
    ["heaptrack_print", "-f", path, "-m", "0", "-p", "1", "-a", "0", "-T", "0", "-n", top],
    capture_output=True,
    text=True,
    check=True,
).stdout
blocks = re.split(r"\n(?=\S[^\n]*peak memory consumed)", out)
plumbing = re.compile(
    r"alloc::|raw_vec|RawVec|__rust|__rdl|aligned_malloc|_RNv|core::|Vec\$LT|exchange_malloc"
    r"|boxed|^\s*in /|^\s*at |^and "
)
unit = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
sums = {"request": 0.0, "connection": 0.0}
rows = []  # bytes (per allocation, or per stream with MIN_CALLS), calls, part, frames
ours = re.compile(r"shared_board_api::(api::|host::seam|host::service)")
for block in blocks:
    lines = block.split("\n")
    m = re.match(r"([\d.]+)([KMG]?)B? peak memory consumed over (\d+) calls", lines[0].strip())
    if not m:
        continue
    size = float(m.group(1)) * unit[m.group(2)]
    calls = int(m.group(3))
    if calls < (0.8 * count if min_calls is None else min_calls):
        continue
    frames = [l.strip() for l in lines[1:] if l.strip() and not plumbing.search(l.strip())]
    frames = [
        re.sub(r"::h[0-9a-f]{16}$", "", f)
        .replace("$LT$", "<")
        .replace("$GT$", ">")
        .replace("$u7b$$u7b$closure$u7d$$u7d$", "{closure}")
        .replace("$u20$", " ")
        .replace("$C$", ",")
        .replace("..", "::")
        for f in frames
    ]
    per = size / calls if min_calls is None else size / count
    part = "request" if any(ours.search(f) for f in frames) else "connection"
    sums[part] += per
    # Merged on eight frames (MIN_CALLS), shown with three.
    rows.append((per, calls, part, tuple(f[:90] for f in frames[: 3 if min_calls is None else 8])))
if min_calls is None:
    for per, calls, part, where in sorted(rows, key=lambda r: -r[0] * r[1]):
        print(f"{per:8.0f} B x {calls:6d}  {part:10s}  {' < '.join(where)}")
    for part, total in sums.items():
        print(f"{part}: {total / 1024:.1f} KiB per connection (one allocation of each site above)")
else:
    merged = {}
    for per, calls, part, where in rows:
        m = merged.setdefault((part, where), [0.0, 0])
        m[0] += per
        m[1] += calls
    rows = sorted(((b, c, p, w) for (p, w), (b, c) in merged.items()), key=lambda r: -r[0])
    # Ours: a frame of the API or the host's seam or service; the rest is
    # Pingora's, h2's, tokio's (the connection and the request's plumbing).
    name = {"request": "ours", "connection": "pingora"}
    sums = {"request": 0.0, "connection": 0.0}
    print("sites with one allocation or more per stream, bytes per stream:")
    for per, calls, part, where in rows:
        if calls >= 0.8 * count and per >= 8:
            sums[part] += per
            print(f"{per:8.0f} B ({calls:6d} allocations)  {name[part]:8s}  {' < '.join(where[:3])}")
    for part, total in sums.items():
        print(f"{name[part]}: {total / 1024:.1f} KiB per stream (the sites above)")
    print("sites with fewer allocations (per connection, or fixed), bytes per stream, the largest:")
    rest = 0.0
    for per, calls, part, where in rows:
        if calls < 0.8 * count:
            rest += per
    for per, calls, part, where in [r for r in rows if r[1] < 0.8 * count][:12]:
        print(f"{per:8.0f} B ({calls:6d} allocations)  {name[part]:8s}  {' < '.join(where[:3])}")
    print(f"all of these: {rest / 1024:.1f} KiB per stream")
