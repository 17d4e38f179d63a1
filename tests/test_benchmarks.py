"""`benchmarks/train.py --baseline`: wrong uses are refused before anything trains, and a
baseline child that imported today's package instead of the baseline's fails, never times it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TRAIN_BENCH = Path(__file__).parents[1] / "benchmarks" / "train.py"


def _bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TRAIN_BENCH), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_baseline_without_a_package_is_an_argument_error(tmp_path: Path) -> None:
    done = _bench("--tools", "bytepair", "--baseline", str(tmp_path))
    assert done.returncode == 2
    assert "no bytepair package there" in done.stderr and str(tmp_path) in done.stderr


def test_baseline_needs_bytepair_among_the_tools(tmp_path: Path) -> None:
    (tmp_path / "bytepair").mkdir()
    (tmp_path / "bytepair" / "__init__.py").write_text("", encoding="utf-8")
    done = _bench("--tools", "gigatoken", "--baseline", str(tmp_path))
    assert done.returncode == 2
    assert "--baseline needs bytepair in --tools" in done.stderr


def test_baseline_child_refuses_todays_package(tmp_path: Path) -> None:
    """PYTHONPATH left as it is: the child imports today's bytepair, which is not in DIR."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower newest widest\n", encoding="utf-8")
    env = {**os.environ, "BYTEPAIR_BASELINE": str(tmp_path)}
    worker = ["--worker", "bytepair-baseline", "--corpus", str(corpus), "--threads", "1"]
    done = _bench(*worker, "--vocab-size", "260", "--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 1
    assert "--baseline: imported" in done.stderr and "not a package in" in done.stderr
    assert not (tmp_path / "out").exists()
