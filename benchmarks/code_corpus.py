"""Writes a code-heavy benchmark corpus: the Python sources and docs of installed packages.

Encoding speed is measured on code as well as on the Debian prose corpora. This collects
`.py`, `.pyi`, `.md`, `.rst` and `.txt` files from the given folders (default: this
interpreter's site-packages and standard library), in sorted order, each file one document,
joined by `<|endoftext|>`, until `--mb` megabytes; files that are not UTF-8 are skipped.

  python benchmarks/code_corpus.py [-o /work/cache/corpus/code.txt] [--mb 150] [DIR ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CORPUS_DIR, EOT, MB

SUFFIXES = {".py", ".pyi", ".md", ".rst", ".txt"}


def sources(roots: list[Path]):
    """(path, text) of every UTF-8 source or doc file under `roots`, sorted, no duplicates."""
    seen = set()
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES):
            real = path.resolve()
            if real in seen or not path.is_file():
                continue
            seen.add(real)
            try:
                text = path.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if text.strip() and EOT not in text:
                yield path, text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=str(CORPUS_DIR / "code.txt"))
    ap.add_argument("--mb", type=float, default=150)
    ap.add_argument("roots", nargs="*", type=Path)
    args = ap.parse_args(argv)
    roots = args.roots or [Path(sysconfig.get_paths()[k]) for k in ("purelib", "stdlib")]
    out, tmp = Path(args.output), Path(args.output + ".partial")
    total, files = 0, 0
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        for _, text in sources(roots):
            if files:
                f.write(EOT)
            f.write(text)
            total += len(text.encode())
            files += 1
            if total >= args.mb * MB:
                break
    os.replace(tmp, out)
    print(f"{out}: {files:,} files, {total / MB:.1f} MB from {', '.join(map(str, roots))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
