"""Shared test setup: the reference data (`testdata.py`), an offline tiktoken, `--runslow`,
hypothesis.

Nothing here touches the network: tiktoken reads its encodings from a cache folder filled at
the start of the run from `tests/data/` and the test extra (`TIKTOKEN_CACHE_DIR`, set for the
whole run so that CLI tests in child processes load presets offline too).

Ctrl-C is restored to Python's own handler when the tests start with it ignored: a shell
without job control (a script) starts `cmd &` so, every child inherits that, and the Ctrl-C
tests' processes would then run to their end instead of stopping.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

import testdata

#: tiktoken encodings whose files `pytest_configure` put in the offline cache.
_TIKTOKEN_READY: set[str] = set()


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
    if os.environ.get("BYTEPAIR_EXPECT_INSTALLED") == "1":
        import bytepair

        if "site-packages" not in bytepair.__file__:
            raise pytest.UsageError(f"testing an installed bytepair, found {bytepair.__file__}")
    cache = Path(tempfile.mkdtemp(prefix="bytepair-tiktoken-"))
    config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    _TIKTOKEN_READY.update(testdata.fill_tiktoken_cache(cache))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow test: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(scope="session")
def cs336_data() -> Path:
    """The CS336 fixture folder that ships in `tests/data/cs336`."""
    testdata.cs336_file("corpus.en")
    return testdata.CS336


@pytest.fixture(scope="session")
def tiktoken_ready() -> set[str]:
    """The tiktoken encodings that load offline in this run (see `pytest_configure`)."""
    return _TIKTOKEN_READY


def _tiktoken(name: str, ready: set[str]) -> object:
    if name not in ready:
        testdata.missing(f"tiktoken's {name} encoding", testdata.how_to_get(name))
    import tiktoken

    return tiktoken.get_encoding(name)


@pytest.fixture(scope="session")
def tiktoken_gpt2(tiktoken_ready: set[str]) -> object:
    """tiktoken's `gpt2` encoding, loaded offline."""
    return _tiktoken("gpt2", tiktoken_ready)


@pytest.fixture(scope="session", params=["cl100k_base", "o200k_base"])
def tiktoken_gpt4(request: pytest.FixtureRequest, tiktoken_ready: set[str]) -> object:
    """tiktoken's `cl100k_base` and `o200k_base` encodings, loaded offline, in turn."""
    return _tiktoken(request.param, tiktoken_ready)
