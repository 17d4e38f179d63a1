"""How many new words a batch call's threads merge: one thread against several, each with a
cache of its own, as `encode_batch_to_numpy` works, and against the same caches if every
thread's new words were copied to the others after each call. Counts only, no timing: a new
word is merged once per cache that meets it, and that count bounds what any exchange of merged
words between the threads could save.

    python benchmarks/thread_words.py code.txt large.txt multilingual.txt --mb 30

The batches are those of `encode.py`'s matrix: the first `--mb` MB in ~8 MB batches of
documents, after a warm-up call on the corpus's first ~1 MB. Each call is cut into runs as the
core cuts it (each a `2 x threads`-th of the size left, at least 64 K), and the threads take
the runs in turn (the core's threads take them from a queue, whoever is free first). The
caches' entry cap is not modelled: no cache reaches its share on 30 MB.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import BATCH_BYTES, MB, chunks_by_utf8, corpus_path, load_docs

MIN_RUN = 1 << 16  # the core's smallest run of a batch on several threads


Doc = tuple[int, list[str]]  # a document's size, and its pretokens that need a merge


def runs_of(batch: list[Doc], threads: int) -> list[list[Doc]]:
    """The batch's runs, as `rust/src/encode/batch.rs` cuts them (sizes in characters, as the
    Python bindings give them): one run on one thread."""
    if threads == 1:
        return [batch]
    left = sum(n for n, _ in batch)
    runs: list[list[Doc]] = []
    run: list[Doc] = []
    size = 0
    target = max(left // (2 * threads), MIN_RUN)
    for doc in batch:
        n = doc[0]
        run.append(doc)
        size += n
        if size >= target:
            runs.append(run)
            left -= size
            run, size = [], 0
            target = max(left // (2 * threads), MIN_RUN)
    return [*runs, run] if run else runs


def merges(calls: list[list[Doc]], threads: int, exchange: bool) -> int:
    """New words merged over `calls` (each a batch's documents), with a cache per thread;
    `exchange`: every thread's new words copied to the others after each call. The
    first call is the warm-up: it fills the caches, and its merges are not counted, as the
    matrix does not time it."""
    caches: list[set[str]] = [set() for _ in range(threads)]
    merged = 0
    for i, call in enumerate(calls):
        for k, run in enumerate(runs_of(call, threads)):
            cache = caches[k % threads]
            for _, words in run:
                for word in words:
                    if word not in cache:
                        cache.add(word)
                        merged += i > 0
        if exchange:
            every = set().union(*caches)
            caches = [set(every) for _ in range(threads)]
    return merged


def main() -> None:
    from bytepair.count import pretokenize

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="+", type=corpus_path, help="names in the corpus dir or paths")
    ap.add_argument("--mb", type=float, default=30, help="first N MB (document boundary)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pattern", default="gpt2", help="the pretokenizer: gpt2, cl100k or o200k")
    args = ap.parse_args()
    if args.threads < 2:
        ap.error("--threads must be 2 or more")

    def words(doc: str) -> list[str]:
        """The pretokens a merge is needed for: those of 2 bytes or more."""
        pieces = pretokenize(doc, pattern=args.pattern)
        return [p for p in pieces if len(p) > 1 or ord(p) > 0x7F]

    print(f"new words merged, {args.pattern} pretokens, {args.threads} threads against one")
    for path in args.corpus:
        warm = load_docs(path, 1_000_000)[0]
        docs = load_docs(path, int(args.mb * MB))[0]
        calls = [warm, *chunks_by_utf8(docs, BATCH_BYTES)]
        split = [[(len(d), words(d)) for d in call] for call in calls]
        one = merges(split, 1, False)
        own = merges(split, args.threads, False)
        shared = merges(split, args.threads, True)
        print(
            f"{Path(path).name}: 1 thread {one:,}; own caches {own:,} ({own / one:.2f}x); "
            f"exchanged after each call {shared:,} ({shared / one:.2f}x)"
        )


if __name__ == "__main__":
    main()
