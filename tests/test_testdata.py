"""The reference data is there, and a missing file skips, or fails when CI requires the data."""

from __future__ import annotations

import hashlib
import re

import pytest

import testdata


def test_every_listed_file_ships_with_its_hash() -> None:
    listed = re.findall(
        r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$",
        (testdata.DATA / "README.md").read_text(encoding="utf-8"),
        re.M,
    )
    assert len(listed) >= 12
    for name, sha in listed:
        path = testdata.CS336 / name if (testdata.CS336 / name).exists() else testdata.DATA / name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha, name


def test_missing_data_skips_or_fails_when_required(monkeypatch) -> None:
    monkeypatch.delenv(testdata.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"nothing\.txt is missing: get it"):
        testdata.missing("nothing.txt", "get it")
    monkeypatch.setenv(testdata.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=r"nothing\.txt is missing: get it"):
        testdata.missing("nothing.txt", "get it")
    with pytest.raises(pytest.fail.Exception, match="restore them with `git checkout"):
        testdata.cs336_file("nothing.txt")


def test_tiktoken_cache_holds_every_encoding(tmp_path, tiktoken_ready) -> None:
    """The run's offline cache has all three encodings (the test extra is installed)."""
    assert testdata.fill_tiktoken_cache(tmp_path) == tiktoken_ready
    absent = {"gpt2", *testdata.WHEEL_ENCODINGS} - tiktoken_ready
    if absent:
        testdata.missing(f"tiktoken's {sorted(absent)}", testdata.how_to_get(min(absent)))
