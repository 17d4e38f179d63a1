"""Shared test setup: the CS336 data folder, an offline tiktoken `gpt2`, `--runslow`, hypothesis.

The data folder lives beside the repository (`../shared/data/cs336`, as CI checks it out);
tests that need it fail when it is missing (a skip would hide lost coverage in CI). Nothing
here touches the network.

Ctrl-C is restored to Python's own handler when the tests start with it ignored: a shell
without job control (a script) starts `cmd &` so, every child inherits that, and the Ctrl-C
tests' processes would then run to their end instead of stopping.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

CS336_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cs336"

try:
    from hypothesis import settings
except ImportError:
    pass
else:
    settings.register_profile(
        "ci", max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "200")), deadline=None
    )
    settings.load_profile("ci")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: long-running; run with --runslow")
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow test: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(scope="session")
def cs336_data() -> Path:
    """The shared CS336 fixture folder; the test fails when it is not checked out."""
    if not CS336_DATA.is_dir():
        pytest.fail(
            f"shared data folder {CS336_DATA} is missing (check out ../shared beside the repo)"
        )
    return CS336_DATA


@pytest.fixture(scope="session")
def tiktoken_gpt2(cs336_data: Path) -> Iterator[object]:
    """tiktoken's `gpt2` encoding, loaded offline from `tiktoken_cache/` (fails without it)."""
    import tiktoken

    cache_dir = cs336_data / "tiktoken_cache"
    if not cache_dir.is_dir():
        pytest.fail(f"{cache_dir} is missing: tiktoken would need the network to load gpt2")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache_dir))
        yield tiktoken.get_encoding("gpt2")
