"""Where the oracle's Unicode and bytepair's differ: the class of each code point under the GPT-2
pattern (other, `\\p{L}`, `\\p{N}`, `\\s`) by the Python `regex` package (`tests/reference.py`) and
by bytepair (regex-syntax), and the ranges where they differ. `tests/data/unicode_diff.txt` holds
those ranges (written by `python tools/gen_unicode_diff.py`); `test_unicode.py` recomputes them on
every run, and the differential tests draw their text outside the newer Unicode's additions
(`same_text`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import regex
from hypothesis import strategies as st

from bytepair import UNICODE_VERSION
from bytepair.count import pretokenize
from bytepair.patterns import Split

DIFF_FILE = Path(__file__).parent / "data" / "unicode_diff.txt"
#: regex 2026.11.19's Unicode version (its changelog; `regex` has no Age property to ask).
REGEX_UNICODE = "17.0.0"
NAMES = ("other", "L", "N", "S")
CLASSES = (r"\p{L}", r"\p{N}", r"\s")
#: Every code point but the surrogates, in order: position i is code point i, or i + 0x800 past
#: the surrogates.
ALL_CHARS = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def _classes(runs_of: object) -> bytes:
    """Class per code point, from `runs_of(pattern)`: the runs of `ALL_CHARS` in that class."""
    out = bytearray(0x110000)
    for code, pattern in reversed(list(enumerate(CLASSES, 1))):
        for run in runs_of(pattern):
            for ch in run:
                out[ord(ch)] = code
    return bytes(out)


def regex_classes() -> bytes:
    """The oracle's classes (the first of L, N, S that matches, as the pattern tries them)."""
    return _classes(lambda pattern: regex.findall(f"(?:{pattern})+", ALL_CHARS))


def bytepair_classes() -> bytes:
    """bytepair's classes, read off its regex-engine path (the scanner equals it on every code
    point: rust/src/unicode.rs and test_unicode.py)."""
    return _classes(lambda pattern: matches(f"(?:{pattern})+"))


def matches(pattern: str) -> list[str]:
    """bytepair's matches of `pattern` in `ALL_CHARS`, the text between them dropped (a split
    that removes what it does not match)."""
    return pretokenize(ALL_CHARS, pattern=(Split(pattern, "Removed", invert=True),))


def diff_ranges(ours: bytes, theirs: bytes) -> list[tuple[int, int, str, str]]:
    """Maximal ranges (first, last, class in `theirs`, class in `ours`) where the two differ."""
    ranges: list[tuple[int, int, str, str]] = []
    for cp in range(0x110000):
        if ours[cp] == theirs[cp]:
            continue
        key = (NAMES[theirs[cp]], NAMES[ours[cp]])
        if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2:] == key:
            ranges[-1] = (ranges[-1][0], cp, *key)
        else:
            ranges.append((cp, cp, *key))
    return ranges


def render(ranges: list[tuple[int, int, str, str]]) -> str:
    """The text of `unicode_diff.txt`."""
    n = sum(last - first + 1 for first, last, *_ in ranges)
    lines = [
        "# Code points whose class in the GPT-2 pattern (other, L = \\p{L}, N = \\p{N}, S = \\s)",
        f"# differs between the Python `regex` package {regex.__version__} (Unicode "
        f"{REGEX_UNICODE},",
        f"# the oracle tests/reference.py) and bytepair (regex-syntax, Unicode {UNICODE_VERSION}).",
        "# Written by `python tools/gen_unicode_diff.py`; tests/test_unicode.py recomputes it.",
        f"# {n} code points in {len(ranges)} ranges.",
        "# first last regex bytepair",
    ]
    lines += [f"{first:04X} {last:04X} {a} {b}" for first, last, a, b in ranges]
    return "\n".join(lines) + "\n"


def load() -> list[tuple[int, int, str, str]]:
    """The ranges of `unicode_diff.txt`."""
    ranges = []
    for line in DIFF_FILE.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            first, last, a, b = line.split()
            ranges.append((int(first, 16), int(last, 16), a, b))
    return ranges


@functools.cache
def diff_chars() -> frozenset[str]:
    """The code points the two class differently, as the file lists them."""
    return frozenset(chr(cp) for first, last, *_ in load() for cp in range(first, last + 1))


@functools.cache
def newer_chars() -> frozenset[str]:
    """The characters assigned in the oracle's Unicode but not in bytepair's: a superset of
    `diff_chars()` (test_unicode.py checks), and where other classes (`\\w`) differ too."""
    theirs = regex.findall(r"\p{Assigned}", ALL_CHARS)
    ours = set("".join(matches(r"\p{Assigned}+")))
    return frozenset(theirs).difference(ours)


def same_text(**kwargs: object) -> st.SearchStrategy[str]:
    """`st.text(**kwargs)` (no surrogates) without the characters the oracle's newer Unicode
    adds, so that it and bytepair must agree on every draw (the differential tests' text)."""
    chars = st.characters(exclude_categories=["Cs"], exclude_characters=newer_chars())
    return st.text(chars, **kwargs)
