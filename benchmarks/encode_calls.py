"""The short-text and CLI sections of `encode.py` (their children run through `encode.py`).

Short texts: ns per `encode` call on English prose cut to 20, 100 and 200 bytes and on 100 bytes
of Chinese, each tool in a child pinned to CPU 0. The CLI: `bytepair encode` over the large
corpus's first `--cli-mb` MB against `encode_batch_to_numpy` on the same documents, with the
CLI's own peak RSS; its token file checked against the batch call's ids, document by document.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import sys
import time

from common import (
    EOT,
    MB,
    available_tools,
    child_error,
    compare_docs,
    doc_sums,
    emit,
    gigatoken_tokenizer,
    iter_docs,
    load_bytepair_named,
    pin_to_one_core,
    print_table,
    run_alone,
    run_child,
    thread_env,
    yes_no,
)

#: The script whose hidden options run these sections' children.
ENCODE_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "encode.py")
CLI_GOAL = 0.9  # `bytepair encode` MB/s / the 2-thread batch rate on the same text
SHORT_SIZES = (20, 100, 200)
SHORT_CHINESE = 100
SHORT_ENCODINGS = ("gpt2", "cl100k_base")


# ---------------------------------------------------------------- short texts


def short_strings(corpora: dict[str, str]) -> dict[str, str]:
    """English prose cut at word boundaries to at most 20, 100 and 200 bytes (the first long
    line of ASCII prose in the large corpus), and Chinese cut to at most 100 bytes (the first
    long line of Han text in the multilingual corpus, if there is one)."""

    def cut_words(line: str, n: int) -> str:
        out = ""
        for word in line.split(" "):
            more = f"{out} {word}" if out else word
            if len(more.encode()) > n:
                return out
            out = more
        return out

    def prose(line: str) -> bool:
        letters = sum(c.isalpha() or c == " " for c in line)
        return line.isascii() and letters >= 0.92 * len(line) and line.count(" ") >= 30

    out = {}
    for doc in iter_docs(corpora["large"]):
        line = next(
            (x.strip() for x in doc.splitlines() if len(x.strip()) > 240 and prose(x.strip())), None
        )
        if line:
            out.update({f"en-{n}": cut_words(line, n) for n in SHORT_SIZES})
            break
    if "multilingual" not in corpora:
        print("no multilingual corpus: the short Chinese text left out", flush=True)
        return out
    for doc in iter_docs(corpora["multilingual"]):
        for x in doc.splitlines():
            x = x.strip()
            han = sum("\u4e00" <= c <= "\u9fff" for c in x)
            if len(x.encode()) > 2 * SHORT_CHINESE and han >= 0.75 * len(x):
                chars = itertools.accumulate(len(c.encode()) for c in x)
                out[f"zh-{SHORT_CHINESE}"] = x[: sum(1 for b in chars if b <= SHORT_CHINESE)]
                return out
    print("no long line of Chinese in the multilingual corpus: left out", flush=True)
    return out


def short_worker(args) -> None:
    """Child, pinned to CPU 0: one tool's calls on each short string; ns per call, the median of
    `--short-rounds` loops of `--short-calls` calls, after 200 calls to warm up."""
    import statistics

    tool, encoding, strings_json = args.short_worker
    pin_to_one_core(0)
    strings = json.loads(strings_json)
    if tool == "bytepair":
        tok = load_bytepair_named(encoding)
        calls = [("encode", tok.encode), ("encode_ordinary", tok.encode_ordinary)]
    elif tool == "tiktoken":
        import tiktoken

        calls = [("encode_ordinary", tiktoken.get_encoding(encoding).encode_ordinary)]
    else:
        import tiktoken

        calls = [("encode", gigatoken_tokenizer(tiktoken.get_encoding(encoding)).encode)]
    n = args.short_calls
    for name, s in strings.items():
        for call, f in calls:
            ids = [int(i) for i in f(s)]
            for _ in range(200):
                f(s)
            times = []
            for _ in range(args.short_rounds):
                gc.collect()
                t0 = time.perf_counter_ns()
                for _ in itertools.repeat(None, n):
                    f(s)
                times.append((time.perf_counter_ns() - t0) / n)
            emit(string=name, call=call, ns=statistics.median(times), ids=ids)


def run_short(args, corpora: dict[str, str]) -> tuple[list[dict], list[str]]:
    strings = short_strings(corpora)
    tools = [t for t in available_tools(["bytepair", "gigatoken", "tiktoken"])]
    encodings = [e for e in SHORT_ENCODINGS if e in args.encodings] or list(SHORT_ENCODINGS)
    results, checks, failed = [], [], []
    for enc in encodings:
        for tool in tools:
            cmd = [
                sys.executable,
                ENCODE_PY,
                "--short-calls",
                str(args.short_calls),
            ]
            cmd += ["--short-rounds", str(args.short_rounds)]
            cmd += ["--short-worker", tool, enc, json.dumps(strings)]
            run = run_child(cmd, thread_env(1), args.timeout)
            if run["rc"] != 0 or not run["results"]:
                failed.append(f"short texts {enc} {tool}: FAILED {child_error(run)}")
                print(failed[-1], flush=True)
                continue
            for r in run["results"]:
                results.append(dict(encoding=enc, tool=tool, **r))
    ref = {(r["encoding"], r["string"]): r["ids"] for r in results if r["tool"] == "tiktoken"}
    bad = [
        r
        for r in results
        if (r["encoding"], r["string"]) in ref and r["ids"] != ref[r["encoding"], r["string"]]
    ]
    calls = list(dict.fromkeys((r["tool"], r["call"]) for r in results))
    at = {(r["encoding"], r["string"], r["tool"], r["call"]): r["ns"] for r in results}
    table = []
    for enc in encodings:
        for name, s in strings.items():
            cells = [enc, name, len(s.encode())]
            cells += [round(at[k]) if (k := (enc, name, *c)) in at else "" for c in calls]
            bp, tt = (
                at.get((enc, name, "bytepair", "encode")),
                at.get((enc, name, "tiktoken", "encode_ordinary")),
            )
            gt = at.get((enc, name, "gigatoken", "encode"))
            cells += [
                round(tt / bp, 2) if bp and tt else "",
                round(gt / bp, 2) if bp and gt else "",
            ]
            table.append(cells)
    print_table(
        [
            "encoding",
            "text",
            "bytes",
            *(f"{t} {c}" for t, c in calls),
            "tiktoken / bp",
            "gigatoken / bp",
        ],
        table,
        title=f"Short texts: ns per call (lower is better), 1 thread pinned, warm tokenizer, "
        f"median of {args.short_rounds} loops of {args.short_calls:,} calls; ratios: the peer's "
        "ns / bytepair encode's",
    )
    for name, s in strings.items():
        print(f"  {name}: {s!r}")
    for r in bad:
        what = "MISMATCH" if r["tool"] == "bytepair" else "inexact"
        checks.append(
            f"short {r['encoding']} {r['string']} {r['tool']} {r['call']} ids == tiktoken: "
            f"NO  <-- {what}"
        )
    if not bad and ref:
        checks.append(
            f"short texts: every call's ids == tiktoken.encode_ordinary's, {len(ref)} strings: yes"
        )
    checks += failed
    for c in checks:
        print(c)
    return results, checks


# ---------------------------------------------------------------- the CLI over a corpus


def run_cli(args, corpora: dict[str, str], work: str) -> tuple[list[dict], list[str]]:
    """`bytepair encode` (GPT-2, 2 threads) over the large corpus's first `--cli-mb` MB, written
    to a file as encode_corpus.py cuts it, against encode_batch_to_numpy with as many threads on
    the same documents, each in a fresh process, taking turns, the best of `args.repeat`. The
    CLI's ids are checked against the batch's, document by document."""
    import re
    import shutil

    import numpy as np
    from encode_corpus import _prefix

    import bytepair

    n = max(args.threads)
    text = _prefix(corpora["large"], args.cli_mb, work)
    size = os.path.getsize(text)
    model = os.path.join(work, "gpt2-model")
    tok = load_bytepair_named("gpt2")
    tok.save(model)
    eot_id = tok.encode_single_token(EOT)
    exe = shutil.which("bytepair", path=os.path.dirname(sys.executable))
    cli = (
        [exe]
        if exe
        else [sys.executable, "-c", "import sys; from bytepair.cli import main; sys.exit(main())"]
    )
    out = os.path.join(work, "cli.bin")
    sums = os.path.join(work, "cli-batch.npy")
    best_cli, best_batch, checks = None, None, []
    same = True
    print(f"CLI: {os.path.basename(text)} ({size / MB:.1f} MB), {n} threads", flush=True)
    for _ in range(args.repeat):
        cmd = [sys.executable, ENCODE_PY, "--mb", "0"]
        cmd += ["--matrix-worker", "bytepair", "gpt2", text, str(n), sums]
        run = run_child(cmd, thread_env(n), args.timeout)
        if run["rc"] != 0 or not run["results"]:
            checks.append(f"CLI section: the batch child FAILED {child_error(run)}  <-- MISMATCH")
            break
        r = run["results"][0]
        if best_batch is None or r["secs"] < best_batch["secs"]:
            best_batch = r
        cmd = [*cli, "encode", model, text, "-o", out, "--threads", str(n)]
        run = run_alone(cmd, thread_env(n), args.timeout)  # its own peak RSS, not this process's
        if run["rc"] != 0:
            checks.append(f"CLI section: bytepair encode FAILED {child_error(run)}  <-- MISMATCH")
            break
        said = re.search(r" in ([0-9.]+) s \(", run["stdout"] + run["stderr"])
        r = dict(
            wall_s=run["wall_s"],
            inner_s=float(said.group(1)) if said else None,
            peak_rss_mb=run["peak_rss_mb"],
        )
        print(
            f"  bytepair encode: {size / MB / r['wall_s']:.1f} MB/s "
            f"(peak RSS {r['peak_rss_mb']:.0f} MB), batch x{n}: "
            f"{best_batch['n_bytes'] / MB / best_batch['secs']:.1f} MB/s",
            flush=True,
        )
        if best_cli is None or r["wall_s"] < best_cli["wall_s"]:
            best_cli = r
        ids = np.asarray(bytepair.load_tokens(out))
        ends = np.flatnonzero(ids == eot_id)
        starts = np.concatenate([[0], ends + 1])
        stops = np.concatenate([ends, [len(ids)]])
        keep = np.ones(len(ids), bool)
        keep[ends] = False
        flat = ids[keep]
        offs = np.concatenate([[0], np.cumsum(stops - starts)])
        diff = compare_docs(np.load(sums), doc_sums(flat, offs, len(starts)))
        same = same and diff is None
        os.remove(out)
    if not best_cli or not best_batch:
        for c in checks:
            print(c)
        return [], checks
    batch_mb_s = best_batch["n_bytes"] / MB / best_batch["secs"]
    rows = []
    for how, secs in (
        ("whole process", best_cli["wall_s"]),
        ("its own summary", best_cli["inner_s"]),
    ):
        if secs:
            mb_s = size / MB / secs
            rows.append(
                dict(
                    call=f"bytepair encode ({how})",
                    mb=size / MB,
                    mb_s=mb_s,
                    vs_batch=mb_s / batch_mb_s,
                    peak_rss_mb=best_cli["peak_rss_mb"],
                    secs=secs,
                )
            )
    rows.append(
        dict(
            call=f"encode_batch_to_numpy x{n} (8 MB batches)",
            mb=best_batch["n_bytes"] / MB,
            mb_s=batch_mb_s,
            vs_batch=1.0,
            peak_rss_mb=None,
            secs=best_batch["secs"],
        )
    )
    print_table(
        ["call", "MB", "MB/s", "vs batch", "peak RSS MB", "s"],
        [[r["call"], r["mb"], r["mb_s"], r["vs_batch"], r["peak_rss_mb"], r["secs"]] for r in rows],
        title=f"Corpus encoding, GPT-2, {n} threads, first {args.cli_mb:g} MB of the large corpus "
        f"to a uint16 file: the CLI against the batch call (goal: >= {CLI_GOAL}x), best of "
        f"{args.repeat}; whole process = from start to exit, tokenizer loading included",
    )
    checks.append(f"bytepair encode ids == encode_batch_to_numpy on every document: {yes_no(same)}")
    for c in checks:
        print(c)
    return rows, checks
