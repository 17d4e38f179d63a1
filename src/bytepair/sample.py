"""A sample corpus that needs no download: the docstrings of the Python standard library's
modules, read from their source with `ast` (nothing is imported or executed). Real English
text, a few MB, the same on every install of one Python version. It only writes the file;
training on it is `train/`'s.
"""

from __future__ import annotations

import ast
import os
import sysconfig
from pathlib import Path

from ._atomic import write_atomic

SEPARATOR = "\n<|endoftext|>\n"


def stdlib_docstrings() -> list[str]:
    """Every module, class and function docstring of the standard library, in path order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    docs: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts or "test" in path.parts or "tests" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 40:
                    docs.append(doc)
    return docs


def write_sample_corpus(path: str | os.PathLike[str]) -> tuple[int, int]:
    """Writes the docstrings, separated by `<|endoftext|>`; returns (documents, bytes)."""
    docs = stdlib_docstrings()
    text = SEPARATOR.join(docs) + "\n"
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text)
    return len(docs), len(text.encode("utf-8"))
