"""Builds the Debian benchmark corpora, `small.txt` (~21 MB) and `large.txt` (~475 MB).

The training and encoding figures of the README and docs/performance.md are measured on these
two files. Their text is real and varied: dictionaries (GCIDE, WordNet, FOLDOC, FreeDict in
many languages), fortune cookies, bibles, commentaries and lexicons (SWORD modules), man pages
in fifteen languages, package documentation (HTML pages as text, reStructuredText, POD,
changelogs) and Unicode's emoji test data. Documents are separated by `<|endoftext|>` lines.

    sudo python3 benchmarks/make_corpus.py OUTDIR [--work DIR] [--small-mb 20] [--skip-apt-update]

writes OUTDIR/large.txt, OUTDIR/small.txt and OUTDIR/manifest.json (documents and MiB per
source) and prints the size and number of documents of both corpora; `--pretokens` adds their
distinct GPT-2 pretokens (needs the `regex` package).

1. apt-get installs the tools extraction runs (man-db, groff-base, bsdextrautils for `col`,
   libsword-utils for `mod2imp`), downloads the 95 text packages (~390 MB) into WORK/debs and
   unpacks them with `dpkg-deb -x` into WORK/root: they are not installed, so nothing else
   comes with them. The tables are in `corpus/sources.py`.
2. Each source becomes a list of documents, cached in WORK/docs/<source>.bin (delete one to
   extract that source again): dictionary entries in pages of ~6,000 characters, a fortune
   cookie each, a chapter of a bible, a man page rendered by `man | col -bx`, a file, an
   HTML page as text.
3. A document seen in an earlier source (same bytes) is dropped; a source over its cap keeps
   every k-th document, in order. large.txt holds every kept document in a seeded shuffle;
   small.txt is a seeded random sample of those, so both mix the sources alike.

WORK (default OUTDIR/.work, ~3 GB) is reused by later runs. On two cores a first run takes
~15 minutes: under a minute to download and unpack, half of the rest rendering ~7,000 man pages.
With WORK/docs filled it takes ~15 s; `--pretokens` adds ~1.5 minutes. Needs: Debian 12
(bookworm) with its package mirrors, root for apt-get (a run with `--skip-apt-update` that finds
the tools and packages in place needs none), and Python 3.10+ with its standard library. The
same packages, tools and Python minor version give the same bytes. The published figures come
from corpora built with Python 3.11; `html.parser` and Unicode's whitespace can change between
Python releases, and a newer package release changes its text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus.assemble import MIB, collect, corpora, write_corpus
from corpus.packages import fetch_packages
from corpus.text import EOT

GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def report(path: str, n_docs: int, pretokens: bool) -> None:
    size = os.path.getsize(path)
    print(f"{path}: {size / MIB:.1f} MiB ({size} bytes), {n_docs} documents", flush=True)
    if pretokens:
        import regex

        pattern = regex.compile(GPT2_PAT)
        distinct: set[str] = set()
        with open(path, encoding="utf-8") as f:
            for piece in f.read().split(EOT):  # the text between separators, as trainers see it
                distinct.update(pattern.findall(piece))
        print(f"  {len(distinct)} distinct GPT-2 pretokens", flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", help="where large.txt, small.txt and manifest.json go")
    ap.add_argument(
        "--work", help="downloads, unpacked packages, extracted sources (default OUTDIR/.work)"
    )
    ap.add_argument("--small-mb", type=float, default=20, help="size of small.txt, MiB")
    ap.add_argument("--skip-apt-update", action="store_true", help="no apt-get update first")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="converting processes")
    ap.add_argument("--pretokens", action="store_true", help="count distinct GPT-2 pretokens")
    args = ap.parse_args(argv)
    if args.pretokens:
        try:
            import regex  # noqa: F401
        except ImportError:
            ap.error("--pretokens needs the regex package (pip install regex)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = os.path.abspath(args.outdir)
    work = os.path.abspath(args.work or os.path.join(out, ".work"))
    start = time.monotonic()
    fetch_packages(work, update=not args.skip_apt_update)
    os.makedirs(os.path.join(work, "docs"), exist_ok=True)
    os.makedirs(out, exist_ok=True)
    print(f"extracting documents (each source cached in {work}/docs) ...", flush=True)
    docs, manifest = collect(os.path.join(work, "root"), work, max(1, args.jobs))
    large, small = corpora(docs, args.small_mb)
    write_corpus(os.path.join(out, "large.txt"), large)
    write_corpus(os.path.join(out, "small.txt"), small)
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    print(f"built in {time.monotonic() - start:.0f} s")
    for name, part in (("small.txt", small), ("large.txt", large)):
        report(os.path.join(out, name), len(part), args.pretokens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
