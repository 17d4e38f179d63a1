"""From the sources' documents to the two corpora and the manifest."""

from __future__ import annotations

import os
import random

from .extract import extract
from .sources import SOURCES, Source
from .text import EOT, clean, unique

MIB = 1 << 20
SHUFFLE_SEED = 20240601  # the order of large.txt
SAMPLE_SEED = 7  # which of its documents small.txt takes


def source_docs(source: Source, root: str, work: str, jobs: int) -> list[str]:
    """The cleaned, non-empty documents of a source; kept in WORK/docs/<name>.bin (joined by
    NUL, which `clean` removes) and read from there on later runs."""
    cache = os.path.join(work, "docs", source.name + ".bin")
    if os.path.exists(cache):
        with open(cache, "rb") as f:
            data = f.read().decode("utf-8")
        return data.split("\x00") if data else []
    docs = [doc for doc in map(clean, extract(source, root, jobs)) if doc.strip()]
    with open(cache + ".tmp", "wb") as f:
        f.write("\x00".join(docs).encode("utf-8"))
    os.replace(cache + ".tmp", cache)
    return docs


def nbytes(docs: list[str]) -> int:
    return sum(len(doc.encode()) for doc in docs)


def cap(docs: list[str], cap_mb: float | None) -> list[str]:
    """`docs` if they fit in `cap_mb` MiB (or there is no cap), else every k-th of them, in
    order, k = size / cap (not a whole number), so that about `cap_mb` MiB remain."""
    total = nbytes(docs)
    if cap_mb is None or total <= cap_mb * MIB:
        return docs
    step = total / (cap_mb * MIB)
    kept, next_at = [], 0.0
    for i, doc in enumerate(docs):
        if i >= next_at:
            kept.append(doc)
            next_at += step
    return kept


def collect(root: str, work: str, jobs: int) -> tuple[list[str], list[dict]]:
    """The kept documents of every source, in source order, and one manifest row per source.
    A document already taken from an earlier source (same bytes) is not taken again."""
    kept: list[str] = []
    manifest = []
    seen: set[bytes] = set()
    for source in SOURCES:
        docs = unique(source_docs(source, root, work, jobs), seen)
        chosen = cap(docs, source.cap_mb)
        full, size = nbytes(docs), nbytes(chosen)
        manifest.append(
            {
                "source": source.name,
                "lang": source.lang,
                "docs": len(chosen),
                "mb": round(size / MIB, 2),
                "full_mb": round(full / MIB, 2),
                "cap_mb": source.cap_mb,
            }
        )
        capped = f" of {full / MIB:.2f} (cap {source.cap_mb})" if len(chosen) < len(docs) else ""
        print(f"  {source.name:24} {len(chosen):8} docs {size / MIB:8.2f} MiB{capped}", flush=True)
        kept += chosen
    return kept, manifest


def corpus_bytes(docs: list[str]) -> int:
    """The size of the file `write_corpus` makes of `docs`."""
    return sum(len(doc.encode()) + len(EOT) + 2 for doc in docs)


def write_corpus(path: str, docs: list[str]) -> None:
    """Each document, then the separator on a line of its own: `doc\\n<|endoftext|>\\n`."""
    with open(path + ".tmp", "w", encoding="utf-8", newline="\n") as f:
        for doc in docs:
            f.write(f"{doc}\n{EOT}\n")
    os.replace(path + ".tmp", path)


def corpora(docs: list[str], small_mb: float) -> tuple[list[str], list[str]]:
    """(large, small): large is all of `docs` in a seeded shuffle; small takes each document of
    large with probability small_mb MiB / large's size, so it mixes the sources alike."""
    large = list(docs)
    random.Random(SHUFFLE_SEED).shuffle(large)
    share = small_mb * MIB / corpus_bytes(large)
    draw = random.Random(SAMPLE_SEED).random
    return large, [doc for doc in large if draw() < share]
