"""Training benchmark: bytepair vs gigatoken, HF tokenizers, rustbpe and the Python reference.

Every tool trains in its own fresh child process with RAYON_NUM_THREADS etc. set to
--threads; peak RSS is that child's own high-water mark. All tools get `vocab_size` =
256 bytes + <|endoftext|> + merges. Prints one table; --json writes the rows. Checks
bytepair's merges against pyref (exact) and reports token-set overlap with the peers.

  python benchmarks/train.py [--corpus A.txt B.txt] [--vocab-size 10000] [--threads 2]

--baseline DIR also trains with the `bytepair` package found in DIR (another build, e.g. an
unpacked wheel of an older version) in the same run as today's, and checks that its merges are
the same: a speed-up measured within one run, which a shared machine's drift skews far less
than runs hours apart.
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
import common
from common import EOT, GPT2_PAT, MB, Timer, emit, iter_docs, peak_rss_mb, reset_peak_rss

TOOLS = ("bytepair", "gigatoken", "hf", "rustbpe", "pyref")
# (header, row key) of the printed table
COLUMNS = [
    ("tool", "tool"),
    ("corpus", "corpus"),
    ("wall s", "wall_s"),
    ("inner s", "inner_s"),
    ("MB/s", "mb_s"),
    ("peak RSS MB", "peak_rss_mb"),
    ("#merges", "merges"),
    ("time/bytepair", "vs_bytepair"),
    ("others %", "others_pct"),
    ("notes", "note"),
]


def _save(path: str, merges=None, tokens=None) -> None:
    """Merges as hex pairs, or only the merged tokens when a tool exposes no pairs."""
    if merges is not None:
        tokens = [a + b for a, b in merges]
        merges = [[a.hex(), b.hex()] for a, b in merges]
    with open(path, "w") as f:
        json.dump({"merges": merges, "tokens": [t.hex() for t in tokens]}, f)


def _load_saved(path: str):
    with open(path) as f:
        d = json.load(f)
    merges = d["merges"] and [(bytes.fromhex(a), bytes.fromhex(b)) for a, b in d["merges"]]
    return merges, {bytes.fromhex(t) for t in d["tokens"]}


# ---------------------------------------------------------------- workers (child side)


def _train_bytepair(corpus, vocab_size, threads, out):
    import bytepair

    with Timer() as t:
        tok = bytepair.train([corpus], vocab_size, [EOT], num_threads=threads)
    _save(out, merges=list(tok.merges))
    emit(inner_s=t.s, merges=len(tok.merges))


def _train_baseline(corpus, vocab_size, threads, out):
    """`_train_bytepair` with the package of --baseline (first on PYTHONPATH), never today's."""
    import bytepair

    where = Path(os.environ["BYTEPAIR_BASELINE"]).resolve()
    found = Path(bytepair.__file__).resolve()
    if not found.is_relative_to(where):
        raise SystemExit(f"--baseline: imported {found}, not a package in {where}")
    _train_bytepair(corpus, vocab_size, threads, out)


def _train_stages(corpus, vocab_size, threads, out):
    """count_files, then train_from_counts; each stage's own peak RSS via VmHWM resets."""
    import bytepair

    reset_peak_rss()
    with Timer() as t_count:
        counts = bytepair.count_files([corpus], special_tokens=[EOT], num_threads=threads)
    emit(stage="count", inner_s=t_count.s, unique=len(counts), peak_rss_mb=peak_rss_mb())
    reset_peak_rss()
    with Timer() as t_merge:
        tok = bytepair.train_from_counts(counts, vocab_size, [EOT])
    _save(out, merges=list(tok.merges))
    emit(stage="merges", inner_s=t_merge.s, merges=len(tok.merges), peak_rss_mb=peak_rss_mb())


def _train_hf(corpus, vocab_size, threads, out):
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    split = pre_tokenizers.Split(Regex(GPT2_PAT), behavior="isolated")
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.pre_tokenizer = pre_tokenizers.Sequence([split, byte_level])
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=0,
        show_progress=False,
        special_tokens=[EOT],
        initial_alphabet=alphabet,
    )
    with Timer() as t:
        tok.train_from_iterator(common.batches(iter_docs(corpus), 1000), trainer)
    u2b = {c: bytes([b]) for b, c in common.bytes_to_unicode().items()}
    pairs = json.loads(tok.to_str())["model"]["merges"]
    pairs = [p.split(" ", 1) if isinstance(p, str) else p for p in pairs]
    merges = [tuple(b"".join(u2b[c] for c in s) for s in pair) for pair in pairs]
    _save(out, merges=merges)
    emit(inner_s=t.s, merges=len(merges))


def _train_gigatoken(corpus, vocab_size, threads, out):
    import gigatoken

    # gigatoken reads the file itself, cutting documents at the separator; its default tie-break
    # is HF's, not CS336's, so its merges may differ from bytepair's (overlap is reported).
    source = gigatoken.TextFileSource([corpus], separator=EOT)
    with Timer() as t:
        _, merges = gigatoken.train_bpe(source, vocab_size, [EOT])
    _save(out, merges=[(bytes(a), bytes(b)) for a, b in merges])
    emit(inner_s=t.s, merges=len(merges))


def _train_rustbpe(corpus, vocab_size, threads, out):
    import rustbpe

    tok = rustbpe.Tokenizer()
    with Timer() as t:  # rustbpe's vocab has no special token: 256 bytes + merges
        tok.train_from_iterator(iter_docs(corpus), vocab_size=vocab_size - 1, pattern=GPT2_PAT)
    tokens = [bytes(k) for k, rank in tok.get_mergeable_ranks() if rank >= 256]
    _save(out, tokens=tokens)
    emit(inner_s=t.s, merges=len(tokens))


WORKERS = {
    "bytepair": _train_bytepair,
    "bytepair-stages": _train_stages,
    "bytepair-baseline": _train_baseline,
    "gigatoken": _train_gigatoken,
    "hf": _train_hf,
    "rustbpe": _train_rustbpe,
}


def worker(tool: str, corpus: str, vocab_size: int, threads: int, out: str) -> None:
    WORKERS[tool](corpus, vocab_size, threads, out)
    emit(process_peak_rss_mb=peak_rss_mb())  # VmHWM: this process alone, since its exec


# ---------------------------------------------------------------- parent side


def _command(tool: str, corpus: str, args, out: str) -> list[str]:
    size_args = ["--vocab-size", str(args.vocab_size), "--out", out]
    if tool == "pyref":
        pyref = [sys.executable, str(common.PYREF_TRAIN), corpus, "--procs", str(args.threads)]
        return pyref + size_args
    worker_args = ["--worker", tool, "--corpus", corpus, "--threads", str(args.threads)]
    return [sys.executable, os.path.abspath(__file__), *worker_args, *size_args]


def _pyref_results(run: dict, out: str, procs: int) -> list[dict]:
    """pyref prints its own timings and pickles its merges; convert both."""
    m_pre = re.search(r"pretokenize\+count: ([\d.]+)s", run["stdout"])
    m_all = re.search(r"merges: (\d+) in ([\d.]+)s; total ([\d.]+)s", run["stdout"])
    if not (m_pre and m_all and os.path.exists(out + ".pkl")):
        return []
    with open(out + ".pkl", "rb") as f:  # written just now by our own pyref_train.py run
        _save(out, merges=pickle.load(f)["merges"])
    pre_s, merge_s, total_s = float(m_pre[1]), float(m_all[2]), float(m_all[3])
    note = f"pretokenize {pre_s:.1f}s + merges {merge_s:.1f}s, {procs} procs"
    return [{"inner_s": total_s, "merges": int(m_all[1]), "note": note}]


def _yes(ok: bool) -> str:
    return "yes" if ok else "NO  <-- MISMATCH"


def _checks(name: str, saved: dict) -> list[str]:
    """Exactness checks (vs pyref, stage split) and informational token-set overlaps."""
    lines, bp = [], saved.get("bytepair")
    if bp and "bytepair-stages" in saved:
        same = bp[0] == saved["bytepair-stages"][0]
        lines.append(f"bytepair train == count_files + train_from_counts: {_yes(same)}")
    if bp and "bytepair-baseline" in saved:
        same = bp[0] == saved["bytepair-baseline"][0]
        lines.append(f"bytepair merges == the baseline build's: {_yes(same)}")
    if bp and "pyref" in saved:
        a, b = bp[0], saved["pyref"][0]
        i = common.first_difference(a, b)
        where = "" if a == b else f" at merge #{i}: {a[i : i + 1]} vs pyref {b[i : i + 1]}"
        lines.append(f"bytepair merges == pyref merges (exact, in order): {_yes(a == b)}{where}")
    ref = "bytepair" if bp else "pyref" if "pyref" in saved else "hf"
    for other in ("gigatoken", "hf", "rustbpe") + (() if bp else ("pyref",)):
        if other != ref and ref in saved and other in saved:
            x, y = saved[ref][1], saved[other][1]
            share = f"{len(x & y):,} of {len(x):,}/{len(y):,} ({100 * len(x & y) / len(x):.2f}%)"
            lines.append(f"token-set overlap {ref} vs {other} (informational): {share}")
    return [f"[{name}] {s}" for s in lines]


def _stage_rows(name, size: int, threads: int, results: list[dict], others: float) -> list[dict]:
    count, merge = results
    mb_s = size / MB / count["inner_s"]
    count_note = f"{count['unique']:,} unique words, {mb_s / threads:.2f} MB/s/thread"
    merge_note = f"{merge['merges'] / merge['inner_s']:,.0f} merges/s (train_from_counts)"
    return [
        {
            "tool": "bytepair pretokenize+count",
            "corpus": name,
            "inner_s": count["inner_s"],
            "mb_s": mb_s,
            "peak_rss_mb": count["peak_rss_mb"],
            "others_pct": others,
            "note": count_note,
        },
        {
            "tool": "bytepair merges",
            "corpus": name,
            "inner_s": merge["inner_s"],
            "peak_rss_mb": merge["peak_rss_mb"],
            "merges": merge["merges"],
            "others_pct": others,
            "note": merge_note,
        },
    ]


def _skip_reason(tool: str, size: int, args, bp_error: str | None) -> str | None:
    if tool.startswith("bytepair") and bp_error:
        return f"bytepair not importable ({bp_error})"
    if tool == "pyref" and size > args.pyref_max_mb * MB:
        return f"corpus > --pyref-max-mb {args.pyref_max_mb:g}"
    return None


def run_corpus(corpus: str, args, workdir: str, bp_error: str | None):
    name, size = Path(corpus).stem, os.path.getsize(corpus)
    rows, saved = [], {}
    tools = list(args.tools)
    if "bytepair" in tools:
        tools.insert(tools.index("bytepair") + 1, "bytepair-stages")
        if args.baseline:
            tools.insert(tools.index("bytepair") + 2, "bytepair-baseline")
    for tool in tools:
        if why := _skip_reason(tool, size, args, bp_error):
            print(f"[{name}] {tool}: skipped, {why}", flush=True)
            continue
        out = os.path.join(workdir, f"{tool}-{name}")
        print(f"[{name}] running {tool} ...", flush=True)
        env = common.thread_env(args.threads)
        if tool == "bytepair-baseline":
            env["BYTEPAIR_BASELINE"] = args.baseline
            paths = [args.baseline, env.get("PYTHONPATH")]
            env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        run = common.run_child(_command(tool, corpus, args, out), env, args.timeout)
        results = _pyref_results(run, out, args.threads) if tool == "pyref" else run["results"]
        own_peak = [r["process_peak_rss_mb"] for r in results if "process_peak_rss_mb" in r]
        results = [r for r in results if "process_peak_rss_mb" not in r]
        if run["rc"] != 0 or not results:
            last = (run["stderr"].strip().splitlines() or ["no output"])[-1][:100]
            why = "TIMEOUT" if run["timed_out"] else f"FAILED rc={run['rc']}: {last}"
            rows.append({"tool": tool, "corpus": name, "wall_s": run["wall_s"], "note": why})
            print(f"[{name}] {tool}: {why}", flush=True)
            continue
        saved[tool] = _load_saved(out)
        if tool == "bytepair-stages":
            rows += _stage_rows(name, size, args.threads, results, run["others_pct"])
            continue
        r = results[0]
        peak = own_peak[0] if own_peak else run["peak_rss_mb"]  # pyref: largest process
        rows.append(
            {
                "tool": tool,
                "corpus": name,
                "wall_s": run["wall_s"],
                "peak_rss_mb": peak,
                "others_pct": run["others_pct"],
                "mb_s": size / MB / r["inner_s"],
                **r,
            }
        )
    bp = next((r for r in rows if r["tool"] == "bytepair" and "inner_s" in r), None)
    for r in rows:
        if bp and r["tool"] in (*TOOLS, "bytepair-baseline") and "inner_s" in r:
            r["vs_bytepair"] = r["inner_s"] / bp["inner_s"]
    return rows, _checks(name, saved)


def main(argv=None) -> int:
    corpora = [str(common.CORPUS_DIR / "small.txt"), str(common.CORPUS_DIR / "large.txt")]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", nargs="+", default=corpora, type=common.corpus_path)
    ap.add_argument("--vocab-size", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset")
    ap.add_argument("--pyref-max-mb", type=float, default=100, help="pyref: ~3 min per 20 MB")
    ap.add_argument("--timeout", type=float, default=3600, help="per child, seconds")
    ap.add_argument("--json", help="write the rows and checks to this file")
    ap.add_argument("--baseline", help="a directory holding another build's bytepair package")
    ap.add_argument("--workdir", help="keep the trained merges here (default: temp dir)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.corpus[0], args.vocab_size, args.threads, args.out)
        return 0
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if args.baseline and not (Path(args.baseline) / "bytepair" / "__init__.py").is_file():
        ap.error(f"--baseline {args.baseline}: no bytepair package there (bytepair/__init__.py)")
    if args.baseline and "bytepair" not in args.tools:
        ap.error("--baseline needs bytepair in --tools (it is compared with today's)")
    if unknown := sorted(set(args.tools) - set(TOOLS)):
        ap.error(f"unknown --tools {unknown}; choose from {','.join(TOOLS)}")
    bp_error = common.bytepair_import_error() if "bytepair" in args.tools else None
    if bp_error:
        print(f"bytepair not importable: {bp_error} -- bytepair rows skipped", flush=True)
    print(common.describe_env(), flush=True)
    workdir = args.workdir or tempfile.mkdtemp(prefix="bytepair-train-bench-")
    os.makedirs(workdir, exist_ok=True)
    rows, checks = [], []
    try:
        for corpus in args.corpus:
            more_rows, more_checks = run_corpus(corpus, args, workdir, bp_error)
            rows, checks = rows + more_rows, checks + more_checks
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    title = (
        f"Training, vocab_size={args.vocab_size} (256 bytes + {EOT} + merges), "
        f"threads={args.threads}; MB = 1e6 bytes; MB/s = corpus bytes / inner s; "
        "time/bytepair = inner s / bytepair's inner s; others % = share of the machine's "
        "CPU used by other processes meanwhile (noise)"
    )
    table = [[r.get(key) for _, key in COLUMNS] for r in rows]
    common.print_table([header for header, _ in COLUMNS], table, title=title)
    print()
    print("\n".join(checks))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "checks": checks}, f, indent=1)
    failed = any("inner_s" not in r for r in rows) or any("MISMATCH" in c for c in checks)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
