"""The Rust core's modules as a graph, checked: no cycle among them, and no use of a module that
its stage must not know (the forbidden pairs below; docs/development.md draws the same layers).
`./run test` runs it. A `use` or path inside `#[cfg(test)]` does not count: tests may reach
anything. Python's import-linter has no Rust counterpart, hence this reader of `use` lines.

    python tools/rust_modules.py [--graph]   # exits 1 and names the cycle or the use

A module's use of its ancestors (`super::TrainError` in `train/heap.rs`) is not an edge: a
stage's entry file holds its errors and shared items, which its parts use. A name the ancestor
only re-exports from another module is followed to that module.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "rust" / "src"

#: (module, modules it must not use): prefixes, so "encode" covers "encode::merge". The stages,
#: top down: py, train, encode | counts_file, count, cuts, pretokenize | normalize,
#: unicode | tables, types | mem.
FORBIDDEN = [
    # Encoding is a stage of its own: training's merge loop and counting's tables stay out.
    ("encode", ["train", "count", "counts_file", "cuts", "py"]),
    # Below every stage: pretokenization serves counting, training and encoding alike.
    ("pretokenize", ["count", "counts_file", "cuts", "train", "encode", "py"]),
    ("train", ["py"]),
    ("count", ["train", "encode", "counts_file", "py"]),
    ("counts_file", ["train", "encode", "py"]),
    ("cuts", ["count", "counts_file", "train", "encode", "py"]),
    # The shared helpers at the bottom know no stage.
    ("types", ["pretokenize", "count", "counts_file", "cuts", "train", "encode", "py"]),
    ("mem", ["pretokenize", "count", "counts_file", "cuts", "train", "encode", "py"]),
    ("tables", ["pretokenize", "count", "counts_file", "cuts", "train", "encode", "py"]),
    ("unicode", ["count", "counts_file", "cuts", "train", "encode", "py"]),
    ("normalize", ["pretokenize", "count", "counts_file", "cuts", "train", "encode", "py"]),
]

_USE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)
_PATH = re.compile(r"\b((?:crate|super)(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)")
_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)


def module_of(path: Path) -> tuple[str, ...]:
    """`train/pairs.rs` → ("train", "pairs"); `lib.rs` → ()."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return () if parts == ("lib",) else tuple(parts)


def strip(code: str) -> str:
    """The code without comments, string literals and `#[cfg(test)]` items."""
    code = re.sub(r"//[^\n]*", "", code)
    code = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
    code = re.sub(r'r#*"(?:.|\n)*?"#*', '""', code)
    code = re.sub(r'"(?:\\.|[^"\\])*"', '""', code)
    code = re.sub(r"'(?:\\.|[^'\\])'", "' '", code)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        if m.start() < i:
            continue
        out.append(code[i : m.start()])
        i = _item_end(code, m.end())
    out.append(code[i:])
    return "".join(out)


def _item_end(code: str, i: int) -> int:
    """The end of the item starting at `i`: its `;`, or its block's closing brace."""
    while i < len(code) and code[i] not in ";{":
        i += 1
    if i == len(code) or code[i] == ";":
        return i + 1
    depth = 0
    while i < len(code):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        i += 1
        if depth == 0:
            return i
    return i


def expand(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` → ["a::b", "a::c::d", "a::c::e"] (spaces removed, `as` dropped)."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [tree]
    head, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(inner):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(inner[start:k])
            start = k + 1
    parts.append(inner[start:])
    return [path for p in parts if p for path in expand(head + p)]


class Graph:
    def __init__(self) -> None:
        self.files = {module_of(p): p for p in SRC.rglob("*.rs")}
        self.code = {m: strip(p.read_text(encoding="utf-8")) for m, p in self.files.items()}
        self.imports = {m: self._imported_names(m) for m in self.files}
        self.edges: dict[tuple[str, ...], set[tuple[str, ...]]] = {m: set() for m in self.files}
        for m in self.files:
            for path in self._paths(m):
                target = self.resolve(m, path)
                if target is not None and target != m and target != m[: len(target)]:
                    self.edges[m].add(target)

    def _paths(self, m: tuple[str, ...]) -> list[str]:
        code = self.code[m]
        paths = [p for tree in _USE.findall(code) for p in expand(tree)]
        rest = _USE.sub("", code)
        paths += [re.sub(r"\s+", "", p) for p in _PATH.findall(rest)]
        return paths

    def _imported_names(self, m: tuple[str, ...]) -> dict[str, str]:
        """Names a module takes in with `use` (name → the path it comes from)."""
        out = {}
        for tree in _USE.findall(self.code[m]):
            for path in expand(tree):
                name = path.rsplit("::", 1)[-1]
                if name not in ("*", "self"):
                    out[name] = path
        return out

    def resolve(self, m: tuple[str, ...], path: str, depth: int = 0) -> tuple[str, ...] | None:
        """The module a path in `m` reaches (the longest module prefix of it), following a name
        that an ancestor only re-exports."""
        parts = path.split("::")
        if parts[0] == "crate":
            base, rest = (), parts[1:]
        else:
            base = m
            while parts and parts[0] in ("super", "self"):
                if parts.pop(0) == "super":
                    base = base[:-1]
            rest = parts
        target = base
        for k, name in enumerate(rest):
            if (*target, name) in self.files:
                target = (*target, name)
                continue
            # `name` is an item of `target`: follow it if `target` only imported it.
            if depth < 8 and name in self.imports.get(target, {}) and k == len(rest) - 1:
                again = self.resolve(target, self.imports[target][name], depth + 1)
                if again is not None:
                    return again
            break
        return target

    def cycles(self) -> list[list[tuple[str, ...]]]:
        """Strongly connected components of more than one module (Tarjan's algorithm)."""
        index: dict[tuple[str, ...], int] = {}
        low: dict[tuple[str, ...], int] = {}
        stack: list[tuple[str, ...]] = []
        on: set[tuple[str, ...]] = set()
        out = []

        def visit(v: tuple[str, ...]) -> None:
            index[v] = low[v] = len(index)
            stack.append(v)
            on.add(v)
            for w in sorted(self.edges[v]):
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

        for v in sorted(self.files):
            if v not in index:
                visit(v)
        return out

    def forbidden(self) -> list[str]:
        out = []
        for m, targets in sorted(self.edges.items()):
            for stage, banned in FORBIDDEN:
                if m[:1] != (stage,):
                    continue
                for t in sorted(targets):
                    if t[:1] and t[0] in banned:
                        out.append(f"{name(m)} uses {name(t)}: {stage} must not use {t[0]}")
        return out


def name(m: tuple[str, ...]) -> str:
    return "::".join(("crate", *m))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", action="store_true", help="print every module's uses")
    args = parser.parse_args()
    graph = Graph()
    if args.graph:
        for m in sorted(graph.edges):
            print(f"{name(m)} -> {', '.join(name(t) for t in sorted(graph.edges[m]))}")
    errors = [
        "cycle: " + " <-> ".join(name(m) for m in comp) for comp in graph.cycles()
    ] + graph.forbidden()
    for e in errors:
        print(f"rust_modules: {e}", file=sys.stderr)
    if not errors:
        print(f"rust_modules: {len(graph.files)} modules, no cycle, no forbidden use")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
