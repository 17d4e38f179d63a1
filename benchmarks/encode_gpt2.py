"""Encoding benchmark, GPT-2 in detail: bytepair against gigatoken, tiktoken and HF tokenizers,
call by call, per corpus.

Rows: per-document calls and ~8 MB batches of documents (1 and `--threads` threads; HF on the
first `--hf-mb` MB only), one big string (the documents joined by EOT) cold and warm, and an
`encode_iterable` stream child over the whole file with its RSS growth. Every row runs in a
process of its own with new tokenizers, warmed on ~1 MB first; each row is the best of
`--repeat` rounds, tools taking turns. Ids are checked against tiktoken's (exit code 1 if
bytepair's or HF's differ). No timing asserts. `encode.py` compares every peer on three
encodings instead.

  python benchmarks/encode_gpt2.py [--corpus large.txt [code.txt ...]] [--mb 100] [--hf-mb 10]
                                   [--threads 2] [--repeat 3] [--no-stream] [--no-stream-check]
                                   [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
from common import (
    BATCH_BYTES,
    CORPUS_DIR,
    EOT,
    GPT2_MERGES,
    GPT2_VOCAB,
    MB,
    Timer,
    bytepair_import_error,
    chunks_by_bytes,
    emit,
    first_difference,
    gigatoken_tokenizer,
    iter_docs,
    load_docs,
    peak_rss_mb,
    print_table,
    reset_peak_rss,
    rss_mb,
    run_child,
    thread_env,
    yes_no,
)

STREAM_BLOCK = 1 << 16  # ids per np.fromiter call in the stream child (~2 MB transient)
STREAM_GOAL_MB = 50


def row(tool, call, threads, n_bytes, secs, tokens, note="", base_mb_s=None) -> dict:
    mb = n_bytes / MB
    keys = ("tool", "call", "threads", "mb", "mb_s", "inner_s", "tokens", "note", "base_mb_s")
    return dict(
        zip(keys, (tool, call, threads, mb, mb / secs, secs, tokens, note, base_mb_s), strict=True)
    )


def checksum(ids, offset: int) -> int:
    """Order-sensitive sum of a block of ids at global position `offset` (mod 2**64)."""
    import numpy as np

    ids = np.asarray(ids, dtype=np.uint64)
    weights = (np.arange(offset, offset + len(ids), dtype=np.uint64) % 65521) + 1
    return int((ids * weights).sum(dtype=np.uint64))


def stream_worker(path: str) -> None:
    """Child: RSS and speed of encode_iterable over a whole file, ids counted, not kept."""
    import numpy as np

    import bytepair

    tok = bytepair.Tokenizer.from_files(GPT2_VOCAB, GPT2_MERGES, special_tokens=[EOT])
    list(tok.encode_iterable(["warm up, " * 100, EOT]))
    gc.collect()
    rss_before, process_peak = rss_mb(), peak_rss_mb()
    hwm_ok = reset_peak_rss()
    n_ids, total = 0, 0
    with Timer() as t, open(path, encoding="utf-8") as f:
        it = tok.encode_iterable(f)
        while len(block := np.fromiter(itertools.islice(it, STREAM_BLOCK), np.uint32)):
            total = (total + checksum(block, n_ids)) % (1 << 64)
            n_ids += len(block)
    peak = peak_rss_mb()
    emit(
        inner_s=t.s,
        n_ids=n_ids,
        checksum=total,
        rss_before_mb=rss_before,
        peak_mb=peak if hwm_ok else None,
        process_peak_mb=max(peak, process_peak),
    )


def tiktoken_stream_reference(enc, path: str, threads: int) -> tuple[int, int]:
    """(id count, checksum) of encode(whole file, allowed_special={EOT}) via tiktoken."""
    n_ids, total, first = 0, 0, True
    docs = iter_docs(path)
    while batch := list(itertools.islice(docs, 2000)):
        for ids in enc.encode_ordinary_batch(batch, num_threads=threads):
            if not first:
                ids = [enc.eot_token, *ids]  # the separator before this piece
            first = False
            total = (total + checksum(ids, n_ids)) % (1 << 64)
            n_ids += len(ids)
    return n_ids, total


def verify(name, encode_batch, enc, chunks, threads) -> str:
    """Compare ids with tiktoken's document by document; describe the outcome."""
    n_diff, n_docs, example = 0, 0, ""
    for chunk in chunks:
        want = enc.encode_ordinary_batch(chunk, num_threads=threads)
        for doc, a, b in zip(chunk, want, encode_batch(chunk), strict=True):
            if a != b and not n_diff:
                i = first_difference(a, b)
                pos = len(enc.decode(a[:i]))
                example = (
                    f"; first: doc #{n_docs} token {i}: tiktoken {a[i : i + 4]} vs "
                    f"{name} {b[i : i + 4]} at {doc[pos : pos + 30]!r}"
                )
            n_diff += a != b
            n_docs += 1
    if n_diff:
        return f"{name} ids == tiktoken: NO  <-- {n_diff:,} of {n_docs:,} DOCS DIFFER{example}"
    return f"{name} ids == tiktoken on every doc: yes, all {n_docs:,} docs"


def _gt_batch(gt, parallel: bool):
    """gigatoken's encode_batch (awkward arrays out) as lists of ids, for the id check."""
    import awkward as ak

    return lambda c: ak.to_list(gt.encode_batch(c, parallel=parallel))


def row_runs(enc, hf, tok, gt, docs, hf_docs, threads: int, hf_note: str) -> list[tuple]:
    """Every single-call and batch row: (tool, call, threads, fn, docs, note), where `fn(docs)`
    encodes the documents and returns the number of ids."""

    def per_doc(fn):
        """One call per document: the loop does nothing but the calls, for every tool alike."""
        return lambda ds: sum(len(fn(d)) for d in ds)

    def batched(fn):
        return lambda ds: sum(sum(map(len, fn(c))) for c in chunks_by_bytes(ds, BATCH_BYTES))

    def hf_batch(parallel: bool):
        hf_n = batched(lambda c: [e.ids for e in hf.encode_batch(c, add_special_tokens=False)])

        def run(ds):
            os.environ["TOKENIZERS_PARALLELISM"] = "true" if parallel else "false"
            return hf_n(ds)

        return run

    T, batch_note, hf_1_note = threads, "8 MB batches", hf_note + "; TOKENIZERS_PARALLELISM=false"
    tt_n = batched(lambda c: enc.encode_ordinary_batch(c, num_threads=T))
    runs = [
        ("tiktoken", "encode_ordinary", 1, per_doc(enc.encode_ordinary), docs, ""),
        ("tiktoken", "encode_ordinary_batch", T, tt_n, docs, batch_note),
    ]
    if tok:
        bp_batch_1 = batched(lambda c: tok.encode_batch(c, num_threads=1))
        bp_batch_n = batched(lambda c: tok.encode_batch(c, num_threads=T))
        runs += [
            ("bytepair", "encode_ordinary", 1, per_doc(tok.encode_ordinary), docs, ""),
            ("bytepair", "encode_batch", 1, bp_batch_1, docs, batch_note),
            ("bytepair", "encode_batch", T, bp_batch_n, docs, batch_note),
        ]
        for n in (1, T):
            bp_np = batched(lambda c, n=n: [tok.encode_batch_to_numpy(c, num_threads=n)[0]])
            runs.append(("bytepair", "encode_batch_to_numpy", n, bp_np, docs, batch_note))
        # special tokens as plain text (gigatoken has none here), with one constant set: a
        # `set()` made per call cost the loop a garbage collection every ~700 calls
        none = frozenset()
        np_1 = per_doc(lambda d, f=tok.encode_to_numpy: f(d, allowed_special=none))
        runs.append(("bytepair", "encode_to_numpy", 1, np_1, docs, "numpy per doc"))
    if gt:
        import awkward as ak

        gt_n = {
            n: batched(lambda c, p=n > 1: [ak.flatten(gt.encode_batch(c, parallel=p))])
            for n in (1, T)
        }
        runs += [
            ("gigatoken", "encode", 1, per_doc(gt.encode), docs, "numpy per doc"),
            ("gigatoken", "encode_batch", 1, gt_n[1], docs, batch_note + ", awkward/numpy out"),
            ("gigatoken", "encode_batch", T, gt_n[T], docs, batch_note + ", awkward/numpy out"),
        ]
    runs += [
        ("HF tokenizers", "encode_batch", T, hf_batch(True), hf_docs, hf_note),
        ("HF tokenizers", "encode_batch", 1, hf_batch(False), hf_docs, hf_1_note),
    ]
    return runs


def throughput(args, runs: list[tuple]) -> list[dict]:
    """MB/s of every row of `runs`, each timed in a process of its own (`row_worker`), the best
    of `args.repeat` rounds of all rows (so tools take turns: a shared VM's speed can swing by a
    third within minutes). Why a process per row: bytepair and gigatoken keep caches, and
    allocators keep the memory earlier rows freed; in one shared process gigatoken's later rows
    reused the pages its earlier ones had faulted in (a fifteenth of the system time) while
    bytepair's tables came new from the kernel in every row. A row starts from nothing."""
    best: dict[int, tuple] = {}
    for _ in range(args.repeat):
        for i, (tool, call, n_threads, _fn, _ds, _note) in enumerate(runs):
            cmd = worker_cmd(args, "--hf-mb", str(args.hf_mb), "--threads", str(args.threads))
            cmd += ["--row-worker", str(i)]
            run = run_child(cmd, thread_env(args.threads), 3600)
            if run["rc"] != 0 or not run["results"]:
                err = (run["stderr"].strip().splitlines() or [""])[-1][:200]
                raise SystemExit(f"row {tool} {call} x{n_threads} failed: {err}")
            r = run["results"][0]
            print(f"  {tool} {call} x{n_threads}: {r['secs']:.2f} s", flush=True)
            if i not in best or r["secs"] < best[i][0]:
                best[i] = (r["secs"], r["n_tok"], r["others_pct"])
    rows = []
    for i, (tool, call, n_threads, _fn, ds, note) in enumerate(runs):
        secs, n_tok, others = best[i]
        note = f"{note}, best of {args.repeat}" if note else f"best of {args.repeat}"
        rows.append(row(tool, call, n_threads, sum(len(d.encode()) for d in ds), secs, n_tok, note))
        rows[-1]["others_pct"] = others
    return rows


def worker_cmd(args, *more: str) -> list[str]:
    """The command of a child of this script on `args.corpus`'s first `args.mb` MB."""
    me = os.path.abspath(__file__)
    return [sys.executable, me, "--corpus", args.corpus, "--mb", str(args.mb), *more]


def row_worker(args) -> None:
    """Child: row `args.row_worker` of `row_runs`, with new tokenizers, warmed on the same ~1 MB
    as every row, timed once."""
    enc, hf, tok = load_tokenizers(args.threads)
    gt = gigatoken_tokenizer(enc)
    docs, hf_docs, warm = load_all_docs(args)
    runs = row_runs(enc, hf, tok, gt, docs, hf_docs, args.threads, hf_note_of(args))
    fn, ds = runs[args.row_worker][3:5]
    fn(warm)
    n_tok, t = timed(lambda: fn(ds))
    emit(secs=t.s, n_tok=n_tok, others_pct=t.others_pct)


def load_all_docs(args) -> tuple[list[str], list[str], list[str]]:
    """The documents of the rows, HF's (fewer) and the ~1 MB every row is warmed on."""
    docs = load_docs(args.corpus, int(args.mb * MB))[0]
    hf_docs = load_docs(args.corpus, int(args.hf_mb * MB))[0]
    return docs, hf_docs, load_docs(args.corpus, 1_000_000)[0]


def hf_note_of(args) -> str:
    return f"first {args.hf_mb:g} MB only (HF is slow)"


def string_rows(args, enc, docs, tools) -> tuple[list[dict], list[str]]:
    """One big string (the documents joined by EOT) per call: tiktoken.encode (EOTs as special
    tokens), bytepair's encode_to_numpy (the same) and gigatoken's encode (EOTs as text, checked
    against tiktoken's encode_ordinary); for the last two a new tokenizer (warmed on ~1 MB)
    encodes the string cold, then again warm, in a process of its own each round
    (`string_worker`); the best of `args.repeat` rounds, tools taking turns. Ids checked by count
    and checksum."""
    text = EOT.join(docs)
    n = len(text.encode())
    with Timer() as t_tt:
        want = enc.encode(text, allowed_special={EOT})
    tt = row("tiktoken", "encode(str)", 1, n, t_tt.s, len(want), "one string, EOTs included")
    tt["others_pct"] = t_tt.others_pct
    rows, checks = [tt], []
    refs = {tool: want if tool == "bytepair" else enc.encode_ordinary(text) for tool in tools}
    sums = {tool: checksum(ref, 0) for tool, ref in refs.items()}
    best: dict[tuple[str, str], tuple] = {}
    same = dict.fromkeys(tools, True)
    for _ in range(args.repeat):
        for tool in tools:  # tools take turns, as in `throughput`
            cmd = worker_cmd(args, "--string-worker", tool)
            run = run_child(cmd, thread_env(1), 3600)
            if run["rc"] != 0 or not run["results"]:
                err = (run["stderr"].strip().splitlines() or [""])[-1][:200]
                raise SystemExit(f"{tool} one-string child failed: {err}")
            for r in run["results"]:
                ok = (r["n_ids"], r["checksum"]) == (len(refs[tool]), sums[tool])
                same[tool] = same[tool] and ok
                k = (tool, r["kind"])
                if k not in best or r["secs"] < best[k][0]:
                    best[k] = (r["secs"], r["others_pct"], r["dtype"])
    for tool in tools:
        call = "encode_to_numpy(str)" if tool == "bytepair" else "encode(str)"
        what = "EOTs included" if tool == "bytepair" else "EOTs as text"
        for kind, how in (("cold", "a new tokenizer"), ("warm", "the same string again")):
            secs, others, dtype = best[tool, kind]
            note = f"one string, {what}, dtype {dtype}, best of {args.repeat}, {kind}: {how}"
            rows.append(row(tool, call, 1, n, secs, len(refs[tool]), note, tt["mb_s"]))
            rows[-1]["others_pct"] = others
        ref_name = "encode" if tool == "bytepair" else "encode_ordinary"
        checks.append(
            f"{tool} {call} ids == tiktoken.{ref_name} (cold and warm): {yes_no(same[tool])}"
        )
    return rows, checks


def string_worker(args) -> None:
    """Child: one tool's cold and warm encode of the big string (see `string_rows`)."""
    docs, _, warm = load_all_docs(args)
    text = EOT.join(docs)
    if args.string_worker == "bytepair":
        tok = load_bytepair()
        tok.encode_to_numpy(warm[0] + EOT + warm[1])
        call = tok.encode_to_numpy
    else:
        import tiktoken

        tok = gigatoken_tokenizer(tiktoken.get_encoding("gpt2"))
        tok.encode(warm[0])
        call = tok.encode
    for kind in ("cold", "warm"):
        ids, t = timed(lambda: call(text))
        emit(
            kind=kind,
            secs=t.s,
            others_pct=t.others_pct,
            n_ids=len(ids),
            checksum=checksum(ids, 0),
            dtype=str(ids.dtype),
        )
        del ids


def timed(fn) -> tuple:
    """`fn()` timed once: (its result, the Timer)."""
    gc.collect()
    with Timer() as t:
        out = fn()
    return out, t


def stream_rows(enc, corpus: str, threads: int, check: bool) -> tuple[list[dict], list[str]]:
    """encode_iterable over the whole file in a fresh child; optionally check its ids."""
    print("  encode_iterable streaming child over the whole file ...", flush=True)
    cmd = [sys.executable, os.path.abspath(__file__), "--stream-worker", corpus]
    run = run_child(cmd, thread_env(threads), 7200)
    if run["rc"] != 0 or not run["results"]:
        err = (run["stderr"].strip().splitlines() or [""])[-1][:200]
        return [], [f"encode_iterable child FAILED rc={run['rc']}: {err}  <-- MISMATCH"]
    s = run["results"][0]
    growth = (s["peak_mb"] if s["peak_mb"] is not None else float("nan")) - s["rss_before_mb"]
    verdict = "OK" if growth < STREAM_GOAL_MB else "OVER"
    note = (
        f"RSS {s['rss_before_mb']:.0f} MB before, peak +{growth:.1f} MB ({verdict}: goal "
        f"< {STREAM_GOAL_MB} MB); child peak RSS {s['process_peak_mb']:.0f} MB"
    )
    size = os.path.getsize(corpus)
    rows = [row("bytepair", "encode_iterable(file)", None, size, s["inner_s"], s["n_ids"], note)]
    rows[0]["others_pct"] = run["others_pct"]  # over the whole child, setup included
    if not check:
        return rows, []
    print("  tiktoken over the whole file to check the stream ...", flush=True)
    n_ref, sum_ref = tiktoken_stream_reference(enc, corpus, threads)
    same = (n_ref, sum_ref) == (s["n_ids"], s["checksum"])
    what = "encode_iterable ids == tiktoken.encode(whole file) (count + weighted checksum)"
    counts = "" if same else f" ({s['n_ids']:,} ids vs {n_ref:,})"
    return rows, [f"{what}: {yes_no(same)}{counts}"]


def report(rows: list[dict], checks: list[str], corpus: str) -> None:
    same_threads = {
        r["threads"]: r["mb_s"]
        for r in rows
        if r["tool"] == "tiktoken" and r["call"].startswith("encode_ordinary")
    }
    for r in rows:
        base = r["base_mb_s"] or same_threads.get(r["threads"])
        r["vs_tiktoken"] = r["mb_s"] / base if base else None
    keys = ["tool", "call", "threads", "mb", "mb_s", "vs_tiktoken", "tokens", "others_pct", "note"]
    print_table(
        ["tool", "call", "threads", "MB", "MB/s", "vs tiktoken", "tokens", "others %", "notes"],
        [[r[k] for k in keys] for r in rows],
        title=f"Encoding, GPT-2 vocab, {os.path.basename(corpus)}; MB = 1e6 bytes of "
        "text; vs tiktoken = MB/s / tiktoken's MB/s with the same threads "
        "(encode_to_numpy: / tiktoken.encode of the same string); others % = share of "
        "the machine's CPU used by other processes meanwhile (noise)",
    )
    print()
    for c in checks:
        print(c)


def load_tokenizers(threads: int):
    """tiktoken gpt2, HF BPE and bytepair (None if not importable), all from GPT-2's files."""
    os.environ.update(thread_env(threads))  # before tokenizers builds its thread pool
    import tiktoken
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    enc = tiktoken.get_encoding("gpt2")
    hf = Tokenizer(models.BPE.from_file(str(GPT2_VOCAB), str(GPT2_MERGES)))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # GPT-2 regex
    hf.decoder = decoders.ByteLevel()
    bp_error = bytepair_import_error()
    if bp_error:
        print(f"bytepair not importable: {bp_error} -- bytepair rows skipped", flush=True)
        return enc, hf, None
    return enc, hf, load_bytepair()


def load_bytepair():
    """bytepair's GPT-2 tokenizer, from GPT-2's files."""
    import bytepair

    return bytepair.Tokenizer.from_files(GPT2_VOCAB, GPT2_MERGES, special_tokens=[EOT])


def id_checks(enc, hf, tok, rows, docs, hf_docs, threads: int) -> list[str]:
    """bytepair (every doc, and every run's token count) and HF (its slice) vs tiktoken."""
    checks = []
    if tok:
        bp_batch = functools.partial(tok.encode_batch, num_threads=threads)
        chunks = chunks_by_bytes(docs, BATCH_BYTES)
        checks.append(verify("bytepair encode_batch", bp_batch, enc, chunks, threads))
        want = rows[0]["tokens"]  # tiktoken encode_ordinary over all docs
        for r in rows:
            if r["tool"] == "bytepair" and r["tokens"] != want:
                checks.append(
                    f"bytepair {r['call']} x{r['threads']}: {r['tokens']:,} tokens "
                    f"!= tiktoken {want:,}  <-- MISMATCH"
                )

    def hf_batch(c):
        return [e.ids for e in hf.encode_batch(c, add_special_tokens=False)]

    checks.append(verify("HF", hf_batch, enc, chunks_by_bytes(hf_docs, BATCH_BYTES), threads))
    return checks


def goals(rows: list[dict]) -> dict:
    """bytepair against gigatoken in one corpus's rows, single-threaded, numpy out against
    numpy out (per document; one string, cold and warm; 8 MB batches), and bytepair's own
    batch scaling from 1 thread to the most: the ratios its speed targets are stated in."""

    def mb_s(tool, call, threads, note=""):
        found = [
            r["mb_s"]
            for r in rows
            if (r["tool"], r["threads"]) == (tool, threads)
            and r["call"].startswith(call)
            and note in r["note"]
        ]
        return found[0] if found else None

    def ratio(a, b):
        return round(a / b, 3) if a and b else None

    most = max((r["threads"] or 1 for r in rows if r["tool"] == "bytepair"), default=1)
    pairs = {
        "per doc": (("encode_to_numpy", 1, "per doc"), ("encode", 1, "per doc")),
        "one string, new": (("encode_to_numpy(str)", 1, "cold"), ("encode(str)", 1, "cold")),
        "one string, warm": (("encode_to_numpy(str)", 1, "warm"), ("encode(str)", 1, "warm")),
        "batches x1": (("encode_batch_to_numpy", 1, ""), ("encode_batch", 1, "")),
        f"batches x{most}": (("encode_batch_to_numpy", most, ""), ("encode_batch", most, "")),
    }
    out = {k: ratio(mb_s("bytepair", *bp), mb_s("gigatoken", *gt)) for k, (bp, gt) in pairs.items()}
    batch = ("bytepair", "encode_batch_to_numpy")
    out[f"bytepair x{most} / x1"] = ratio(mb_s(*batch, most), mb_s(*batch, 1))
    return out


def run_corpus(args) -> tuple[list[dict], list[str]]:
    """Every row and check of `args.corpus`, printed."""
    enc, hf, tok = load_tokenizers(args.threads)
    gt = gigatoken_tokenizer(enc)
    docs, hf_docs, _ = load_all_docs(args)
    mb, hf_mb = (sum(len(d.encode()) for d in ds) / MB for ds in (docs, hf_docs))
    print(
        f"{os.path.basename(args.corpus)}: first {mb:.1f} MB, {len(docs):,} docs "
        f"(HF: first {hf_mb:.1f} MB, {len(hf_docs):,} docs)",
        flush=True,
    )
    runs = row_runs(enc, hf, tok, gt, docs, hf_docs, args.threads, hf_note_of(args))
    rows = throughput(args, runs)
    checks = id_checks(enc, hf, tok, rows, docs, hf_docs, args.threads)
    if gt:
        chunks = chunks_by_bytes(docs, BATCH_BYTES)
        checks.append(verify("gigatoken", _gt_batch(gt, True), enc, chunks, args.threads))
    tools = [name for name, t in (("bytepair", tok), ("gigatoken", gt)) if t]
    more_rows, more_checks = string_rows(args, enc, docs, tools)
    rows, checks = rows + more_rows, checks + more_checks
    gc.collect()
    if tok and not args.no_stream:
        more_rows, more_checks = stream_rows(
            enc, args.corpus, args.threads, not args.no_stream_check
        )
        rows, checks = rows + more_rows, checks + more_checks
    report(rows, checks, args.corpus)
    return rows, checks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--corpus",
        nargs="+",
        type=common.corpus_named,
        default=[str(CORPUS_DIR / "large.txt")],
        help="names in the corpus dir or paths, each measured in turn (default: large.txt)",
    )
    ap.add_argument("--mb", type=float, default=100, help="first N MB (document boundary)")
    ap.add_argument("--hf-mb", type=float, default=10, help="HF is slow: first N MB only")
    ap.add_argument("--threads", type=int, default=2, help="threads of the batch rows")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of every row; the best")
    ap.add_argument("--no-stream", action="store_true", help="skip the encode_iterable child")
    ap.add_argument("--no-stream-check", action="store_true", help="skip the stream's id check")
    ap.add_argument("--json", help="write the rows, checks and summary here")
    ap.add_argument("--stream-worker", help=argparse.SUPPRESS)
    ap.add_argument("--row-worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--string-worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    corpora, args.corpus = args.corpus, args.corpus[0]  # the children get one corpus each
    if args.stream_worker:
        stream_worker(args.stream_worker)
        return 0
    if args.row_worker is not None:
        row_worker(args)
        return 0
    if args.string_worker:
        string_worker(args)
        return 0
    print(common.describe_env(), flush=True)
    results = {}
    for corpus in corpora:
        args.corpus = corpus
        rows, checks = run_corpus(args)
        results[os.path.basename(corpus)] = {"rows": rows, "checks": checks, "goals": goals(rows)}
        print(flush=True)
    summary = [[name, *r["goals"].values()] for name, r in results.items()]
    heads = list(next(iter(results.values()))["goals"])
    print_table(
        ["corpus", *heads],
        summary,
        title="bytepair MB/s / gigatoken MB/s (numpy out, 1 thread unless xN), and "
        "bytepair's batch scaling; all from the rows above",
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    bad = [c for r in results.values() for c in r["checks"] if "NO  <--" in c or "MISMATCH" in c]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
