"""Shared helpers for the benchmark scripts: corpus loading, timing, memory, child processes,
tables, and the encoders the encoding scripts share.

Standard library only at import (numpy and the tokenizers are imported inside the functions
that need them), so `train.py` workers start fast and their peak RSS is mostly the library
under test. Not collected by pytest; nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

EOT = "<|endoftext|>"
GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

CORPUS_DIR = Path(os.environ.get("BYTEPAIR_CORPUS_DIR", "/work/cache/corpus"))
REPO = Path(__file__).resolve().parents[1]
#: The maintainers' folder beside the clone: peers' scripts (`bench/`) and an offline tiktoken
#: cache. Without it, tiktoken downloads its files once (or reads TIKTOKEN_CACHE_DIR).
SHARED = Path(os.environ.get("BYTEPAIR_SHARED_DIR", REPO.parent / "shared"))
CS336_DATA = REPO / "tests" / "data" / "cs336"
GPT2_VOCAB = CS336_DATA / "gpt2_vocab.json"
GPT2_MERGES = CS336_DATA / "gpt2_merges.txt"
TIKTOKEN_CACHE = os.environ.get("TIKTOKEN_CACHE_DIR") or (
    str(SHARED / "data" / "cs336" / "tiktoken_cache")
    if (SHARED / "data" / "cs336" / "tiktoken_cache").is_dir()
    else None
)
PYREF_TRAIN = SHARED / "bench" / "pyref_train.py"


def corpus_path(name: str) -> str:
    """A corpus given by path, or by name in CORPUS_DIR (`large.txt`); argparse's `type=`."""
    for path in (Path(name), CORPUS_DIR / name):
        if path.is_file():
            return str(path)
    raise argparse.ArgumentTypeError(
        f"no corpus {name!r} here or in {CORPUS_DIR}: build the corpora or set BYTEPAIR_CORPUS_DIR"
    )


MB = 1e6  # throughput is reported in 10^6 bytes, like the peer results


def thread_env(threads: int) -> dict[str, str]:
    """Environment for a child process that limits every peer's thread pool."""
    env = dict(os.environ)
    n = str(threads)
    env.update(
        RAYON_NUM_THREADS=n,
        RAYON_RS_NUM_CPUS=n,
        OMP_NUM_THREADS=n,
        TOKENIZERS_PARALLELISM="true" if threads > 1 else "false",
        PYTHONHASHSEED="0",
    )
    if TIKTOKEN_CACHE:
        env["TIKTOKEN_CACHE_DIR"] = TIKTOKEN_CACHE
    return env


def bytepair_import_error(python: str = sys.executable) -> str | None:
    """None if `import bytepair` works in a fresh interpreter, else the error's last line."""
    proc = subprocess.run(
        [python, "-c", "import bytepair"], capture_output=True, text=True, cwd="/", check=False
    )
    if proc.returncode == 0:
        return None
    lines = proc.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit code {proc.returncode}"


#: Peers every first line names, and those it names only where installed (the encoding peers
#: that `encode.py` alone uses), so that a run says which versions it measured.
ENV_PEERS = ("tiktoken", "tokenizers", "rustbpe", "gigatoken")
ENV_PEERS_IF_INSTALLED = ("toktok-rs", "quicktok-v1", "splintr-rs")

_ENV_PROBE = """
import importlib.metadata as md, os, sys, time
import bytepair._core as core
built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(core.__file__)))
def version(p):
    try:
        return md.version(p)
    except md.PackageNotFoundError:
        return None
always, if_installed = sys.argv[1].split(","), sys.argv[2].split(",")
found = [(p, version(p) or "not installed") for p in always]
found += [(p, v) for p in if_installed if (v := version(p))]
peers = ", ".join(f"{p} {v}" for p, v in found)
print(f"bytepair from {os.path.dirname(core.__file__)}, _core built {built} | {peers}")
"""


def describe_env(python: str = sys.executable) -> str:
    """One line saying what was measured: CPUs, git state, bytepair build, peer versions."""
    peers = [",".join(ENV_PEERS), ",".join(ENV_PEERS_IF_INSTALLED)]
    cmd = [python, "-c", _ENV_PROBE, *peers]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    build = proc.stdout.strip() or "bytepair not importable"
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = ["git", "-C", here, "describe", "--always", "--dirty", "--abbrev=10"]
    git = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    return f"{os.cpu_count()} CPUs | git {git or '?'} | {build}"


# ---------------------------------------------------------------- documents


def iter_docs(path: str | os.PathLike, block: int = 8 << 20):
    """Yield the pieces of `text.split(EOT)` while reading the file in blocks; line ends are
    kept as they are (no universal newlines), so the documents are exactly the file's text.
    Bytes are split and each document decoded alone: reading in text mode took 5.1 s for the
    large corpus, this 0.9 s, which would otherwise be charged to the tool being fed."""
    eot = EOT.encode("utf-8")
    rest = b""
    with open(path, "rb") as f:
        while buf := f.read(block):
            parts = (rest + buf).split(eot)
            rest = parts.pop()
            for part in parts:
                yield part.decode("utf-8")
    yield rest.decode("utf-8")


def load_docs(path, limit_bytes: int | None = None) -> tuple[list[str], int]:
    """Documents from the start of `path` up to the first boundary at or past `limit_bytes`.

    Returns the documents and their total UTF-8 size (separators not counted).
    """
    docs, n_bytes = [], 0
    for doc in iter_docs(path):
        docs.append(doc)
        n_bytes += len(doc.encode("utf-8"))
        if limit_bytes and n_bytes >= limit_bytes:
            break
    return docs, n_bytes


def batches(items, n: int):
    """Lists of `n` consecutive items from any iterable (the last may be shorter)."""
    batch = []
    for x in items:
        batch.append(x)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


def chunks_by_bytes(docs: list[str], target_bytes: int, size=len) -> list[list[str]]:
    """Group documents into consecutive batches of about `target_bytes`, each document's size
    `size(doc)` (characters by default)."""
    out, cur, n = [], [], 0
    for d in docs:
        cur.append(d)
        n += size(d)
        if n >= target_bytes:
            out.append(cur)
            cur, n = [], 0
    if cur:
        out.append(cur)
    return out


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (HF ByteLevel uses the same)."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


# ---------------------------------------------------------------- time and memory


def machine_cpu_s() -> float:
    """CPU seconds all processes (plus hypervisor steal) have used since boot: /proc/stat."""
    try:
        with open("/proc/stat") as f:
            user, nice, system, _idle, _iowait, irq, softirq, steal = map(
                int, f.readline().split()[1:9]
            )
    except (OSError, ValueError):
        return float("nan")
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def others_pct(machine_cpu_delta: float, own_cpu_s: float, wall_s: float) -> float:
    """Share of the machine's CPUs busy with something else during a run: noise indicator."""
    return max(0.0, 100 * (machine_cpu_delta - own_cpu_s) / (wall_s * (os.cpu_count() or 1)))


class Timer:
    """`with Timer() as t: ...` then `t.s` holds the elapsed seconds and `t.others_pct`
    the share of the machine's CPU that other processes used meanwhile."""

    def __enter__(self):
        self._machine0, self._own0 = machine_cpu_s(), _own_cpu_s()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.s = time.perf_counter() - self._t0
        own = _own_cpu_s() - self._own0
        self.others_pct = others_pct(machine_cpu_s() - self._machine0, own, self.s)


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _proc_status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_mb() -> float:
    """Current resident set size of this process, MiB."""
    kb = _proc_status_kb("VmRSS")
    return kb / 1024 if kb is not None else float("nan")


def peak_rss_mb() -> float:
    """Peak RSS since start or since the last `reset_peak_rss()`, MiB."""
    kb = _proc_status_kb("VmHWM")
    if kb is None:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_child(cmd: list[str], env: dict, timeout_s: float) -> dict:
    """Run `cmd` in a fresh process; collect wall time, peak RSS and RESULT lines.

    Peak RSS comes from `os.wait4` on that child alone (Linux folds in the child's
    own waited-for children, so a multi-process tool reports its largest process,
    as `/usr/bin/time -v` does). Caveat: it also counts the pre-exec copy of this
    process, so a big parent inflates it; workers report their own VmHWM for that reason,
    and `run_alone` starts a program that cannot (a CLI) from a small launcher.
    """
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        machine0, t0 = machine_cpu_s(), time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        deadline = t0 + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        child_cpu = usage.ru_utime + usage.ru_stime
        busy_elsewhere = others_pct(machine_cpu_s() - machine0, child_cpu, wall)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    results = [json.loads(line[7:]) for line in stdout.splitlines() if line.startswith("RESULT ")]
    return {
        "rc": proc.returncode,
        "wall_s": wall,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "cpu_s": child_cpu,
        "others_pct": busy_elsewhere,
        "results": results,
        "stdout": stdout,
        "stderr": stderr,
        "timed_out": time.perf_counter() > deadline,
    }


#: Runs argv[2:] (timeout argv[1] s), then prints a RESULT line with its wall time and peak RSS.
#: ru_maxrss of a child keeps the high-water mark of the process it was forked from (Linux
#: carries it across exec), so the program is forked from this small process, not from the
#: benchmark, whose RSS it would otherwise report as its own.
_LAUNCHER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
try:
    rc = subprocess.run(sys.argv[2:], timeout=float(sys.argv[1])).returncode
except subprocess.TimeoutExpired:
    rc = -9
wall = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print("\\nRESULT " + json.dumps(dict(rc=rc, wall_s=wall, peak_rss_mb=peak)), flush=True)
"""


def run_alone(cmd: list[str], env: dict, timeout_s: float) -> dict:
    """`run_child` for a program that reports nothing itself: its rc, wall time and peak RSS
    (its own and its children's, not this process's; see `_LAUNCHER`), measured by a launcher
    of a few MB (`python -I -S`). RESULT lines are the launcher's only."""
    launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(timeout_s), *cmd]
    run = run_child(launcher, env, timeout_s + 60)
    said = run["results"][-1] if run["rc"] == 0 and run["results"] else None
    if said is None:
        run.update(rc=run["rc"] or 1, peak_rss_mb=None)
    else:
        run.update(rc=said["rc"], wall_s=said["wall_s"], peak_rss_mb=said["peak_rss_mb"])
        run["timed_out"] = run["timed_out"] or said["rc"] == -9
    run["results"] = []
    return run


def first_difference(a, b) -> int:
    """Index of the first position where two sequences differ (or the shorter length)."""
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def emit(**fields) -> None:
    """One machine-readable result line for the parent process."""
    print("RESULT " + json.dumps(fields), flush=True)


# ---------------------------------------------------------------- tables


def fmt(x, digits: int = 2) -> str:
    if x is None or x == "":
        return ""
    if isinstance(x, float):
        if math.isnan(x):
            return "n/a"
        return f"{x:,.{digits}f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def print_table(headers: list[str], rows: list[list], title: str | None = None) -> None:
    """Plain fixed-width table: text columns left-aligned, numbers right-aligned."""
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [
        all(isinstance(r[i], (int, float)) or r[i] in (None, "") for r in rows)
        for i in range(len(headers))
    ]

    def line(items):
        return "  ".join(
            s.rjust(w) if num else s.ljust(w)
            for s, w, num in zip(items, widths, numeric, strict=True)
        ).rstrip()

    if title:
        print(f"\n{title}")
    print(line(headers))
    print(line(["-" * w for w in widths]))
    for r in cells:
        print(line(r))
    sys.stdout.flush()


# ---------------------------------------------------------------- corpora by name

#: The scripts that write the corpora a bare name can refer to.
CORPUS_BUILDERS = {
    "large": "sudo python3 benchmarks/make_corpus.py DIR (text from Debian packages)",
    "small": "sudo python3 benchmarks/make_corpus.py DIR (text from Debian packages)",
    "code": "python benchmarks/code_corpus.py",
    "multilingual": "python benchmarks/multilingual_corpus.py",
}


def corpus_named(name: str) -> str:
    """`corpus_path`, also for a bare name (`large`, `code`, `multilingual`: NAME.txt in
    CORPUS_DIR); argparse's `type=`."""
    if not Path(name).suffix and not Path(name).is_file():
        if (CORPUS_DIR / f"{name}.txt").is_file():
            return str(CORPUS_DIR / f"{name}.txt")
        if name in CORPUS_BUILDERS:
            raise argparse.ArgumentTypeError(
                f"no {name}.txt in {CORPUS_DIR}: it is written by {CORPUS_BUILDERS[name]}, "
                "or set BYTEPAIR_CORPUS_DIR"
            )
    return corpus_path(name)


def chunks_by_utf8(docs: list[str], target_bytes: int) -> list[list[str]]:
    """Group documents into consecutive batches of about `target_bytes` bytes of UTF-8 (for
    text in other scripts a character is 2-4 bytes, so characters would make larger batches)."""
    return chunks_by_bytes(docs, target_bytes, lambda d: len(d.encode("utf-8")))


def pin_to_one_core(cpu: int = 0) -> bool:
    """Run this process (and the threads it starts later) on one CPU; False if not possible."""
    try:
        os.sched_setaffinity(0, {cpu})
        return True
    except (AttributeError, OSError):
        return False


# ---------------------------------------------------------------- encoders (encode*.py)

BATCH_BYTES = 8_000_000  # every batch API gets the same ~8 MB lists of documents
ENCODINGS = ("gpt2", "cl100k_base", "o200k_base")
#: bytepair's preset (and gigatoken's pretokenizer) of each tiktoken encoding.
PRESETS = {"gpt2": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}
#: Each peer: its module, its pip package, the encodings it has.
PEERS = {
    "gigatoken": ("gigatoken", "gigatoken", ENCODINGS),
    "toktok": ("toktok", "toktok-rs", ("cl100k_base", "o200k_base")),
    "quicktok": ("quicktok", "quicktok-v1", ("cl100k_base", "o200k_base")),
    "splintr": ("splintr", "splintr-rs", ENCODINGS),
    "tiktoken": ("tiktoken", "tiktoken", ENCODINGS),
}


def gigatoken_tokenizer(enc):
    """gigatoken's tokenizer of tiktoken's encoding `enc` (gpt2, cl100k_base, o200k_base) from a
    `.tiktoken` file written from tiktoken's ranks, its split pattern named (None if gigatoken
    is not installed)."""
    try:
        import gigatoken
    except ImportError:
        print("gigatoken not installed (pip install -e .[bench]) -- its rows skipped", flush=True)
        return None
    import base64
    import tempfile

    path = os.path.join(tempfile.mkdtemp(), f"{enc.name}.tiktoken")
    with open(path, "w") as f:
        for token, rank in sorted(enc._mergeable_ranks.items(), key=lambda x: x[1]):
            f.write(f"{base64.b64encode(token).decode()} {rank}\n")
    return gigatoken.Tokenizer.from_tiktoken(path, pretokenizer=PRESETS[enc.name])


def gigatoken_calls(gt, threads: int):
    """(encode, flatten) of a gigatoken tokenizer: a batch into its awkward ragged array, as
    flat numpy ids and lengths; then (ids, offsets) as bytepair's batch call gives them."""
    import awkward as ak
    import numpy as np

    def encode(docs):
        out = gt.encode_batch(docs, parallel=threads > 1)
        return ak.to_numpy(ak.flatten(out)), ak.to_numpy(ak.num(out))

    def flat(out):
        offsets = np.zeros(len(out[1]) + 1, np.int64)
        np.cumsum(out[1], out=offsets[1:])
        return out[0], offsets

    return encode, flat


def load_bytepair_named(encoding: str):
    """bytepair's tokenizer of a tiktoken encoding, as a user gets it: the named preset."""
    from bytepair import load

    return load(PRESETS[encoding])


def available_tools(wanted) -> list[str]:
    """The tools of `wanted` that import here; a line for each one left out."""
    import importlib.util

    out = []
    for tool in wanted:
        if tool == "bytepair":
            err = bytepair_import_error()
            if err:
                print(f"bytepair not importable: {err} -- its rows skipped", flush=True)
                continue
        elif importlib.util.find_spec(PEERS[tool][0]) is None:
            print(
                f"{tool} not installed (pip install {PEERS[tool][1]}, or -e '.[bench]') -- "
                "its rows skipped",
                flush=True,
            )
            continue
        out.append(tool)
    return out


def encodings_of(tool: str) -> tuple:
    return ENCODINGS if tool == "bytepair" else PEERS[tool][2]


def doc_sums(ids, offsets, n_docs: int):
    """(n_docs, 2) uint64: each document's id count and position-weighted checksum, so that two
    tools' outputs compare document by document."""
    import numpy as np

    ids = np.asarray(ids).astype(np.uint64)
    offs = np.asarray(offsets).astype(np.int64)
    if len(offs) != n_docs + 1 or offs[0] != 0 or offs[-1] != len(ids):
        raise SystemExit(
            f"offsets do not describe {n_docs} documents of {len(ids)} ids: "
            f"{len(offs)} offsets, first {offs[:1]}, last {offs[-1:]}"
        )
    lens = np.diff(offs)
    pos = np.arange(len(ids), dtype=np.int64) - np.repeat(offs[:-1], lens)
    weighted = ids * ((pos % 65521) + 1).astype(np.uint64)
    cum = np.zeros(len(ids) + 1, np.uint64)
    np.cumsum(weighted, out=cum[1:])  # wraps modulo 2**64, the same for every tool
    return np.stack([lens.astype(np.uint64), cum[offs[1:]] - cum[offs[:-1]]], axis=1)


def compare_docs(ref, got) -> str | None:
    """None if two `doc_sums` tables are equal, else how they differ."""
    import numpy as np

    if ref.shape != got.shape:
        return f"{got.shape[0]:,} documents vs tiktoken's {ref.shape[0]:,}"
    bad = np.flatnonzero((ref != got).any(axis=1))
    if not len(bad):
        return None
    return f"{len(bad):,} of {len(ref):,} documents differ, the first #{bad[0]}"


def child_error(run: dict) -> str:
    lines = (run["stderr"].strip() or run["stdout"].strip()).splitlines()
    return f"rc={run['rc']}{' (timed out)' if run['timed_out'] else ''}: " + (
        lines[-1][:200] if lines else "no output"
    )


def yes_no(ok: bool) -> str:
    return "yes" if ok else "NO  <-- MISMATCH"
