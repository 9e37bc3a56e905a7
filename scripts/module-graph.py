#!/usr/bin/env python3
"""Prints which module of src/ uses which (from `use crate::` paths outside
test modules), then every import cycle, then `cycles: N`. Exits 1 on a cycle.

    python3 scripts/module-graph.py [--edges]

A node is a top-level module (src/<m>.rs or src/<m>/) or one of its direct
submodules (src/<m>/<s>.rs or src/<m>/<s>/); test code (`#[cfg(test)]` and
after, and files named tests.rs) does not count, nor do comments.
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
PATH = re.compile(r"crate::([a-z_][a-z0-9_]*)(?:::([a-z_][a-z0-9_]*))?")


def node(path):
    parts = os.path.relpath(path, SRC)[:-3].split(os.sep)
    if parts[-1] == "mod":
        parts.pop()
    return None if parts[0] in ("lib", "main") else "/".join(parts[:2])


files = [os.path.join(d, f) for d, _, fs in os.walk(SRC) for f in fs if f.endswith(".rs")]
nodes = {n for n in map(node, files) if n}
edges = {}
for f in files:
    here = node(f)
    if not here or os.path.basename(f) == "tests.rs":
        continue
    text = open(f, encoding="utf-8").read().split("#[cfg(test)]")[0]
    code = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))
    for top, sub in PATH.findall(code):
        there = f"{top}/{sub}" if f"{top}/{sub}" in nodes else top if top in nodes else None
        if there and there != here:
            edges.setdefault(here, set()).add(there)


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


top = {}
for a, ts in edges.items():
    for t in ts:
        x, y = a.split("/")[0], t.split("/")[0]
        if x != y:
            top.setdefault(x, set()).add(y)
if "--edges" in sys.argv:
    for a in sorted(top):
        print(f"{a} -> {', '.join(sorted(top[a]))}")
found = cycles(top) + [c for c in cycles(edges) if len({n.split('/')[0] for n in c}) == 1]
for c in found:
    print("cycle: " + " <-> ".join(c))
print(f"cycles: {len(found)}")
sys.exit(1 if found else 0)
