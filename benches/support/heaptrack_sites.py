#!/usr/bin/env python3
"""What each allocation site holds at a heaptrack recording's peak, per
connection: for benches/live_heaptrack.sh.

    heaptrack_sites.py FILE.zst COUNT [TOP]

Reads `heaptrack_print --print-peaks` (backtraces not merged), keeps the
sites with at least 80 % of COUNT live allocations at the peak (one or more
per connection), and prints for each: bytes per allocation, allocations,
and the first frames that name the code (the allocator's own frames left
out). Then the sum per connection of the sites printed.
"""

import re
import subprocess
import sys

path, count = sys.argv[1], int(sys.argv[2])
top = sys.argv[3] if len(sys.argv) > 3 else "60"
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
rows = []
ours = re.compile(r"shared_board_api::(api::|host::seam|host::service)")
for block in blocks:
    lines = block.split("\n")
    m = re.match(r"([\d.]+)([KMG]?)B? peak memory consumed over (\d+) calls", lines[0].strip())
    if not m:
        continue
    size = float(m.group(1)) * unit[m.group(2)]
    calls = int(m.group(3))
    if calls < 0.8 * count:
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
    per = size / calls
    part = "request" if any(ours.search(f) for f in frames) else "connection"
    sums[part] += per
    rows.append((per, calls, part, " < ".join(f[:90] for f in frames[:3])))
for per, calls, part, where in sorted(rows, key=lambda r: -r[0] * r[1]):
    print(f"{per:8.0f} B x {calls:6d}  {part:10s}  {where}")
for part, total in sums.items():
    print(f"{part}: {total / 1024:.1f} KiB per connection (one allocation of each site above)")
