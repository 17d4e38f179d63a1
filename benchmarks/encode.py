"""Encoding benchmark: bytepair against gigatoken, toktok, quicktok, splintr and tiktoken, side by
side, on the encodings gpt2, cl100k_base and o200k_base and the corpora large, code and
multilingual, with 1 thread pinned to CPU 0 and with all threads.

Matrix: MB/s of ~8 MB batches of documents into flat ids. Every row runs in a process of its own
with a new tokenizer, warmed on ~1 MB first, and is the best of `--repeat` rounds, tools taking
turns; every tool's ids are compared with tiktoken's document by document (a peer that differs
is marked inexact; exit code 1 if bytepair's differ). Then ns per call of `encode` on short
texts, and the `bytepair encode` CLI over the large corpus against the batch call, with its
peak RSS (those two sections: `encode_calls.py`). No timing asserts. `encode_gpt2.py` times
GPT-2 call by call (per document, one string, `encode_iterable`, HF).

  python benchmarks/encode.py [--encodings gpt2 cl100k_base o200k_base]
      [--corpus large code multilingual] [--mb 30] [--repeat 2] [--threads 1 2]
      [--tools bytepair gigatoken ...] [--sections matrix short cli] [--short-calls 20000]
      [--short-rounds 5] [--cli-mb 100] [--timeout 3600] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
import encode_calls
from common import (
    BATCH_BYTES,
    ENCODINGS,
    GPT2_MERGES,
    GPT2_VOCAB,
    MB,
    PEERS,
    Timer,
    available_tools,
    child_error,
    chunks_by_utf8,
    compare_docs,
    doc_sums,
    emit,
    encodings_of,
    gigatoken_calls,
    gigatoken_tokenizer,
    load_bytepair_named,
    load_docs,
    pin_to_one_core,
    print_table,
    run_child,
    thread_env,
)

MATRIX_TOOLS = ("bytepair", *PEERS)
MATRIX_CORPORA = ("large", "code", "multilingual")
THREADS_GOAL = 1.85  # bytepair's 2-thread / 1-thread batch rate on the large corpus
MATRIX_RATIOS = ("fastest peer", "bp / fastest", "bp / gigatoken", "others %")


def pack_lists(lists) -> tuple:
    """Lists of ids (tiktoken's output) as flat uint32 ids and int64 offsets."""
    import numpy as np

    lens = np.fromiter(map(len, lists), np.int64, len(lists))
    offs = np.zeros(len(lists) + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    flat = np.fromiter(itertools.chain.from_iterable(lists), np.uint32, int(offs[-1]))
    return flat, offs


def gpt2_tokenizer_json() -> str:
    """GPT-2 as a `tokenizer.json`, made with HF tokenizers from GPT-2's files (for splintr)."""
    import tempfile

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    hf = Tokenizer(models.BPE.from_file(str(GPT2_VOCAB), str(GPT2_MERGES)))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
    hf.save(path)
    return path


def matrix_encoder(tool: str, encoding: str, threads: int) -> tuple:
    """(encode, flat) for one tool: `encode(docs)` is the timed call, on a list of documents,
    with the tool's flat-ids output (tiktoken has none: lists); `flat(out)` turns that into
    (ids, int64 offsets) for the id check, untimed."""
    import numpy as np

    def same(out):
        return out

    if tool == "bytepair":
        tok = load_bytepair_named(encoding)
        return (lambda docs: tok.encode_batch_to_numpy(docs, num_threads=threads)), same
    if tool == "tiktoken":
        import tiktoken

        enc = tiktoken.get_encoding(encoding)
        return (lambda docs: enc.encode_ordinary_batch(docs, num_threads=threads)), pack_lists
    if tool == "gigatoken":
        import tiktoken

        gt = gigatoken_tokenizer(tiktoken.get_encoding(encoding))
        return gigatoken_calls(gt, threads)
    if tool == "toktok":
        import toktok

        tt = toktok._encoding(encoding)  # its loader of a built-in encoding
        return (lambda docs: tt.encode_batch_to_numpy(docs, threads, False)), same
    if tool == "quicktok":
        import quicktok

        qt = quicktok.get_encoding(encoding)
        return (lambda docs: qt.encode_batch(docs, threads=threads)), same
    if tool == "splintr":
        import splintr  # threads: RAYON_NUM_THREADS, set by thread_env

        if encoding == "gpt2":
            sp = splintr.from_json(gpt2_tokenizer_json())
        else:
            sp = splintr.Tokenizer.from_pretrained(encoding)

        def sp_encode(docs):
            ids, offs = sp.encode_batch_flat(docs)
            return np.frombuffer(ids, np.uint32), np.frombuffer(offs, np.uint64)

        return sp_encode, same
    raise SystemExit(f"unknown tool {tool!r}")


def matrix_worker(args) -> None:
    """Child: one tool, encoding, corpus and thread count. A new tokenizer, warmed on the
    corpus's first ~1 MB, encodes the first `--mb` MB in ~8 MB batches of documents; only the
    calls are timed. Per-document checksums of the ids go to the .npy file given."""
    tool, encoding, corpus, threads_s, out_path = args.matrix_worker
    threads = int(threads_s)
    pinned = pin_to_one_core(0) if threads == 1 else False
    import numpy as np

    docs = load_docs(corpus, int(args.mb * MB) if args.mb else None)[0]
    encode, flat = matrix_encoder(tool, encoding, threads)
    encode(load_docs(corpus, 1_000_000)[0])
    secs, busy, sums, dtype = 0.0, 0.0, [], ""
    for batch in chunks_by_utf8(docs, BATCH_BYTES):
        gc.collect()
        with Timer() as t:
            out = encode(batch)
        secs += t.s
        busy += t.others_pct * t.s
        ids, offs = flat(out)
        dtype = str(ids.dtype)
        sums.append(doc_sums(ids, offs, len(batch)))
        del out, ids, offs
    table = np.concatenate(sums)
    np.save(out_path, table)
    emit(
        secs=secs,
        others_pct=busy / secs if secs else 0.0,
        n_bytes=sum(len(d.encode()) for d in docs),
        n_docs=len(docs),
        n_tok=int(table[:, 0].sum()),
        dtype=dtype,
        pinned=pinned,
    )


def run_matrix(args, corpora: dict[str, str], work: str) -> dict:
    """Every (encoding, corpus, threads, tool) row, each in a process of its own, tools taking
    turns, the best of `args.repeat` rounds; each tool's ids checked against tiktoken's,
    document by document, in every round."""
    import numpy as np

    tools = available_tools(args.tools)
    if "tiktoken" not in tools:
        raise SystemExit("tiktoken is the reference of the id checks: pip install tiktoken")
    tools = [t for t in tools if t != "tiktoken"] + ["tiktoken"]  # the reference last
    groups = [(e, c, n) for e in args.encodings for c in corpora for n in args.threads]
    best: dict[tuple, dict] = {}
    diffs: dict[tuple, str | None] = {}
    failed: dict[tuple, str] = {}
    for rnd in range(args.repeat):
        print(f"round {rnd + 1} of {args.repeat}", flush=True)
        for enc, corpus, n in groups:
            files = {}
            for tool in tools:
                key = (enc, corpus, n, tool)
                if enc not in encodings_of(tool) or key in failed:
                    continue
                files[tool] = os.path.join(work, f"{tool}-{enc}-{corpus}-{n}.npy")
                cmd = [sys.executable, os.path.abspath(__file__), "--mb", str(args.mb)]
                cmd += ["--matrix-worker", tool, enc, corpora[corpus], str(n), files[tool]]
                run = run_child(cmd, thread_env(n), args.timeout)
                if run["rc"] != 0 or not run["results"]:
                    failed[key] = child_error(run)
                    print(f"  {enc} {corpus} x{n} {tool}: FAILED {failed[key]}", flush=True)
                    files.pop(tool)
                    continue
                r = run["results"][0]
                r["mb_s"] = r["n_bytes"] / MB / r["secs"]
                print(f"  {enc} {corpus} x{n} {tool}: {r['mb_s']:.1f} MB/s", flush=True)
                if key not in best or r["secs"] < best[key]["secs"]:
                    best[key] = r
            if "tiktoken" not in files:
                continue
            ref = np.load(files["tiktoken"])
            for tool, path in files.items():
                key = (enc, corpus, n, tool)
                diff = compare_docs(ref, np.load(path))
                if diffs.get(key) is None:
                    diffs[key] = diff  # the first round that differed, if any
            for path in files.values():
                os.remove(path)
    rows = []
    for (enc, corpus, n, tool), r in best.items():
        key = (enc, corpus, n, tool)
        rows.append(
            dict(
                encoding=enc,
                corpus=corpus,
                threads=n,
                tool=tool,
                mb=r["n_bytes"] / MB,
                mb_s=r["mb_s"],
                secs=r["secs"],
                tokens=r["n_tok"],
                docs=r["n_docs"],
                dtype=r["dtype"],
                pinned=r["pinned"],
                others_pct=r["others_pct"],
                exact=key in diffs and diffs[key] is None,
                difference=diffs.get(key, "not checked"),
            )
        )
    return {
        "tools": tools,
        "rows": rows,
        "failed": {" ".join(map(str, k)): v for k, v in failed.items()},
    }


def matrix_report(args, res: dict) -> list[str]:
    """The summary tables; returns the check lines (printed too)."""
    tools, rows = res["tools"], res["rows"]
    at = {(r["encoding"], r["corpus"], r["threads"], r["tool"]): r for r in rows}
    keys = list(dict.fromkeys((r["encoding"], r["corpus"]) for r in rows))
    failed = res["failed"]
    for n in args.threads:
        table = []
        for enc, corpus in keys:
            cells: list = [enc, corpus]
            mb = next(
                (at[enc, corpus, n, t]["mb"] for t in tools if (enc, corpus, n, t) in at), None
            )
            cells.append(mb)
            exact_peers = {}
            for tool in tools:
                r = at.get((enc, corpus, n, tool))
                if r is None:
                    na = enc not in encodings_of(tool)
                    cells.append(
                        "n/a" if na else "failed" if f"{enc} {corpus} {n} {tool}" in failed else ""
                    )
                elif r["exact"]:
                    cells.append(round(r["mb_s"], 1))
                    if tool != "bytepair":
                        exact_peers[tool] = r["mb_s"]
                else:
                    cells.append(f"{r['mb_s']:.1f} *")
            bp = at.get((enc, corpus, n, "bytepair"))
            fastest = max(exact_peers, key=exact_peers.__getitem__, default=None)
            ratio = bp["mb_s"] / exact_peers[fastest] if bp and fastest else None
            gt = at.get((enc, corpus, n, "gigatoken"))
            busy = [at[k]["others_pct"] for t in tools if (k := (enc, corpus, n, t)) in at]
            cells += [
                fastest or "",
                round(ratio, 2) if ratio else "",
                round(bp["mb_s"] / gt["mb_s"], 2) if bp and gt else "",
                round(max(busy), 1) if busy else "",
            ]
            table.append(cells)
        how = "1 thread, pinned to CPU 0" if n == 1 else f"{n} threads"
        print_table(
            [*("encoding", "corpus", "MB"), *tools, *MATRIX_RATIOS],
            table,
            title=f"Encoding MB/s (1e6 bytes of text per second), {how}: ~8 MB batches of "
            f"documents, flat ids out (tiktoken: lists), best of {args.repeat}; * = ids differ "
            "from tiktoken's (inexact: not counted as fastest); others % = the most any row saw of "
            "the machine's CPU used by other processes (noise)",
        )
    if len(args.threads) > 1:
        lo, hi = min(args.threads), max(args.threads)
        table = []
        for enc, corpus in keys:
            a, b = at.get((enc, corpus, lo, "bytepair")), at.get((enc, corpus, hi, "bytepair"))
            if a and b:
                ratio = b["mb_s"] / a["mb_s"]
                goal = "" if corpus != "large" else ("yes" if ratio >= THREADS_GOAL else "NO")
                table.append(
                    [enc, corpus, round(a["mb_s"], 1), round(b["mb_s"], 1), round(ratio, 2), goal]
                )
        print_table(
            [
                "encoding",
                "corpus",
                f"bytepair x{lo}",
                f"bytepair x{hi}",
                f"x{hi} / x{lo}",
                f"large >= {THREADS_GOAL}",
            ],
            table,
            title=f"bytepair's thread scaling: encode_batch_to_numpy, {hi} threads / {lo} (pinned)",
        )
    checks = []
    for tool in tools[:-1]:  # all but tiktoken, the reference
        mine = [r for r in rows if r["tool"] == tool]
        bad = [r for r in mine if not r["exact"]]
        if mine and not bad:  # a tool without these encodings has no rows to vouch for
            checks.append(f"{tool} ids == tiktoken on every document, all {len(mine)} rows: yes")
        for r in bad:
            what = "MISMATCH" if tool == "bytepair" else "inexact"
            checks.append(
                f"{tool} ids == tiktoken, {r['encoding']} {r['corpus']} x{r['threads']}: NO  "
                f"<-- {what}: {r['difference']}"
            )
    for key, err in failed.items():
        checks.append(
            f"{key}: FAILED {err}" + ("  <-- MISMATCH" if key.endswith("bytepair") else "")
        )
    print()
    for c in checks:
        print(c)
    return checks


def run_sections(args) -> int:
    """The sections of `args.sections`, printed; the exit code (1 on a bytepair mismatch)."""
    corpora = {}
    for name in args.corpus:
        path = common.corpus_named(name)
        corpora[os.path.splitext(os.path.basename(path))[0]] = path
    extra = dict(corpora)  # the short texts and the CLI also read these two
    for name in ("large", "multilingual"):
        if name not in extra:
            try:
                extra[name] = common.corpus_named(name)
            except argparse.ArgumentTypeError:
                pass
    os.environ.update(thread_env(1))  # TIKTOKEN_CACHE_DIR for this process's own tiktoken
    print(common.describe_env(), flush=True)
    import shutil
    import tempfile

    work = tempfile.mkdtemp(prefix="encode-matrix-")
    results: dict = {"args": {k: v for k, v in vars(args).items() if not k.startswith("_")}}
    checks: list[str] = []
    t0 = time.perf_counter()
    try:
        if "matrix" in args.sections:
            res = run_matrix(args, corpora, work)
            checks += matrix_report(args, res)
            results["matrix"] = res
        if "short" in args.sections:
            results["short"], more = encode_calls.run_short(args, extra)
            checks += more
        if "cli" in args.sections:
            if "large" not in extra:
                checks.append("CLI section: no large corpus  <-- MISMATCH")
            else:
                results["cli"], more = encode_calls.run_cli(args, extra, work)
                checks += more
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["checks"] = checks
    results["wall_s"] = time.perf_counter() - t0
    print(f"\n{results['wall_s'] / 60:.1f} min in all", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if any("MISMATCH" in c for c in checks) else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # `--matrix` must not pass for the hidden `--matrix-worker`
    )
    ap.add_argument(
        "--corpus",
        nargs="+",
        type=common.corpus_named,
        help="names in the corpus dir or paths (default: large code multilingual)",
    )
    ap.add_argument("--mb", type=float, default=30, help="first N MB (document boundary)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds of every row; the best")
    ap.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1, os.cpu_count() or 1],
        help="thread counts (default: 1 and the CPU count)",
    )
    ap.add_argument("--encodings", nargs="+", choices=ENCODINGS, default=list(ENCODINGS))
    ap.add_argument("--tools", nargs="+", choices=MATRIX_TOOLS, default=list(MATRIX_TOOLS))
    ap.add_argument(
        "--sections",
        nargs="+",
        choices=("matrix", "short", "cli"),
        default=["matrix", "short", "cli"],
        help="the tables to make",
    )
    ap.add_argument("--short-calls", type=int, default=20_000, help="calls per timed loop")
    ap.add_argument("--short-rounds", type=int, default=5, help="timed loops; the median")
    ap.add_argument("--cli-mb", type=float, default=100, help="the CLI's input, MB")
    ap.add_argument("--timeout", type=float, default=3600, help="per child, seconds")
    ap.add_argument("--json", help="write the rows, checks and summary here")
    ap.add_argument("--matrix-worker", nargs=5, help=argparse.SUPPRESS)
    ap.add_argument("--short-worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.matrix_worker:
        matrix_worker(args)
        return 0
    if args.short_worker:
        encode_calls.short_worker(args)
        return 0
    args.corpus = args.corpus or [common.corpus_named(c) for c in MATRIX_CORPORA]
    return run_sections(args)


if __name__ == "__main__":
    sys.exit(main())
