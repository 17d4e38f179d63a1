"""The house's shape: the import contracts of pyproject.toml hold, the Rust modules form no cycle,
no import circle hides anywhere in the package, and no source file passes 600 lines; and each
checker fails when a circle is added (a copy of the sources, changed, in a temporary folder).
`./run test` also runs lint-imports and tools/rust_modules.py directly.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "bytepair"
RUST = ROOT / "rust" / "src"
#: Generated files, which the line limit does not cover.
GENERATED = {RUST / "tables.rs"}
MAX_LINES = 600

grimp = pytest.importorskip("grimp", reason="the import contracts need import-linter (test extra)")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports on the package under `root/src`, with the contracts of `root`."""
    lint = Path(sys.executable).parent / "lint-imports"
    return subprocess.run(
        [str(lint), str(root / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=root,
        env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


def _rust_modules(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / "tools" / "rust_modules.py")],
        capture_output=True,
        text=True,
        check=False,
    )


def _copy(tmp_path: Path) -> Path:
    """The sources, contracts and tools in a folder of their own, to be changed."""
    out = tmp_path / "repo"
    shutil.copytree(SRC, out / "src" / "bytepair", ignore=shutil.ignore_patterns("*.so"))
    shutil.copytree(RUST, out / "rust" / "src")
    shutil.copytree(ROOT / "tools", out / "tools")
    shutil.copy(ROOT / "pyproject.toml", out)
    return out


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_import_contracts_hold() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_no_import_circle_counting_every_import() -> None:
    """Imports under TYPE_CHECKING and inside functions count; a package's `__init__` importing
    its own modules is not a circle unless one of them imports it back."""
    graph = grimp.build_graph("bytepair")
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert _cycles(edges) == []


def test_the_rust_modules_form_no_cycle() -> None:
    result = _rust_modules(ROOT)
    assert result.returncode == 0, result.stderr


def test_no_source_file_passes_the_line_limit() -> None:
    files = [*SRC.rglob("*.py"), *RUST.rglob("*.rs")]
    long = {
        str(p.relative_to(ROOT)): n
        for p in files
        if p not in GENERATED
        for n in [len(p.read_text(encoding="utf-8").splitlines())]
        if n > MAX_LINES
    }
    assert long == {}, f"split these at a seam: {long}"


def test_an_import_circle_breaks_the_contracts(tmp_path: Path) -> None:
    """formats → encoding inside a function: the layers and formats' own contract both break."""
    root = _copy(tmp_path)
    common = root / "src" / "bytepair" / "formats" / "_common.py"
    common.write_text(
        common.read_text(encoding="utf-8")
        + "\n\ndef _circle() -> object:\n"
        + "    from ..encoding import Tokenizer\n\n"
        + "    return Tokenizer\n",
        encoding="utf-8",
    )
    result = _lint_imports(root)
    assert result.returncode != 0
    assert "bytepair.formats._common -> bytepair.encoding" in result.stdout
    assert "formats read and write model data, never a Tokenizer" in result.stdout
    assert "BROKEN" in result.stdout


def test_a_type_checking_import_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    shaping = root / "src" / "bytepair" / "train" / "shaping.py"
    text = shaping.read_text(encoding="utf-8")
    text = text.replace(
        "from dataclasses import dataclass\n",
        "from dataclasses import dataclass\nfrom typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from .plan import Plan\n",
        1,
    )
    shaping.write_text(text, encoding="utf-8")
    result = _lint_imports(root)
    assert result.returncode != 0
    assert "bytepair.train.shaping -> bytepair.train.plan" in result.stdout


def test_a_rust_cycle_and_a_forbidden_use_are_found(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    tokens = root / "rust" / "src" / "train" / "pairs.rs"
    tokens.write_text(
        tokens.read_text(encoding="utf-8").replace(
            "use super::words::Words;",
            "use super::token_pairs::token_pairs;\nuse super::words::Words;",
        ),
        encoding="utf-8",
    )
    merge = root / "rust" / "src" / "encode" / "merge.rs"
    merge.write_text(
        merge.read_text(encoding="utf-8").replace(
            "use crate::types::TokenId;", "use crate::train::Limits;\nuse crate::types::TokenId;", 1
        ),
        encoding="utf-8",
    )
    result = _rust_modules(root)
    assert result.returncode == 1
    assert "cycle: crate::train::pairs <-> crate::train::token_pairs" in result.stderr
    assert "crate::encode::merge uses crate::train: encode must not use train" in result.stderr


def test_a_use_inside_tests_is_not_a_dependency(tmp_path: Path) -> None:
    """encode/parts.rs's tests train a tokenizer: `#[cfg(test)]` code may use anything."""
    parts = (RUST / "encode" / "parts.rs").read_text(encoding="utf-8")
    assert "use crate::train::" in parts
    assert _rust_modules(ROOT).returncode == 0
