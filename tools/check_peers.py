"""Checks bytepair's exported files against the real peers on a whole corpus: for each pattern
preset, trains a tokenizer with bytepair, saves it, loads `tokenizer.json` with HF `tokenizers`
and `tokenizer.tiktoken` (+ sidecar) into a `tiktoken.Encoding`, and compares all three tools'
ids on every document of the check corpus (special tokens included, in 8 MB batches).

    .venv/bin/python tools/check_peers.py [--train small.txt] [--check large.txt] [--mb 0]

Prints one line per preset and batch summary; exits 1 on the first document that differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import bytepair

CORPUS = Path("/work/cache/corpus")
EOT = "<|endoftext|>"
BATCH_BYTES = 8 << 20


def batches(path: Path, limit: int):
    """Lists of documents (each keeps its `<|endoftext|>` separator) of about 8 MB."""
    batch: list[str] = []
    size = total = 0
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        for doc in f.read().split(EOT):
            batch.append(doc + EOT)
            size += len(doc)
            if size >= BATCH_BYTES:
                yield batch
                total += size
                batch, size = [], 0
                if limit and total >= limit:
                    return
    if batch:
        yield batch


def peers(directory: Path):
    import tiktoken
    import tokenizers
    from tiktoken.load import load_tiktoken_bpe

    hf = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
    sidecar = json.loads((directory / "tokenizer.tiktoken.json").read_text(encoding="utf-8"))
    ranks = load_tiktoken_bpe(str(directory / "tokenizer.tiktoken"))
    return hf, tiktoken.Encoding(mergeable_ranks=ranks, **sidecar)


def check(pattern: str, args: argparse.Namespace) -> bool:
    start = time.perf_counter()
    tok = bytepair.train(args.train, args.vocab_size, [EOT], pattern=pattern, progress=False)
    trained = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as d:
        tok.save(d)
        back = bytepair.load(Path(d) / "tokenizer.json")
        hf, enc = peers(Path(d))
    assert back.merges == tok.merges and back.vocab == tok.vocab and back.pattern == tok.pattern
    seconds = {"bytepair": 0.0, "hf": 0.0, "tiktoken": 0.0}
    n_docs = n_ids = n_bytes = 0
    for docs in batches(args.check, int(args.mb * 1e6)):
        t = time.perf_counter()
        ours = tok.encode_batch(docs, num_threads=args.threads)
        seconds["bytepair"] += time.perf_counter() - t
        t = time.perf_counter()
        theirs_hf = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
        seconds["hf"] += time.perf_counter() - t
        t = time.perf_counter()
        theirs_tt = enc.encode_batch(docs, num_threads=args.threads, allowed_special="all")
        seconds["tiktoken"] += time.perf_counter() - t
        for i, (a, b, c) in enumerate(zip(ours, theirs_hf, theirs_tt, strict=True)):
            if not a == b == c:
                print(
                    f"{pattern}: document {n_docs + i} differs (hf {a == b}, tiktoken {a == c}): "
                    f"{docs[i][:200]!r}"
                )
                return False
        n_docs += len(docs)
        n_ids += sum(map(len, ours))
        n_bytes += sum(len(d.encode("utf-8")) for d in docs)
    speeds = ", ".join(f"{k} {n_bytes / 1e6 / s:.1f} MB/s" for k, s in seconds.items())
    print(
        f"{pattern}: trained {tok.n_vocab} tokens in {trained:.1f} s; {n_docs:,} documents, "
        f"{n_bytes / 1e6:,.1f} MB, {n_ids:,} ids: identical in bytepair, HF tokenizers and "
        f"tiktoken ({speeds}; {args.threads} threads)",
        flush=True,
    )
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=Path, default=CORPUS / "small.txt")
    ap.add_argument("--check", type=Path, default=CORPUS / "large.txt")
    ap.add_argument("--vocab-size", type=int, default=10_000)
    ap.add_argument("--patterns", default="gpt2,cl100k,o200k")
    ap.add_argument("--mb", type=float, default=0, help="check only the first MB (0: all)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    ok = all([check(p, args) for p in args.patterns.split(",")])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
