"""Runs fuzz targets in child processes and reports what broke, with the input that broke it.

A child runs inputs `start..end` of one target and writes `> i` before each, so when it dies
(abort, segfault, out of memory) or stops writing for `timeout` seconds (a hang), the parent
knows the input, records it, and starts a new child after it. Contract violations (`Violation`,
or any exception the contract does not allow) are reported by the child, which goes on.
Input `i` of seed `s` is rebuilt from `random.Random(f"{target}:{s}:{i}")` alone, so a finding
is reproduced with `python tools/fuzz.py --target T --seed s --start i --examples 1`.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import encode, models, options, texts
from .common import Target, Violation

TOOL = Path(__file__).resolve().parents[2] / "tools" / "fuzz.py"


def _selftest_check(x: object, workdir: Path) -> str:
    """A target that breaks on purpose (abort, hang, violation), to test the harness itself."""
    if x == 0:
        os.abort()
    if x == 1:
        time.sleep(3600)
    if x == 2:
        raise Violation("planted violation")
    return "ok"


SELFTEST = Target("_selftest", lambda rng: rng.randrange(20), _selftest_check)
TARGETS = {
    t.name: t
    for t in [*models.TARGETS, *texts.TARGETS, *encode.TARGETS, *options.TARGETS, SELFTEST]
}
PUBLIC = [name for name in TARGETS if not name.startswith("_")]


def input_of(target: str, seed: int, index: int) -> object:
    """Input `index` of `target` under `seed`, rebuilt from the seed alone."""
    return TARGETS[target].generate(random.Random(f"{target}:{seed}:{index}"))


# --- the child ---------------------------------------------------------------------------------


def work(target: str, seed: int, start: int, end: int, memory_mb: int, root: str) -> None:
    """Runs inputs `start..end` in folders under `root` (the parent's, which removes it even
    when this process is killed) and writes the protocol lines on the original stdout
    (anything the library prints goes to stderr)."""
    if memory_mb:  # a runaway allocation then fails here instead of swapping the machine
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    check = TARGETS[target].check
    for i in range(start, end):
        proto.write(f"> {i}\n")
        proto.flush()
        workdir = Path(root) / str(i)
        workdir.mkdir()
        try:
            proto.write(f"< {check(input_of(target, seed, i), workdir)}\n")
        except Exception as e:
            proto.write("< violation\n")
            detail = f"{type(e).__name__}: {e}"[:4000]
            tb = traceback.format_exc(limit=-6)[-4000:]
            proto.write("! " + json.dumps({"index": i, "detail": detail, "tb": tb}) + "\n")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    proto.write("=\n")
    proto.flush()


# --- the parent --------------------------------------------------------------------------------


@dataclass
class Finding:
    """One input that broke the contract: kind is violation, crash or hang."""

    target: str
    seed: int
    index: int
    kind: str
    detail: str

    def report(self) -> str:
        try:
            shown = repr(input_of(self.target, self.seed, self.index))
        except Exception as e:
            shown = f"(the generator failed: {type(e).__name__}: {e})"
        shown = shown if len(shown) < 3000 else shown[:3000] + f"... ({len(shown)} chars)"
        return (
            f"{self.kind.upper()} {self.target} seed {self.seed} input {self.index}\n"
            f"  {self.detail.strip()}\n  input: {shown}\n  again: python tools/fuzz.py "
            f"--target {self.target} --seed {self.seed} --start {self.index} --examples 1\n"
        )


@dataclass
class Result:
    """What a run did: inputs tried, outcome labels counted, findings."""

    target: str
    n_inputs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def run(
    target: str,
    examples: int,
    *,
    seed: int = 0,
    start: int = 0,
    jobs: int = 1,
    timeout: float = 30.0,
    batch: int = 20_000,
    memory_mb: int = 4096,
    progress: bool = False,
) -> Result:
    """Runs `examples` inputs of `target` (from index `start`) on `jobs` child processes."""
    result = Result(target)
    began = time.monotonic()
    edges = [start + examples * j // jobs for j in range(jobs + 1)]
    drivers = [
        threading.Thread(
            target=_drive,
            args=(result, seed, lo, hi, timeout, batch, memory_mb),
            daemon=True,
        )
        for lo, hi in itertools.pairwise(edges)
    ]
    for d in drivers:
        d.start()
    for d in drivers:
        while d.is_alive():
            d.join(10)
            if progress and d.is_alive():
                rate = result.n_inputs / (time.monotonic() - began)
                print(
                    f"  {target}: {result.n_inputs:,}/{examples:,} ({rate:,.0f}/s), "
                    f"{len(result.findings)} findings",
                    file=sys.stderr,
                    flush=True,
                )
    result.seconds = time.monotonic() - began
    result.findings.sort(key=lambda f: f.index)
    return result


def _drive(
    result: Result, seed: int, lo: int, hi: int, timeout: float, batch: int, memory_mb: int
) -> None:
    """Runs `lo..hi` in children of at most `batch` inputs, a new child after each crash/hang."""
    cur = lo
    while cur < hi:
        end = min(hi, cur + batch)
        cur = _child(result, seed, cur, end, timeout, memory_mb)


def _child(result: Result, seed: int, lo: int, hi: int, timeout: float, memory_mb: int) -> int:
    """Runs one child on `lo..hi`; returns the index to go on from."""
    argv = [sys.executable, str(TOOL), "--worker", result.target, *map(str, (seed, lo, hi))]
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    root = tempfile.mkdtemp(prefix="bytepair-fuzz-", dir=shm)
    argv += [str(memory_mb), root]
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # sets of special tokens iterate alike
    try:
        return _watch(result, seed, lo, hi, timeout, argv, env)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _watch(
    result: Result, seed: int, lo: int, hi: int, timeout: float, argv: list[str], env: dict
) -> int:
    """Starts the child, follows its lines, records a crash or a hang."""
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=stderr, env=env, start_new_session=True
        )
        fd = proc.stdout.fileno()
        pending, current, done = b"", None, False
        while True:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                where = lo if current is None else current
                _found(result, seed, where, "hang", f"no progress for {timeout:.0f} s")
                return where + 1
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                current, done = _line(result, seed, line.decode(), current, done)
        code = proc.wait()
        proc.stdout.close()
        if done and code == 0:
            return hi
        stderr.seek(0)
        tail = stderr.read()[-1500:].decode(errors="replace")
        where = lo if current is None else current
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        _found(result, seed, where, "crash", f"child died ({how}); stderr: {tail}")
        return where + 1


def _line(result: Result, seed: int, line: str, current: int | None, done: bool):
    kind, _, rest = line.partition(" ")
    if kind == ">":
        with result.lock:
            result.n_inputs += 1
        return int(rest), done
    if kind == "!":
        item = json.loads(rest)
        _found(result, seed, item["index"], "violation", item["detail"] + "\n" + item["tb"])
    elif kind == "<":
        with result.lock:
            result.outcomes[rest] += 1
    elif kind == "=":
        return current, True
    return current, done


def _found(result: Result, seed: int, index: int, kind: str, detail: str) -> None:
    with result.lock:
        result.findings.append(Finding(result.target, seed, index, kind, detail))
        if kind != "violation":
            result.outcomes[kind] += 1
