"""Training benchmark: bytepair vs HF tokenizers, rustbpe and the pure-Python reference.

Every tool trains in its own fresh child process (peak RSS = that child's ru_maxrss),
with RAYON_NUM_THREADS etc. set to --threads. All tools see `vocab_size` = 256 bytes
+ <|endoftext|> + merges. Prints one table; --json writes the rows. No timing asserts.

  python benchmarks/train.py [--corpus A.txt B.txt] [--vocab-size 10000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    CORPUS_DIR, EOT, GPT2_PAT, MB, PYREF_TRAIN, Timer, batches, bytepair_import_error,
    bytes_to_unicode, emit, iter_docs, peak_rss_mb, print_table, reset_peak_rss,
    run_child, thread_env,
)

TOOLS = ("bytepair", "hf", "rustbpe", "pyref")


def _save(path: str, merges=None, tokens=None) -> None:
    """Merges as hex pairs (or just the merged tokens when a tool exposes no pairs)."""
    if merges is not None:
        tokens = [a + b for a, b in merges]
    data = {"merges": None if merges is None else [[a.hex(), b.hex()] for a, b in merges],
            "tokens": [t.hex() for t in tokens]}
    with open(path, "w") as f:
        json.dump(data, f)


# ---------------------------------------------------------------- workers (child side)


def worker(tool: str, corpus: str, vocab_size: int, threads: int, out: str) -> None:
    if tool == "bytepair":
        import bytepair

        with Timer() as t:
            tok = bytepair.train([corpus], vocab_size, [EOT], num_threads=threads)
        _save(out, merges=list(tok.merges))
        emit(inner_s=t.s, merges=len(tok.merges))
    elif tool == "bytepair-stages":
        import bytepair

        reset_peak_rss()
        with Timer() as t_count:
            counts = bytepair.count_files([corpus], special_tokens=[EOT], num_threads=threads)
        emit(stage="count", inner_s=t_count.s, unique=len(counts), peak_rss_mb=peak_rss_mb())
        reset_peak_rss()
        with Timer() as t_merge:
            tok = bytepair.train_from_counts(counts, vocab_size, [EOT])
        _save(out, merges=list(tok.merges))
        emit(stage="merges", inner_s=t_merge.s, merges=len(tok.merges),
             peak_rss_mb=peak_rss_mb())
    elif tool == "hf":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(GPT2_PAT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=0, show_progress=False,
            special_tokens=[EOT], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        with Timer() as t:
            tok.train_from_iterator(batches(iter_docs(corpus), 1000), trainer)
        u2b = {c: bytes([b]) for b, c in bytes_to_unicode().items()}
        to_bytes = lambda s: b"".join(u2b[c] for c in s)  # noqa: E731
        pairs = json.loads(tok.to_str())["model"]["merges"]
        pairs = [p.split(" ", 1) if isinstance(p, str) else p for p in pairs]
        merges = [(to_bytes(a), to_bytes(b)) for a, b in pairs]
        _save(out, merges=merges)
        emit(inner_s=t.s, merges=len(merges))
    elif tool == "rustbpe":
        import rustbpe

        tok = rustbpe.Tokenizer()
        with Timer() as t:
            tok.train_from_iterator(iter_docs(corpus), vocab_size=vocab_size - 1,
                                    pattern=GPT2_PAT)
        tokens = [bytes(k) for k, rank in tok.get_mergeable_ranks() if rank >= 256]
        _save(out, tokens=tokens)
        emit(inner_s=t.s, merges=len(tokens))
    else:
        raise SystemExit(f"unknown worker tool {tool!r}; expected one of {TOOLS}")


# ---------------------------------------------------------------- parent side


def _command(tool, corpus, args, out) -> list[str]:
    if tool == "pyref":
        return [sys.executable, str(PYREF_TRAIN), corpus, "--vocab-size", str(args.vocab_size),
                "--procs", str(args.threads), "--out", out]
    return [sys.executable, os.path.abspath(__file__), "--worker", tool, "--corpus", corpus,
            "--vocab-size", str(args.vocab_size), "--threads", str(args.threads), "--out", out]


def _pyref_results(run: dict, out: str, procs: int) -> list[dict]:
    """pyref prints its own timings; convert them and its pickle to our format."""
    m_pre = re.search(r"pretokenize\+count: ([\d.]+)s", run["stdout"])
    m_all = re.search(r"merges: (\d+) in ([\d.]+)s; total ([\d.]+)s", run["stdout"])
    if not (m_pre and m_all and os.path.exists(out + ".pkl")):
        return []
    with open(out + ".pkl", "rb") as f:  # written by our own pyref_train.py run above
        merges = pickle.load(f)["merges"]
    _save(out, merges=merges)
    return [dict(inner_s=float(m_all.group(3)), merges=int(m_all.group(1)),
                 note=f"pretokenize {float(m_pre.group(1)):.1f}s + merges "
                      f"{float(m_all.group(2)):.1f}s, {procs} procs")]


def _load_saved(path: str):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        d = json.load(f)
    merges = d["merges"] and [(bytes.fromhex(a), bytes.fromhex(b)) for a, b in d["merges"]]
    return merges, {bytes.fromhex(t) for t in d["tokens"]}


def _checks(name: str, saved: dict) -> list[str]:
    """Exactness checks (pyref, stage split) and informational token-set overlaps."""
    lines = []
    bp = saved.get("bytepair")
    if bp and saved.get("bytepair-stages"):
        same = bp[0] == saved["bytepair-stages"][0]
        lines.append(f"bytepair train == count_files + train_from_counts: "
                     f"{'yes' if same else 'NO  <-- MISMATCH'}")
    if bp and saved.get("pyref"):
        a, b = bp[0], saved["pyref"][0]
        i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        if a == b:
            lines.append(f"bytepair merges == pyref merges (exact, in order): yes, all {len(a):,}")
        else:
            where = (f"merge #{i}: bytepair {a[i] if i < len(a) else None} vs pyref "
                     f"{b[i] if i < len(b) else None}")
            lines.append(f"bytepair merges == pyref merges: NO  <-- MISMATCH at {where} "
                         f"(lengths {len(a):,} vs {len(b):,})")
    ref = "bytepair" if bp else "pyref" if saved.get("pyref") else "hf"
    for other in ("hf", "rustbpe", "pyref"):
        if other != ref and saved.get(ref) and saved.get(other):
            x, y = saved[ref][1], saved[other][1]
            lines.append(f"token-set overlap {ref} vs {other} (informational; ties differ): "
                         f"{len(x & y):,} of {len(x):,}/{len(y):,} "
                         f"({100 * len(x & y) / max(1, len(x)):.2f}%)")
    return [f"[{name}] {s}" for s in lines]


def run_corpus(corpus: str, args, workdir: str, bp_error: str | None):
    name = Path(corpus).stem
    size = os.path.getsize(corpus)
    rows, saved = [], {}
    tools = [t for t in args.tools if t in TOOLS]
    if "bytepair" in tools:
        tools.insert(tools.index("bytepair") + 1, "bytepair-stages")
    for tool in tools:
        if tool.startswith("bytepair") and bp_error:
            print(f"[{name}] {tool}: skipped, bytepair not importable ({bp_error})", flush=True)
            continue
        if tool == "pyref" and size > args.pyref_max_mb * MB:
            print(f"[{name}] pyref: skipped, corpus > --pyref-max-mb {args.pyref_max_mb}",
                  flush=True)
            continue
        out = os.path.join(workdir, f"{tool}-{name}")
        print(f"[{name}] running {tool} ...", flush=True)
        run = run_child(_command(tool, corpus, args, out), thread_env(args.threads),
                        args.timeout)
        results = _pyref_results(run, out, args.threads) if tool == "pyref" else run["results"]
        if run["rc"] != 0 or not results:
            last = (run["stderr"].strip().splitlines() or ["no output"])[-1][:100]
            why = "TIMEOUT" if run["timed_out"] else f"FAILED rc={run['rc']}: {last}"
            rows.append(dict(tool=tool, corpus=name, wall_s=run["wall_s"], note=why))
            print(f"[{name}] {tool}: {why}", flush=True)
            continue
        saved[tool] = _load_saved(out)
        if tool == "bytepair-stages":
            count, merge = results
            rows.append(dict(tool="bytepair pretokenize+count", corpus=name,
                             inner_s=count["inner_s"], mb_s=size / MB / count["inner_s"],
                             peak_rss_mb=count["peak_rss_mb"],
                             note=f"{count['unique']:,} unique words, "
                                  f"{size / MB / count['inner_s'] / args.threads:.2f} "
                                  f"MB/s/thread"))
            rows.append(dict(tool="bytepair merges", corpus=name, inner_s=merge["inner_s"],
                             peak_rss_mb=merge["peak_rss_mb"], merges=merge["merges"],
                             note=f"{merge['merges'] / merge['inner_s']:,.0f} merges/s "
                                  f"(train_from_counts; RSS = stage peak)"))
            continue
        r = results[0]
        rows.append(dict(tool=tool, corpus=name, wall_s=run["wall_s"], inner_s=r["inner_s"],
                         mb_s=size / MB / r["inner_s"], peak_rss_mb=run["peak_rss_mb"],
                         merges=r["merges"], note=r.get("note", "")))
    bp = next((r for r in rows if r["tool"] == "bytepair" and "inner_s" in r), None)
    for r in rows:
        if bp and r["tool"] in TOOLS and "inner_s" in r:
            r["vs_bytepair"] = r["inner_s"] / bp["inner_s"]
    return rows, _checks(name, saved), size


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", nargs="+",
                    default=[str(CORPUS_DIR / "small.txt"), str(CORPUS_DIR / "large.txt")])
    ap.add_argument("--vocab-size", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tools", default="bytepair,hf,rustbpe,pyref",
                    help=f"comma-separated subset of {','.join(TOOLS)}")
    ap.add_argument("--pyref-max-mb", type=float, default=100,
                    help="run pyref only on corpora up to this size (it takes ~3 min per 20 MB)")
    ap.add_argument("--timeout", type=float, default=3600, help="per child, seconds")
    ap.add_argument("--json", help="write rows and checks to this file")
    ap.add_argument("--workdir", help="keep the trained merges here (default: temp dir)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.corpus[0], args.vocab_size, args.threads, args.out)
        return 0
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = set(args.tools) - set(TOOLS)
    if unknown:
        ap.error(f"unknown --tools {sorted(unknown)}; choose from {','.join(TOOLS)}")
    bp_error = bytepair_import_error() if "bytepair" in args.tools else None
    if bp_error:
        print(f"bytepair not importable: {bp_error} -- bytepair rows skipped", flush=True)
    workdir = args.workdir or tempfile.mkdtemp(prefix="bytepair-train-bench-")
    os.makedirs(workdir, exist_ok=True)
    all_rows, all_checks = [], []
    try:
        for corpus in args.corpus:
            rows, checks, size = run_corpus(corpus, args, workdir, bp_error)
            all_rows += rows
            all_checks += checks
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    headers = ["tool", "corpus", "wall s", "inner s", "MB/s", "peak RSS MB", "#merges",
               "time/bytepair", "notes"]
    keys = ["tool", "corpus", "wall_s", "inner_s", "mb_s", "peak_rss_mb", "merges",
            "vs_bytepair", "note"]
    title = (f"Training, vocab_size={args.vocab_size} (256 bytes + {EOT} + merges), "
             f"threads={args.threads}, MB = 1e6 bytes; MB/s = corpus bytes / inner s; "
             f"time/bytepair = inner s / bytepair's inner s")
    print_table(headers, [[r.get(k) for k in keys] for r in all_rows], title=title)
    print()
    for line in all_checks:
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(vocab_size=args.vocab_size, threads=args.threads,
                           rows=all_rows, checks=all_checks), f, indent=1)
    return 1 if any("MISMATCH" in c for c in all_checks) else 0


if __name__ == "__main__":
    sys.exit(main())
