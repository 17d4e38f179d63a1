"""Training and corpus encoding on a real Ray cluster (`bytepair.distributed.ray_train`,
`ray_encode`): a head and a second node, started once for the whole run; the merges and the token
files equal the local ones exactly, a task whose worker process dies is run again without lost or
doubled counts, and a bad shard fails the job naming it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_shards import EOT, _corpus

import bytepair
from bytepair.cli import main as cli_main
from bytepair.distributed import ray_tasks
from bytepair.distributed.ray_encode import encode_on_ray
from bytepair.distributed.ray_tasks import ShardError
from bytepair.distributed.ray_train import train_on_ray
from bytepair.distributed.shards import plan_shards
from bytepair.train import train_with_report

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:replaced .* invalid UTF-8")]


@pytest.fixture(scope="session")
def cluster() -> Iterator[str]:
    """A local cluster of two nodes (one CPU, 80 MB of object store each); yields its address."""
    import ray
    from ray.cluster_utils import Cluster

    nodes = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 80 << 20}
    )
    nodes.add_node(num_cpus=1, object_store_memory=80 << 20)
    ray.init(address=nodes.address, logging_level="warning")
    try:
        yield nodes.address
    finally:
        ray.shutdown()
        nodes.shutdown()


@pytest.fixture(scope="module")
def inputs(cs336_data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Six files: the CS336 corpus cut in three at safe points, generated text of many scripts
    (invalid UTF-8 too) and the TinyStories sample."""
    folder = tmp_path_factory.mktemp("inputs")
    corpus = cs336_data / "corpus.en"
    data = corpus.read_bytes()
    files = []
    for shard in plan_shards([corpus], 3, special_tokens=[EOT]):
        (r,) = shard.ranges
        files.append(folder / f"en-{shard.index}.txt")
        files[-1].write_bytes(data[r.start : r.end])
    for seed in (1, 2):
        files.append(folder / f"gen-{seed}.txt")
        files[-1].write_bytes(_corpus(seed, 40_000))
    files.append(folder / "stories" / "tiny.txt")
    files[-1].parent.mkdir()
    files[-1].write_bytes((cs336_data / "tinystories_sample.txt").read_bytes())
    return files


def test_train_equals_local(
    cluster: str, inputs: list[Path], capsys: pytest.CaptureFixture
) -> None:
    local = bytepair.train(inputs, 800, [EOT], progress=False)
    for n_shards, n_parts in [(None, None), (9, 3)]:
        tok, report = train_on_ray(
            inputs, 800, [EOT], n_shards=n_shards, n_parts=n_parts, progress=True
        )
        assert tok.merges == local.merges and tok.vocab == local.vocab
        assert report.n_bytes == sum(p.stat().st_size for p in inputs)
    assert "9/9 shards" in capsys.readouterr().err  # the driver's progress bar


def test_records_and_compressed_inputs_equal_local(cluster: str, tmp_path: Path) -> None:
    """JSON lines (plain and zstd), Parquet row groups and gzipped text, sharded on the cluster:
    the merges of a local run on the same files."""
    from test_sources import DOCS, write_all

    paths = write_all(tmp_path, DOCS * 40, row_groups=6)
    files = list(paths.values())
    local = bytepair.train(files, 400, [EOT], progress=False)
    tok, _ = train_on_ray(files, 400, [EOT], n_shards=7, progress=False)
    assert tok.merges == local.merges
    assert tok.vocab == local.vocab


def test_continued_run_equals_local(cluster: str, inputs: list[Path], tmp_path: Path) -> None:
    base = bytepair.train(inputs[:2], 400, [EOT], progress=False)
    base.save(tmp_path / "base")
    local = bytepair.train(inputs, 700, [EOT, "<|pad|>"], continue_from=base, progress=False)
    tok, _ = train_on_ray(
        inputs, 700, ["<|pad|>"], continue_from=tmp_path / "base", n_shards=4, progress=False
    )
    assert tok.merges == local.merges and tok.vocab == local.vocab
    assert tok.special_tokens == local.special_tokens


def test_shaping_options_reach_the_merge_loop(cluster: str, inputs: list[Path]) -> None:
    shaping = {"min_frequency": 3, "max_token_length": 5, "pad_vocab_to_multiple": 64}
    local, local_report = train_with_report(inputs, 800, [EOT], progress=False, **shaping)
    tok, report = train_on_ray(inputs, 800, [EOT], n_shards=3, progress=False, **shaping)
    assert tok.merges == local.merges and tok.vocab == local.vocab
    assert len(tok.vocab) % 64 == 0 and report.stop == local_report.stop


def test_killed_worker_is_retried_without_lost_or_doubled_counts(
    cluster: str, inputs: list[Path], tmp_path: Path
) -> None:
    marker = tmp_path / "died"
    local = bytepair.train(inputs, 700, [EOT], progress=False)
    tok, _ = train_on_ray(inputs, 700, [EOT], n_shards=6, _crash=(3, str(marker)), progress=False)
    assert marker.exists()  # shard 3's first attempt died (os._exit) after counting
    assert tok.merges == local.merges


def test_empty_input_is_refused_naming_it(cluster: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=r"the input is empty \(.*empty\.txt\)"):
        train_on_ray(empty, 300, n_shards=2, progress=False)


def test_bad_shard_fails_the_job_naming_it(
    cluster: str, inputs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repeated: the other tasks are not `ray.cancel`led, whose race with a task just ending
    aborted the whole test process (exit 1) at the 25th such job in a loop."""
    import ray

    cancelled = []
    monkeypatch.setattr(ray, "cancel", lambda *args, **kw: cancelled.append(args))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine text " * 100 + b"\xff" + b" more" * 100)
    for _ in range(10):
        with pytest.raises(
            ShardError, match=r"shard \d+/\d+ \(.*bad\.txt.*invalid UTF-8 at byte offset 1000"
        ):
            train_on_ray([*inputs[:3], bad], 300, errors="strict", n_shards=4, progress=False)
    assert not cancelled


def test_encode_equals_local_and_resumes(cluster: str, inputs: list[Path], tmp_path: Path) -> None:
    tok = bytepair.train(inputs, 600, [EOT], progress=False)
    local = tmp_path / "local.bin"
    bytepair.encode_files(tok, inputs, local, append_eot=True, progress=False)
    out = tmp_path / "out"
    report = encode_on_ray(tok, inputs, out, concat=tmp_path / "all.bin", append_eot=True)
    assert (tmp_path / "all.bin").read_bytes() == local.read_bytes()
    assert (tmp_path / "all.bin.json").read_bytes() == Path(f"{local}.json").read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["n_tokens"] == report.n_tokens
    assert [e["output"] for e in manifest["shards"]][-1] == "stories/tiny.txt.bin"
    # a re-run skips complete shards and redoes one whose output is gone
    (out / "gen-1.txt.bin").unlink()
    again = encode_on_ray(tok, inputs, out, concat=tmp_path / "all2.bin", append_eot=True)
    assert again.n_skipped == len(inputs) - 1
    assert (tmp_path / "all2.bin").read_bytes() == local.read_bytes()
    # another tokenizer's shards are not mixed in
    other = bytepair.train(inputs, 500, [EOT], progress=False)
    with pytest.raises(ValueError, match="another tokenizer or other options"):
        encode_on_ray(other, inputs, out)


def test_megatron_shards_concatenate(cluster: str, inputs: list[Path], tmp_path: Path) -> None:
    tok = bytepair.train(inputs, 500, [EOT], progress=False)
    opts = {"format": "megatron", "append_eot": True}
    bytepair.encode_files(tok, inputs, tmp_path / "local", progress=False, **opts)
    encode_on_ray(tok, inputs, tmp_path / "out", concat=tmp_path / "all", **opts)
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"all{suffix}").read_bytes() == (
            tmp_path / f"local{suffix}"
        ).read_bytes()


def test_cli_on_a_running_cluster(cluster: str, inputs: list[Path], tmp_path: Path) -> None:
    """`--ray ADDRESS` from a separate process, as a user runs it."""
    args = [*map(str, inputs), "--vocab-size", "600", "--special-token", EOT, "--quiet"]
    env = {**os.environ, "RAY_ADDRESS": cluster}
    cmd = [sys.executable, "-m", "bytepair.cli", "train", *args, "--ray", "auto"]
    done = subprocess.run([*cmd, "-o", tmp_path / "r"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert cli_main(["train", *args, "-o", str(tmp_path / "l")]) == 0
    for name in ("bytepair.model", "merges.txt"):
        assert (tmp_path / "r" / name).read_bytes() == (tmp_path / "l" / name).read_bytes()


def test_missing_ray_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'bytepair\[ray\]'"):
        ray_tasks.require_ray()
