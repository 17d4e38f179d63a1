"""Superword training (SuperBPE) against regular training: time, peak RSS, bytes per token on
held-out text, and encoding speed, each run in a fresh process.

The corpus is cut by documents: the first 90% trains, the last 10% is held out (written once
to `superword/` beside the corpus). Held-out texts: that 10%; the code corpus
(`code_corpus.py`, its first 20 MB, not trained on); and the held-out documents that are at least
30% non-ASCII bytes (7.4 MB of the large corpus's: Russian, Chinese, Japanese, Arabic,
Korean, Greek, Hindi and others). T is 80% of the vocabulary size (`--at`; 25,600 at 32K).
Encoding: one thread, numpy out, a fresh tokenizer, the held-out text once.
The authors' trainer (their fork of HF tokenizers) is not run here: it is built from source and
its pretokenization differs (see docs/performance.md).

  python benchmarks/superword.py [--corpus large.txt] [--vocab-size 32000 128000] [--at 0.8]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (
    CORPUS_DIR,
    EOT,
    corpus_path,
    emit,
    peak_rss_mb,
    print_table,
    run_child,
    thread_env,
)


def split_corpus(path: str) -> dict[str, str]:
    """Paths of the training part, the held-out part, its non-ASCII documents, and code."""
    out = CORPUS_DIR / "superword" / os.path.basename(path).removesuffix(".txt")
    out.mkdir(parents=True, exist_ok=True)
    names = {k: str(out / f"{k}.txt") for k in ("train", "heldout", "multilingual")}
    if not all(os.path.exists(p) for p in names.values()):
        docs = open(path, encoding="utf-8").read().split(EOT)
        cut = len(docs) * 9 // 10
        heldout = docs[cut:]
        multi = [d for d in heldout if sum(b >= 0x80 for b in d.encode()) >= 0.3 * len(d.encode())]
        for name, part in (("train", docs[:cut]), ("heldout", heldout), ("multilingual", multi)):
            with open(names[name] + ".tmp", "w", encoding="utf-8") as f:
                f.write(EOT.join(part))
            os.replace(names[name] + ".tmp", names[name])
    code = CORPUS_DIR / "code.txt"
    if code.exists():
        names["code"] = str(code)
    return names


def worker(args: argparse.Namespace) -> None:
    """One training run (its time and the peak RSS so far, which is training's), then bytes per
    token and encoding speed on each --held-out text."""
    import bytepair
    from bytepair.train import train_with_report

    start = time.perf_counter()
    tok, report = train_with_report(
        args.train,
        args.vocab_size[0],
        [EOT],
        num_threads=args.threads,
        progress=False,
        superword_from=args.superword_from,
    )
    train_s = time.perf_counter() - start
    fields = {"train_s": train_s, "peak_mb": peak_rss_mb(), "stages": report.seconds}
    for name, path in args.held_out:
        data = open(path, "rb").read()[: 20 << 20]
        docs = data.decode("utf-8", errors="ignore").split(EOT)
        n_bytes = sum(len(d.encode()) for d in docs)
        fresh = bytepair.Tokenizer(tok.vocab, tok.merges, [EOT], pattern=tok.pattern)
        start = time.perf_counter()
        ids, _ = fresh.encode_batch_to_numpy(docs, num_threads=1)
        seconds = time.perf_counter() - start
        fields[name] = {"bytes_per_token": n_bytes / len(ids), "mb_s": n_bytes / seconds / 1e6}
    emit(**fields)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default="large.txt")
    p.add_argument("--vocab-size", type=int, nargs="+", default=[32000, 128000])
    p.add_argument("--at", type=float, default=0.8, help="T, as a share of the vocabulary size")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--train", help=argparse.SUPPRESS)
    p.add_argument("--superword-from", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--held-out", nargs=2, action="append", default=[], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    paths = split_corpus(corpus_path(args.corpus))
    held = [k for k in ("heldout", "code", "multilingual") if k in paths]
    rows, failed = [], False
    for vocab in args.vocab_size:
        for name, start in (("regular", None), ("superword", int(vocab * args.at))):
            cmd = [sys.executable, __file__, "--worker", "--train", paths["train"]]
            cmd += ["--vocab-size", str(vocab), "--threads", str(args.threads)]
            cmd += ["--superword-from", str(start)] if start is not None else []
            for k in held:
                cmd += ["--held-out", k, paths[k]]
            run = run_child(cmd, thread_env(args.threads), args.timeout)
            if run["rc"] != 0 or not run["results"]:
                print(run["stderr"][-2000:], file=sys.stderr)
                failed = True
                continue
            r = run["results"][0]
            rows.append(
                [vocab, name, start or "", r["train_s"], r["peak_mb"]]
                + [r[k]["bytes_per_token"] for k in held]
                + [r["heldout"]["mb_s"]]
            )
            print(f"{vocab} {name}: {r['stages']}", flush=True)
    headers = ["vocab", "training", "T", "train s", "peak RSS MB"]
    headers += [f"{k} B/tok" for k in held] + ["encode MB/s"]
    print_table(headers, rows, f"superword vs regular training on {args.corpus} (90% trains)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
