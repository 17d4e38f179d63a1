"""Training benchmark: bytepair vs gigatoken, HF tokenizers, rustbpe and the Python reference.

Every tool trains in its own fresh child process with RAYON_NUM_THREADS etc. set to
--threads; peak RSS is that child's own high-water mark. All tools get `vocab_size` =
256 bytes + <|endoftext|> + merges. Prints one table; --json writes the rows. Checks
bytepair's merges against pyref (exact) and reports token-set overlap with the peers.

  python benchmarks/train.py [--corpus A.txt B.txt] [--vocab-size 10000] [--threads 2]

--input-format txt,jsonl.zst,parquet,txt.gz,shards,iterator,dataset (or `all`) adds bytepair rows
that train on the same documents given another way: the files `formats.py` converts the corpus
to, `train_from_iterator` on the documents streamed as Python strings, `train_from_dataset` on a
pyarrow Table read from the Parquet file (and on a Hugging Face Dataset, `hf-dataset`, when
`datasets` is installed). They go in a second table with counting time apart from merging,
MB/s of the plain text and counting time relative to the txt row; their merges must equal it.

--baseline DIR also trains with the `bytepair` package found in DIR (another build, e.g. an
unpacked wheel of an older version) in the same run as today's, and checks that its merges are
the same: a speed-up measured within one run, which a shared machine's drift skews far less
than runs hours apart.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
import formats
from common import EOT, GPT2_PAT, MB, Timer, emit, iter_docs, peak_rss_mb, reset_peak_rss

TOOLS = ("bytepair", "gigatoken", "hf", "rustbpe", "pyref")
#: --input-format values: formats.py's files, then the in-memory inputs (txt is the bytepair row).
INPUT_FORMATS = (*formats.FORMATS, "iterator", "dataset", "hf-dataset")
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
# the table of bytepair by input format
FORMAT_COLUMNS = [
    ("input", "format"),
    ("corpus", "corpus"),
    ("on disk MB", "disk_mb"),
    ("wall s", "wall_s"),
    ("inner s", "inner_s"),
    ("count s", "count_s"),
    ("merges s", "merge_s"),
    ("MB/s", "mb_s"),
    ("count MB/s", "count_mb_s"),
    ("peak RSS MB", "peak_rss_mb"),
    ("count/txt", "vs_txt"),
    ("merges == txt", "same_as_txt"),
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
    """`train` on the file; through `train_with_report` (what `train` calls) when the build has
    it, for the time of counting apart from merging."""
    import bytepair

    with_report = getattr(sys.modules.get("bytepair.train"), "train_with_report", None)
    with Timer() as t:
        if with_report:
            tok, report = with_report([corpus], vocab_size, [EOT], num_threads=threads)
        else:
            tok, report = bytepair.train([corpus], vocab_size, [EOT], num_threads=threads), None
    _save(out, merges=list(tok.merges))
    emit(inner_s=t.s, merges=len(tok.merges), **_stage_seconds(report))


def _stage_seconds(report) -> dict:
    seconds = getattr(report, "seconds", {})
    return {"count_s": seconds.get("pretokenize+count"), "merge_s": seconds.get("merges")}


def _train_input(fmt, source, vocab_size, threads, out):
    """bytepair on one converted input: a file or a folder of them, or documents in memory."""
    import importlib

    import bytepair

    module = importlib.import_module("bytepair.train")  # the module; `bytepair.train` is `train`
    reports, merge_stage = [], module.merge_stage

    def recording(counts, run, report, *rest, **kw):
        """The in-memory entry points return no report; catch the one they fill."""
        reports.append(report)
        return merge_stage(counts, run, report, *rest, **kw)

    module.merge_stage = recording
    # import the readers' modules untimed: a one-off cost, not throughput
    if fmt in ("parquet", "dataset", "hf-dataset"):
        import pyarrow.dataset  # read_table imports it on its first call
        import pyarrow.parquet  # noqa: F401
    if fmt == "jsonl.zst":
        import zstandard  # noqa: F401
    if fmt == "hf-dataset":
        import datasets
    read_s, report, kw = 0.0, None, {"num_threads": threads, "progress": False}
    with Timer() as t:
        if fmt in formats.FILES:
            tok, report = module.train_with_report([source], vocab_size, [EOT], **kw)
        elif fmt == "iterator":
            tok = bytepair.train_from_iterator(iter_docs(source), vocab_size, [EOT], **kw)
        else:
            with Timer() as t_read:
                if fmt == "hf-dataset":
                    # a cache of our own, gone after: every run converts, none finds it done
                    cache = tempfile.mkdtemp(prefix="hf-cache-", dir=os.path.dirname(out))
                    data = datasets.Dataset.from_parquet(str(source), cache_dir=cache)
                else:
                    import pyarrow.parquet as pq

                    data = pq.read_table(source, columns=["text"])
            read_s = t_read.s
            tok = bytepair.train_from_dataset(data, vocab_size, [EOT], column="text", **kw)
    _save(out, merges=list(tok.merges))
    if fmt == "hf-dataset":
        del data
        shutil.rmtree(cache, ignore_errors=True)
    seconds = _stage_seconds(report or (reports[0] if reports else None))
    if seconds["count_s"] is not None:
        seconds["count_s"] += read_s  # counting's input: reading the table is part of it
    emit(inner_s=t.s, merges=len(tok.merges), read_s=read_s, **seconds)


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


def worker(tool: str, corpus: str, vocab_size: int, threads: int, out: str, source=None) -> None:
    if fmt := _input_format(tool):
        _train_input(fmt, source, vocab_size, threads, out)
    else:
        WORKERS[tool](corpus, vocab_size, threads, out)
    emit(process_peak_rss_mb=peak_rss_mb())  # VmHWM: this process alone, since its exec


# ---------------------------------------------------------------- parent side


def _input_format(tool: str) -> str | None:
    """`parquet` for the row `bytepair[parquet]`; None for the other tools."""
    return tool[len("bytepair[") : -1] if tool.startswith("bytepair[") else None


def _source(corpus: str, fmt: str, args) -> str:
    """What a format row trains on: a converted file or folder, or the corpus (iterator)."""
    if fmt in ("iterator", "txt"):
        return corpus
    fmt = "parquet" if fmt.endswith("dataset") else fmt
    return str(formats.input_path(corpus, fmt, args.formats_dir))


def _command(tool: str, corpus: str, args, out: str) -> list[str]:
    size_args = ["--vocab-size", str(args.vocab_size), "--out", out]
    if tool == "pyref":
        pyref = [sys.executable, str(common.PYREF_TRAIN), corpus, "--procs", str(args.threads)]
        return pyref + size_args
    worker_args = ["--worker", tool, "--corpus", corpus, "--threads", str(args.threads)]
    if fmt := _input_format(tool):
        worker_args += ["--input", _source(corpus, fmt, args)]
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


def _format_checks(name: str, saved: dict, rows: list[dict]) -> list[str]:
    """Each input format's merges against the txt row's (exact, in order); marks the rows."""
    lines, txt = [], saved.get("bytepair")
    for r in rows:
        fmt = _input_format(r["tool"])
        if not fmt or r["tool"] not in saved:
            continue
        if txt is None:
            r["same_as_txt"] = "no txt row"
            continue
        a, b = saved[r["tool"]][0], txt[0]
        r["same_as_txt"] = "yes" if a == b else "FAIL"
        i = common.first_difference(a, b)
        where = "" if a == b else f" at merge #{i}: {a[i : i + 1]} vs txt {b[i : i + 1]}"
        verdict = "yes" if a == b else "FAIL  <-- MISMATCH"
        lines.append(f"[{name}] bytepair merges from {fmt} == from txt: {verdict}{where}")
    return lines


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
    if tool == "bytepair[hf-dataset]" and importlib.util.find_spec("datasets") is None:
        return "the datasets package is not installed"
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
        at = tools.index("bytepair-stages") + 1 + bool(args.baseline)
        tools[at:at] = [f"bytepair[{f}]" for f in args.input_formats if f != "txt"]
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
        fmt = _input_format(tool)
        if run["rc"] != 0 or not results:
            last = (run["stderr"].strip().splitlines() or ["no output"])[-1][:100]
            why = "TIMEOUT" if run["timed_out"] else f"FAILED rc={run['rc']}: {last}"
            rows.append(
                {"tool": tool, "corpus": name, "wall_s": run["wall_s"], "note": why, "format": fmt}
            )
            print(f"[{name}] {tool}: {why}", flush=True)
            tail = "\n".join(run["stderr"].strip().splitlines()[-12:])
            print(f"[{name}] {tool} stderr, last lines:\n{tail}", flush=True)
            continue
        saved[tool] = _load_saved(out)
        if tool == "bytepair-stages":
            rows += _stage_rows(name, size, args.threads, results, run["others_pct"])
            continue
        r = results[0]
        peak = own_peak[0] if own_peak else run["peak_rss_mb"]  # pyref: largest process
        row = {
            "tool": tool,
            "corpus": name,
            "wall_s": run["wall_s"],
            "peak_rss_mb": peak,
            "others_pct": run["others_pct"],
            "mb_s": size / MB / r["inner_s"],
            **r,
        }
        if fmt:
            row.update(_format_fields(fmt, corpus, args, size, r))
        rows.append(row)
    bp = next((r for r in rows if r["tool"] == "bytepair" and "inner_s" in r), None)
    for r in rows:
        if bp and r["tool"] in (*TOOLS, "bytepair-baseline") and "inner_s" in r:
            r["vs_bytepair"] = r["inner_s"] / bp["inner_s"]
        if bp and _input_format(r["tool"]) and r.get("count_s") and bp.get("count_s"):
            r["vs_txt"] = r["count_s"] / bp["count_s"]
    return rows, _checks(name, saved) + _format_checks(name, saved, rows)


def _format_fields(fmt: str, corpus: str, args, size: int, r: dict) -> dict:
    """The format table's own columns: the input's size on disk, counting MB/s, notes."""
    source = Path(_source(corpus, fmt, args))
    notes = {
        "iterator": "train_from_iterator, documents streamed from the .txt",
        "dataset": f"train_from_dataset(pyarrow Table), read_table {r.get('read_s', 0):.2f}s",
        "hf-dataset": f"train_from_dataset(datasets.Dataset), load {r.get('read_s', 0):.2f}s",
    }
    n_files = sum(1 for p in source.iterdir() if p.is_file()) if source.is_dir() else 1
    note = notes.get(fmt, f"{n_files} files" if source.is_dir() else "train_with_report")
    return {
        "format": fmt,
        "disk_mb": formats.disk_size(source) / MB,
        "count_mb_s": size / MB / r["count_s"] if r.get("count_s") else None,
        "note": note,
    }


def _txt_format_row(row: dict, size: int) -> dict:
    """The bytepair row as the format table's reference line."""
    return {
        **row,
        "format": "txt",
        "disk_mb": size / MB,
        "count_mb_s": size / MB / row["count_s"] if row.get("count_s") else None,
        "vs_txt": 1.0 if row.get("count_s") else None,
        "note": "train_with_report, the reference",
    }


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
    ap.add_argument(
        "--input-format",
        default="txt",
        help=f"comma-separated, bytepair only: {','.join(INPUT_FORMATS)} or all",
    )
    ap.add_argument(
        "--formats-dir", help="converted inputs (one corpus only); default formats/<stem>/"
    )
    ap.add_argument("--input", help=argparse.SUPPRESS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.corpus[0], args.vocab_size, args.threads, args.out, args.input)
        return 0
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    chosen = [f.strip() for f in args.input_format.split(",") if f.strip()]
    args.input_formats = list(INPUT_FORMATS) if chosen == ["all"] else chosen
    if unknown := sorted(set(args.input_formats) - set(INPUT_FORMATS)):
        ap.error(f"unknown --input-format {unknown}; choose from {','.join(INPUT_FORMATS)},all")
    converted = set(args.input_formats) - {"txt", "iterator"}
    if set(args.input_formats) - {"txt"} and "bytepair" not in args.tools:
        ap.error("--input-format needs bytepair in --tools (each format is checked against it)")
    if args.formats_dir and len(args.corpus) > 1:
        ap.error("--formats-dir takes one corpus")
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
            if converted and not bp_error:
                _convert(corpus, args)
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
    main_rows = [r for r in rows if not _input_format(r["tool"])]
    table = [[r.get(key) for _, key in COLUMNS] for r in main_rows]
    common.print_table([header for header, _ in COLUMNS], table, title=title)
    if args.input_formats != ["txt"]:
        _print_format_table(rows, args)
    print()
    print("\n".join(checks))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "checks": checks}, f, indent=1)
    failed = any("inner_s" not in r for r in rows) or any("MISMATCH" in c for c in checks)
    return 1 if failed else 0


def _convert(corpus: str, args) -> None:
    """formats.py in its own process (it is cached), so pyarrow and its buffers never sit in
    this parent, whose pre-exec copy each child's wait4 peak RSS counts."""
    cmd = [sys.executable, os.path.join(os.path.dirname(__file__), "formats.py"), corpus]
    if args.formats_dir:
        cmd += ["--out", args.formats_dir]
    print(f"[{Path(corpus).stem}] converting (formats.py) ...", flush=True)
    subprocess.run(cmd, check=True)


def _print_format_table(rows: list[dict], args) -> None:
    table, sizes = [], {Path(c).stem: os.path.getsize(c) for c in args.corpus}
    for r in rows:
        if r["tool"] == "bytepair" and "inner_s" in r:
            table.append(_txt_format_row(r, sizes[r["corpus"]]))
        elif _input_format(r["tool"]):
            table.append(r)
    title = (
        f"bytepair by input format, the same documents; vocab_size={args.vocab_size}, "
        f"threads={args.threads}; MB/s and count MB/s = plain .txt bytes / inner s or count s; "
        "count s = pretokenize+count (with reading the table for the datasets); "
        "count/txt = count s / the txt row's"
    )
    cells = [[r.get(key) for _, key in FORMAT_COLUMNS] for r in table]
    common.print_table([header for header, _ in FORMAT_COLUMNS], cells, title=title)


if __name__ == "__main__":
    sys.exit(main())
