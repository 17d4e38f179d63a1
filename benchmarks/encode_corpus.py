"""Corpus encoding benchmark: a whole corpus into one uint16 token file (GPT-2 vocabulary,
documents separated by <|endoftext|>), by bytepair's `encode_files` and by its peers as people
use them: tiktoken the way nanoGPT's `prepare.py` does (`encode_ordinary_batch`, per-document
numpy arrays, one `np.concatenate`, `tofile`) and gigatoken's `encode_files` (one in-memory
array) written out. Each tool runs in a fresh process: MB/s over the whole job (reading to the
written file, tokenizer loading excluded), peak RSS, and RSS growth during the job. Every
output must be byte-identical to bytepair's (exit code 1 if not). No timing asserts.

  python benchmarks/encode_corpus.py [--corpus large.txt] [--mb N] [--threads 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
from common import (
    CORPUS_DIR,
    EOT,
    GPT2_MERGES,
    GPT2_VOCAB,
    MB,
    Timer,
    emit,
    peak_rss_mb,
    print_table,
    reset_peak_rss,
    rss_mb,
    run_child,
    thread_env,
)

EOT_ID = 50256
TOOLS = ("bytepair", "tiktoken", "gigatoken")


def _bytepair(corpus: str, out: str, threads: int):
    import bytepair

    tok = bytepair.Tokenizer.from_files(GPT2_VOCAB, GPT2_MERGES, special_tokens=[EOT])

    def run() -> int:
        return bytepair.encode_files(tok, corpus, out, num_threads=threads, progress=False).n_tokens

    return run


def _tiktoken(corpus: str, out: str, threads: int):
    """nanoGPT's prepare.py: encode_ordinary per document (batched), EOT between documents,
    each document an array, all concatenated, written with tofile."""
    import numpy as np
    import tiktoken

    enc = tiktoken.get_encoding("gpt2")

    def run() -> int:
        with open(corpus, encoding="utf-8", newline="") as f:
            docs = f.read().split(EOT)
        arrays = []
        for batch in common.batches(docs, 1024):
            for ids in enc.encode_ordinary_batch(batch, num_threads=threads):
                arrays += [np.array(ids, dtype=np.uint16), np.array([EOT_ID], dtype=np.uint16)]
        arr = np.concatenate(arrays[:-1])  # no EOT after the last document
        arr.tofile(out)
        return len(arr)

    return run


def _gigatoken(corpus: str, out: str, threads: int):
    """gigatoken's encode_files (documents split at EOT, all ids in memory), then EOTs put
    between documents and the array written."""
    import awkward as ak
    import gigatoken
    import numpy as np
    import tiktoken
    from common import gigatoken_tokenizer

    gt = gigatoken_tokenizer(tiktoken.get_encoding("gpt2"))

    def run() -> int:
        docs = gt.encode_files(
            gigatoken.TextFileSource([corpus], separator=EOT), parallel=threads > 1
        )
        flat = ak.flatten(docs).to_numpy().astype(np.uint16)
        ends = np.cumsum(ak.num(docs).to_numpy())[:-1]
        arr = np.insert(flat, ends, np.uint16(EOT_ID))
        with open(corpus, "rb") as f:  # it drops the empty document after a final EOT
            f.seek(max(0, os.path.getsize(corpus) - len(EOT)))
            if f.read() == EOT.encode():
                arr = np.append(arr, np.uint16(EOT_ID))
        arr.tofile(out)
        return len(arr)

    return run


def worker(tool: str, corpus: str, out: str, threads: int) -> None:
    """Child: set up the tool, then time the job and measure its memory."""
    run = {"bytepair": _bytepair, "tiktoken": _tiktoken, "gigatoken": _gigatoken}[tool](
        corpus, out, threads
    )
    before, setup_peak = rss_mb(), peak_rss_mb()
    hwm_ok = reset_peak_rss()
    with Timer() as t:
        n_tokens = run()
    peak = peak_rss_mb()
    emit(
        secs=t.s,
        others_pct=t.others_pct,
        n_tokens=n_tokens,
        rss_before=before,
        peak=max(peak, setup_peak),
        growth=peak - before if hwm_ok else None,
    )


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def _prefix(corpus: str, mb: float, folder: str) -> str:
    """The corpus cut at the first EOT past `mb` MB (the whole file if it is shorter)."""
    path = os.path.join(folder, f"first-{mb:g}MB.txt")
    with open(corpus, "rb") as f, open(path, "wb") as out:
        head = f.read(int(mb * MB))
        out.write(head + f.read(1 << 20).split(EOT.encode(), 1)[0] + EOT.encode())
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS_DIR / "large.txt"), type=common.corpus_path)
    ap.add_argument("--mb", type=float, default=None, help="only the first N MB")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset")
    ap.add_argument("--keep", help="keep the outputs in this folder")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        tool, corpus, out, threads = args.worker
        worker(tool, corpus, out, int(threads))
        return 0
    print(common.describe_env(), flush=True)
    folder = args.keep or tempfile.mkdtemp(prefix="encode_corpus-")
    os.makedirs(folder, exist_ok=True)
    corpus = _prefix(args.corpus, args.mb, folder) if args.mb else args.corpus
    size = os.path.getsize(corpus)
    print(f"{os.path.basename(corpus)}: {size / MB:.1f} MB, {args.threads} threads", flush=True)
    rows, hashes = [], {}
    for tool in args.tools.split(","):
        out = os.path.join(folder, f"{tool}.bin")
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            tool,
            corpus,
            out,
            str(args.threads),
        ]
        run = run_child(cmd, thread_env(args.threads), 7200)
        if run["rc"] != 0 or not run["results"]:
            err = (run["stderr"].strip().splitlines() or ["?"])[-1][:200]
            print(f"  {tool}: FAILED rc={run['rc']}: {err}", flush=True)
            continue
        r = run["results"][0]
        hashes[tool] = _sha256(out)
        if not args.keep:
            os.remove(out)
        rows.append(
            [
                tool,
                size / MB / r["secs"],
                r["secs"],
                r["peak"],
                r["growth"],
                r["n_tokens"],
                r["others_pct"],
            ]
        )
        print(f"  {tool}: {rows[-1][1]:.1f} MB/s, peak RSS {r['peak']:.0f} MB", flush=True)
    base = rows[0][1] if rows and rows[0][0] == "bytepair" else None
    for row in rows:
        row.insert(2, f"{base / row[1]:.2f}x slower" if base and row[0] != "bytepair" else "")
    print_table(
        [
            "tool",
            "MB/s",
            "vs bytepair",
            "time (s)",
            "peak RSS (MB)",
            "RSS growth (MB)",
            "tokens",
            "others %",
        ],
        rows,
        title=f"Corpus to uint16 token file, GPT-2 vocab, {os.path.basename(corpus)} "
        f"({size / MB:.1f} MB), {args.threads} threads; others % = share of the machine's CPU "
        "used by other processes meanwhile (noise)",
    )
    same = {tool: h == hashes.get("bytepair") for tool, h in hashes.items()}
    for tool, ok in same.items():
        if tool != "bytepair":
            print(f"{tool} file == bytepair file (byte for byte): {'yes' if ok else 'NO  <--'}")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
