"""The Ray path against the local one on this machine: a corpus split into shard files at
document ends, a local two-node cluster (`ray.cluster_utils.Cluster`, one CPU each), then
`train` and `encode` locally (a fresh CLI process, 2 threads) and on the cluster (this process
as the driver): time, peak RSS, others' CPU load, and whether the results are identical.

    python benchmarks/cluster.py --corpus /work/cache/corpus/large.txt --shards 32

(Named cluster.py, not ray.py: a script's folder comes first on sys.path and would shadow ray.)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

import psutil
from common import CORPUS_DIR, EOT, describe_env, machine_cpu_s, run_child

import bytepair
from bytepair.distributed.ray_encode import concatenate, encode_on_ray, file_sha256
from bytepair.distributed.ray_train import train_on_ray
from bytepair.distributed.shards import plan_shards


def split(corpus: Path, n: int, folder: Path) -> list[Path]:
    """The corpus in `n` files cut after `<|endoftext|>` (reused when present)."""
    files = [folder / f"{corpus.stem}-{k:03d}.txt" for k in range(n)]
    if (
        all(f.is_file() for f in files)
        and sum(f.stat().st_size for f in files) == corpus.stat().st_size
    ):
        return files
    folder.mkdir(parents=True, exist_ok=True)
    with open(corpus, "rb") as src:
        for shard, path in zip(plan_shards([corpus], n, special_tokens=[EOT]), files, strict=True):
            (r,) = shard.ranges
            src.seek(r.start)
            path.write_bytes(src.read(r.end - r.start))
    return files


class TreeRss:
    """Peak of the summed RSS of this process and all its descendants (the Ray processes),
    sampled every 0.1 s, and this process's own peak."""

    def __enter__(self):
        self.me, self.peak, self.driver, self._stop = psutil.Process(), 0, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, tree_rss())
            self.driver = max(self.driver, self.me.memory_info().rss)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def tree_rss() -> int:
    total = 0
    for p in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def tree_cpu_s() -> float:
    total = 0.0
    for p in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def on_cluster(label: str, work) -> tuple[object, dict]:
    """Runs `work()` as the driver; others' load = the machine's CPU less this process tree's."""
    cpu0, machine0, t0 = tree_cpu_s(), machine_cpu_s(), time.perf_counter()
    with TreeRss() as rss:
        result = work()
    wall = time.perf_counter() - t0
    own = tree_cpu_s() - cpu0
    others = max(0.0, 100 * (machine_cpu_s() - machine0 - own) / (wall * (os.cpu_count() or 1)))
    row = {
        "run": label,
        "s": wall,
        "tree_peak_mb": rss.peak / 2**20,
        "driver_peak_mb": rss.driver / 2**20,
        "others_pct": others,
    }
    print(json.dumps(row), flush=True)
    return result, row


def locally(label: str, cmd: list[str]) -> dict:
    """A CLI run in a fresh process, under /usr/bin/time: its peak RSS is then that of a child
    of a small process (a child forked from this one would count its copy of this process)."""
    timed = ["/usr/bin/time", "-f", "MAXRSS_KB %M", sys.executable, "-m", "bytepair.cli", *cmd]
    res = run_child(timed, dict(os.environ), 3600)
    assert res["rc"] == 0, res["stderr"]
    lines = res["stderr"].splitlines()
    peak_kb = next(int(x.split()[1]) for x in reversed(lines) if x.startswith("MAXRSS_KB"))
    stages = next((x.split("time: ")[1] for x in lines if "time: " in x), "")
    row = {
        "run": label,
        "s": res["wall_s"],
        "peak_mb": peak_kb / 1024,
        "others_pct": res["others_pct"],
        "stages": stages,
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR / "large.txt")
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--vocab-size", type=int, default=10_000)
    ap.add_argument("--work", type=Path, default=Path("/work/cache/ray-bench"))
    ap.add_argument("--object-store-mb", type=int, default=512)
    args = ap.parse_args()
    print(describe_env())
    files = split(args.corpus, args.shards, args.work / "shards")
    names = [str(f) for f in files]
    tok_dir, out = args.work / "local-tok", args.work / "out"
    vocab = ["--vocab-size", str(args.vocab_size), "--special-token", EOT]
    local_bin = args.work / "local.bin"
    train_local = ["train", *names, *vocab, "-o", str(tok_dir)]
    encode_local = ["encode", str(tok_dir), *names, "-o", str(local_bin), "--quiet"]
    locally("train local (2 threads)", train_local)
    local = bytepair.load(tok_dir)
    locally("encode local (2 threads)", encode_local)

    import ray
    from ray.cluster_utils import Cluster

    store = args.object_store_mb << 20
    head = {"num_cpus": 1, "object_store_memory": store}
    nodes = Cluster(initialize_head=True, head_node_args=head)
    nodes.add_node(num_cpus=1, object_store_memory=store)
    t0 = time.perf_counter()
    ray.init(address=nodes.address, logging_level=logging.WARNING)
    print(json.dumps({"run": "connect", "s": time.perf_counter() - t0}))
    try:
        n = args.shards
        print(json.dumps({"run": "idle cluster", "tree_rss_mb": tree_rss() / 2**20}), flush=True)
        runs = [  # the first on new workers (each imports bytepair), the others on warm ones
            (f"train ray ({n} files, cold workers)", names),
            (f"train ray ({n} files)", names),
            (f"train ray (1 file, {n} ranges)", [str(args.corpus)]),
        ]
        for label, inputs in runs:
            (tok, report), _ = on_cluster(
                label,
                lambda inputs=inputs: train_on_ray(
                    inputs, args.vocab_size, [EOT], n_shards=args.shards, progress=False
                ),
            )
            same = tok.merges == local.merges
            print(json.dumps({"run": label, "identical_merges": same, "stages": report.seconds}))
            locally("train local again (others' load changes)", train_local)
        for _ in range(2):
            for f in sorted(out.glob("**/*"), reverse=True):
                f.unlink() if f.is_file() else f.rmdir()
            on_cluster(f"encode ray ({n} tasks)", lambda: encode_on_ray(local, names, out))
            on_cluster("concatenate (driver)", lambda: concatenate(out, args.work / "ray.bin"))
            same = file_sha256(args.work / "ray.bin") == file_sha256(local_bin)
            print(json.dumps({"run": "encode", "identical_bin": same}), flush=True)
            locally("encode local again", encode_local)
    finally:
        ray.shutdown()
        nodes.shutdown()


if __name__ == "__main__":
    main()
