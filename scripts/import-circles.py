#!/usr/bin/env python3
"""Import circles of the root crate, file by file.

Reads every `.rs` file below `src/`, resolves each `crate::…` path it names (in `use`
items and in expressions) to the file that defines it, and finds the strongly connected
components of that graph (Tarjan). Prints each circle that spans more than one top-level
module (`src/X.rs` or `src/X/`), with its size, its modules and the edges between
different modules that hold it together; `--all` prints circles inside one module too.

Relative paths count too (`super::…`, `self::…`, and a child module named by a `use` such
as `pub use check::check` in a `mod.rs`, or by a path in code such as `mcp_serve::run(…)`): a circle may leave a module through `crate::` and
come back through them. Test modules (`#[cfg(test)]` to the end of a file, `*_tests.rs`,
`tests.rs`) are left out: a test may reach anywhere.

Exit status: 0 when no circle spans more than one top-level module, 1 otherwise.

    python3 scripts/import-circles.py            # the circles across modules
    python3 scripts/import-circles.py --edges 40 # show more of the edges that hold them
"""

import argparse
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "src")

SEG = r"(?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*"
PATH = re.compile(r"\b(crate|super|self)::(" + r"(?:super::)*" + SEG + ")")
BARE = re.compile(r"(?<![A-Za-z0-9_:])(" + SEG + r")::")
USE_ITEM = re.compile(r"\buse\s+([^;]*);", re.S)
LINE_COMMENT = re.compile(r"//[^\n]*")


def module_files():
    """Module path (tuple of names) -> file, for every non-test file of the crate."""
    files = {}
    for dirpath, _, names in os.walk(SRC):
        for name in names:
            if not name.endswith(".rs"):
                continue
            if name == "tests.rs" or name.endswith("_tests.rs"):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, SRC)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            files[tuple(rel)] = full
    return files


def code_of(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    cut = text.find("#[cfg(test)]")
    if cut >= 0:
        text = text[:cut]
    return LINE_COMMENT.sub("", text)


def expand_group(body):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"] (approximately, enough for paths)."""
    body = re.sub(r"\s+", "", body)
    out = []

    def walk(prefix, s):
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        for part in parts:
            if not part:
                continue
            if "{" in part:
                head, rest = part.split("{", 1)
                walk(prefix + head, rest[: rest.rfind("}")])
            else:
                out.append(prefix + part.split(" as ")[0])

    walk("", body)
    return out


def resolve(names, files):
    """The file defining the longest module prefix of the absolute path `names`."""
    names = tuple(n for n in names if n and n not in ("self", "*"))
    for n in range(len(names), 0, -1):
        if names[:n] in files:
            return files[names[:n]]
    return None


def absolute(ref, here, files):
    """`ref` (`crate::a::b`, `super::x`, `self::y`, `child::z`) as an absolute module path
    seen from the module `here`; `None` for a path outside the crate."""
    parts = ref.split("::")
    if parts[0] == "crate":
        return tuple(parts[1:])
    # The module a relative path starts from: a `mod.rs` is its directory's module,
    # another file is a module of its own inside its directory's.
    base = list(here)
    if parts[0] == "self":
        return tuple(base + parts[1:])
    if parts[0] == "super":
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
        return tuple(base + parts)
    if tuple(base + parts[:1]) in files:
        return tuple(base + parts)
    return None


def tarjan(graph):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
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
            out.append(comp)

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def top(path):
    rel = os.path.relpath(path, SRC).split(os.sep)
    return rel[0][:-3] if rel[0].endswith(".rs") else rel[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="also circles inside one module")
    ap.add_argument("--edges", type=int, default=20, help="edges to show per circle")
    args = ap.parse_args()
    files = module_files()
    module_of = {f: m for m, f in files.items()}
    graph = defaultdict(set)
    names = defaultdict(set)
    for path in files.values():
        code = code_of(path)
        here = module_of[path]
        refs = {root + "::" + rest for root, rest in PATH.findall(code)}
        # A child module named by a bare path in code (`mcp_serve::run(…)` in `cli/mod.rs`).
        refs.update(m for m in BARE.findall(code) if here + (m.split("::")[0],) in files)
        for body in USE_ITEM.findall(code):
            refs.update(expand_group(body))
        for ref in refs:
            whole = absolute(ref, here, files)
            if whole is None:
                continue
            target = resolve(whole, files)
            if target and target != path:
                graph[path].add(target)
                names[(path, target)].add(ref.split("::")[-1])
        graph.setdefault(path, set())
    across = 0
    for comp in sorted(tarjan(graph), key=len, reverse=True):
        if len(comp) < 2:
            continue
        modules = sorted({top(f) for f in comp})
        if len(modules) < 2 and not args.all:
            continue
        if len(modules) > 1:
            across += 1
        members = set(comp)
        edges = sorted(
            (os.path.relpath(a, ROOT), os.path.relpath(b, ROOT), sorted(names[(a, b)]))
            for a in comp
            for b in graph[a]
            if b in members and top(a) != top(b)
        )
        print(f"circle of {len(comp)} files across {len(modules)} modules: {', '.join(modules)}")
        print(f"  {len(edges)} imports between different modules hold it:")
        for a, b, used in edges[: args.edges]:
            print(f"    {a} -> {b}: {', '.join(used)}")
        if len(edges) > args.edges:
            print(f"    … and {len(edges) - args.edges} more (--edges N)")
    print(f"{across} circle(s) span more than one top-level module")
    return 1 if across else 0


if __name__ == "__main__":
    sys.exit(main())
