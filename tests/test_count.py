"""Pretokenization and counting against the oracle (`tests/reference.py`, i.e. Python `regex`).

The GPT-2 scanner is checked for every code point in a few contexts and by fuzzing; special-token
splitting, custom (fancy-regex) patterns, the chunking rule of `count_files` and invalid UTF-8 are
checked against the reference on fixed and hypothesis-generated inputs.
"""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import bytepair
import reference as ref
from bytepair import GPT2_PATTERN, count_files, count_texts
from bytepair.count import CountStats, pretokenize
from bytepair.patterns import BEHAVIORS, PRESETS, Split
from unicode_diff import diff_chars, same_text

#: The hypothesis budget of the loaded profile (HYPOTHESIS_MAX_EXAMPLES, default 200).
MAX_EXAMPLES = settings.default.max_examples
FILE_SETTINGS = settings(
    max_examples=max(10, MAX_EXAMPLES // 2),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# All but the surrogates and the code points that the oracle's Unicode classes differently
# (tests/data/unicode_diff.txt; test_unicode.py checks the documented difference there).
CODE_POINTS = [
    cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and chr(cp) not in diff_chars()
]

# Each context puts one code point where the scanner must classify it: letter vs. not ("a{c}b"),
# a space-prefixed run (" {c}{c} 1"), a contraction after it ("{c}'s": number and "other" differ
# here) and the whitespace lookahead ("x {c}\n"). Together they tell all four classes apart.
CONTEXTS = ["a{c}b", " {c}{c} 1", "{c}'s", "x {c}\n"]
DELIMITER = "\x00"

TRICKY = [
    " ",
    "\n",
    "\t",
    "\r",
    "\u00a0",
    "\u3000",
    "'",
    "s",
    "t",
    "l",
    "v",
    "e",
    "r",
    "d",
    "m",
    "a",
    "1",
    "²",
    "!",
    "é",
    "中",
    "🙃",
    "\x1c",
    "\x85",
]


def _gpt2_reference(text: str) -> list[str]:
    return regex.findall(GPT2_PATTERN, text)


def _reference_pieces(text: str, specials: list[str], pattern: str = GPT2_PATTERN) -> list[str]:
    out: list[str] = []
    for piece, is_special in ref.split_on_specials(text, specials):
        out.extend([piece] if is_special else ref.pretokenize(piece, pattern))
    return out


# --- GPT-2 scanner: exhaustive over code points --------------------------------------------------


def _mismatching_code_points(context: str, limit: int = 10) -> list[str]:
    bad = []
    for cp in CODE_POINTS:
        s = context.format(c=chr(cp))
        if pretokenize(s) != _gpt2_reference(s):
            bad.append(f"U+{cp:04X}: got {pretokenize(s)!r}, expected {_gpt2_reference(s)!r}")
            if len(bad) >= limit:
                break
    return bad


@pytest.mark.parametrize("context", CONTEXTS)
def test_gpt2_every_code_point_in_context(context: str) -> None:
    # One long string per context (the whole output is compared); on a mismatch the offending
    # code points are listed one by one.
    text = DELIMITER.join(context.format(c=chr(cp)) for cp in CODE_POINTS)
    if pretokenize(text) != _gpt2_reference(text):
        pytest.fail("\n".join(_mismatching_code_points(context)) or "mismatch on the joined text")


def test_gpt2_hand_picked() -> None:
    cases = {
        "it's  a\n\n b": ["it", "'s", " ", " a", "\n\n", " b"],
        "x 'll?'s  ": ["x", " '", "ll", "?'", "s", "  "],
        "a\tb \u3000c 12 3": ["a", "\t", "b", " ", "\u3000", "c", " 12", " 3"],
        "'S 'LL 've 're'd": ["'", "S", " '", "LL", " '", "ve", " '", "re", "'d"],
        "  \u00a0x": ["  ", "\u00a0", "x"],
        "": [],
        " ": [" "],
        "\n \n": ["\n \n"],
        "\n \nx": ["\n ", "\n", "x"],
    }
    for text, expected in cases.items():
        assert _gpt2_reference(text) == expected  # the oracle agrees with the table
        assert pretokenize(text) == expected, text


# --- GPT-2 scanner: fuzzing -----------------------------------------------------------------------


@given(same_text())
@example("\x1c\x1d\x1e\x1f \x85x")
@example("'s'll've're'd'm't' s")
def test_gpt2_fuzz_any_text(text: str) -> None:
    assert pretokenize(text) == _gpt2_reference(text)


@given(st.text(alphabet=TRICKY, max_size=60))
def test_gpt2_fuzz_tricky_alphabet(text: str) -> None:
    assert pretokenize(text) == _gpt2_reference(text)


@given(
    st.lists(
        st.sampled_from([*TRICKY, "'s", "'ll", "'ve", "'re", " 's", "  ", "\r\n"]), max_size=40
    ).map("".join)
)
def test_gpt2_fuzz_tricky_fragments(text: str) -> None:
    assert pretokenize(text) == _gpt2_reference(text)


# --- special tokens -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "specials", "expected"),
    [
        # longest wins at one position
        ("x<a><b>y<a>", ["<a>", "<a><b>"], ["x", "<a><b>", "y", "<a>"]),
        ("x<a><b>y<a>", ["<a><b>", "<a>"], ["x", "<a><b>", "y", "<a>"]),
        # leftmost wins over longer matches that start later
        ("abcd", ["bc", "abc", "cd"], ["abc", "d"]),
        ("xabcd", ["bcd", "ab"], ["x", "ab", "cd"]),
        # overlapping occurrences of one token: left to right, non-overlapping
        ("aaa", ["aa"], ["aa", "a"]),
        # adjacent to whitespace: the whitespace is text, pretokenized on its own
        ("a <|e|> b", ["<|e|>"], ["a", " ", "<|e|>", " b"]),
        ("  <|e|>\n\n<|e|><|e|>\n", ["<|e|>"], ["  ", "<|e|>", "\n\n", "<|e|>", "<|e|>", "\n"]),
        ("x<my tok>y", ["<my tok>"], ["x", "<my tok>", "y"]),
        (
            "<|endoftext|>\n\ntesting!",
            ["<|endoftext|>"],
            ["<|endoftext|>", "\n", "\n", "testing", "!"],
        ),
        # a partial special token is ordinary text
        (
            "<|endoftext| <|endoftext|>x<|endoftext",
            ["<|endoftext|>"],
            ["<|", "endoftext", "|", " ", "<|endoftext|>", "x", "<|", "endoftext"],
        ),
    ],
)
def test_special_tokens_fixed(text: str, specials: list[str], expected: list[str]) -> None:
    assert pretokenize(text, special_tokens=specials) == expected
    assert _reference_pieces(text, specials) == expected


SPECIAL_ALPHABET = "<|a> b\n"


@given(
    st.text(alphabet=SPECIAL_ALPHABET + "c", max_size=50),
    st.lists(st.text(alphabet=SPECIAL_ALPHABET, min_size=1, max_size=5), unique=True, max_size=4),
)
def test_special_tokens_fuzz(text: str, specials: list[str]) -> None:
    assert pretokenize(text, special_tokens=specials) == _reference_pieces(text, specials)


@given(
    st.lists(
        st.sampled_from(
            ["<|", "|>", "endoftext", "<|endoftext|>", "<|end", "oftext|>", " ", "\n", "a", "é"]
        ),
        max_size=30,
    ).map("".join)
)
def test_special_tokens_fuzz_fragments(text: str) -> None:
    specials = ["<|endoftext|>", "<|end", "text|>"]
    assert pretokenize(text, special_tokens=specials) == _reference_pieces(text, specials)


def test_special_tokens_are_checked() -> None:
    with pytest.raises(ValueError, match="empty"):
        pretokenize("x", special_tokens=[""])
    with pytest.raises(ValueError, match="twice"):
        pretokenize("x", special_tokens=["<s>", "<s>"])
    with pytest.raises(TypeError, match="list"):
        pretokenize("x", special_tokens="<s>")  # type: ignore[arg-type]


# --- custom patterns (fancy-regex) ----------------------------------------------------------------

ASCII_TEXT = st.text(alphabet=st.characters(max_codepoint=127), max_size=80)


@pytest.mark.parametrize("pattern", [r"\S+", r"\w+|[^\w\s]+"])
@given(text=ASCII_TEXT)
def test_custom_pattern_matches_regex(pattern: str, text: str) -> None:
    """The matches, and the text between them as pieces of its own (HF's `Split`)."""
    got = pretokenize(text, pattern=pattern)
    assert got == ref.pretokenize(text, pattern)
    assert "".join(got) == text


_STEPS = st.tuples(
    st.sampled_from([r"\d", r"\s+", r"[a-z]+", "[b]", GPT2_PATTERN]),
    st.sampled_from(BEHAVIORS),
    st.booleans(),
)


@given(text=st.text(alphabet="ab cd 12\n\t,é中", max_size=40), steps=st.lists(_STEPS, max_size=3))
def test_split_sequences_match_the_reference(text: str, steps: list[tuple[str, str, bool]]) -> None:
    """Every behaviour of HF's `Split`, inverted or not, in sequences of one to four steps."""
    pattern = (*(Split(*step) for step in steps), r"\w+")
    assert pretokenize(text, pattern=pattern) == ref.pretokenize(text, pattern)


@given(text=st.text(alphabet="ab <|>\n", max_size=40))
def test_custom_pattern_with_specials(text: str) -> None:
    specials = ["<|>", "b <"]
    got = pretokenize(text, special_tokens=specials, pattern=r"\S+")
    assert got == _reference_pieces(text, specials, r"\S+")


def test_preset_name_and_explicit_gpt2_pattern_agree() -> None:
    text = "Hello, it's 2024!  \n\tok"
    assert pretokenize(text, pattern="gpt2") == pretokenize(text, pattern=GPT2_PATTERN)


@pytest.mark.parametrize("pattern", ["(", "a**", r"\p{NoSuchClass}+"])
def test_bad_pattern_is_a_value_error_naming_it(pattern: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=regex.escape(pattern)):
        pretokenize("some text", pattern=pattern)
    path = tmp_path / "t.txt"
    path.write_text("some text")
    with pytest.raises(ValueError, match=regex.escape(pattern)):
        count_files(path, pattern=pattern)
    with pytest.raises(ValueError, match=regex.escape(pattern)):
        count_texts(["some text"], pattern=pattern)


@pytest.mark.parametrize("progress", [False, True, 1, "bar"])
def test_a_progress_that_is_not_a_callable_is_a_clear_type_error(progress, tmp_path: Path) -> None:
    # count_files takes a callback; progress=False (train()'s form) once failed deep inside with
    # "'bool' object is not callable", after reading had begun
    path = tmp_path / "t.txt"
    path.write_text("some text")
    with pytest.raises(TypeError, match="progress must be a callable"):
        count_files(path, progress=progress)
    with pytest.raises(TypeError, match="progress must be a callable"):
        count_texts(["some text"], progress=progress)
    seen: list[int] = []
    count_files(path, progress=seen.append)
    assert seen and seen[-1] == 9


def test_empty_pattern_is_refused() -> None:
    with pytest.raises(ValueError, match="pattern"):
        pretokenize("x", pattern="")


# --- counting: the chunking rule ------------------------------------------------------------------

SPECIALS = ["<|endoftext|>", "<my tok>"]
CHUNK_SIZES = [1, 2, 3, 7, 64, 4096, 1 << 24]
FRAGMENTS = [
    b"a",
    b"b",
    b"ab",
    b" ",
    b"  ",
    b"\n",
    b"\n\n",
    b"\t",
    b"<|",
    b"endoftext",
    b"|>",
    b"<|endoftext|>",
    b"<my",
    b" tok>",
    b"<my tok>",
    b"'s",
    b"1",
    b"\xc3\xa9",
    b"\xe4\xb8\xad",
    b"\xef\xbf\xbd",
]
INVALID = [b"\xff", b"\xe2\x82", b"\xf0\x9f\x99", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80"]


def _items(counts: dict[bytes, int]) -> list[tuple[bytes, int]]:
    return sorted(counts.items())


def _replacements(data: bytes) -> int:
    """How many U+FFFD Python's "replace" decoder inserts (one per error-handler call)."""
    calls = []

    def handler(err: UnicodeDecodeError) -> tuple[str, int]:
        calls.append(err.start)
        return "\ufffd", err.end

    codecs.register_error("bytepair-test-count", handler)
    data.decode("utf-8", "bytepair-test-count")
    return len(calls)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("count")


def _check_all_chunkings(
    path: Path, data: bytes, specials: list[str], preset: str = "gpt2"
) -> None:
    expected = _items(ref.count_words(data.decode("utf-8", "replace"), specials, PRESETS[preset]))
    n_replaced = _replacements(data)
    for chunk_size in CHUNK_SIZES:
        for num_threads in (1, 2):
            stats = CountStats()
            got = count_files(
                path,
                special_tokens=specials,
                num_threads=num_threads,
                chunk_size=chunk_size,
                stats=stats,
                pattern=preset,
            )
            where = f"chunk_size={chunk_size} num_threads={num_threads} data={data!r}"
            assert got.items() == expected, where
            assert stats.n_bytes == len(data), where
            assert stats.n_replaced == n_replaced, where


@FILE_SETTINGS
@given(data=st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(b"".join))
@example(data=b"a <my tok> b<|endoftext|>\n\n<my tok> <|endoftext|><|endoftext|>")
@example(data=b"<my tok><my tok> <my tok>  <my")
def test_chunking_valid_utf8(scratch: Path, data: bytes) -> None:
    path = scratch / "valid.txt"
    path.write_bytes(data)
    _check_all_chunkings(path, data, SPECIALS)


@FILE_SETTINGS
@given(data=st.lists(st.sampled_from(FRAGMENTS + INVALID), max_size=40).map(b"".join))
@example(data=b"ab\xff <my tok>\xe2\x82 x\xf0\x9f\x99")
def test_chunking_invalid_utf8_replace(scratch: Path, data: bytes) -> None:
    path = scratch / "invalid.txt"
    path.write_bytes(data)
    _check_all_chunkings(path, data, SPECIALS)


@FILE_SETTINGS
@given(data=st.lists(st.sampled_from(FRAGMENTS + INVALID), max_size=40).map(b"".join))
def test_chunking_strict(scratch: Path, data: bytes) -> None:
    path = scratch / "strict.txt"
    path.write_bytes(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        text, offset = None, e.start
    for chunk_size in (1, 3, 64, 1 << 24):
        for num_threads in (1, 2):
            if text is not None:
                got = count_files(
                    path,
                    special_tokens=SPECIALS,
                    errors="strict",
                    chunk_size=chunk_size,
                    num_threads=num_threads,
                )
                assert got.items() == _items(ref.count_words(text, SPECIALS))
            else:
                with pytest.raises(ValueError, match=rf"byte offset {offset}\b") as info:
                    count_files(
                        path,
                        special_tokens=SPECIALS,
                        errors="strict",
                        chunk_size=chunk_size,
                        num_threads=num_threads,
                    )
                assert str(path) in str(info.value)


@FILE_SETTINGS
@given(
    text=st.lists(
        st.sampled_from([*TRICKY, "<|endoftext|>", "<my tok>", "<", "|", ">"]), max_size=60
    ).map("".join)
)
def test_chunking_tricky_text(scratch: Path, text: str) -> None:
    path = scratch / "tricky.txt"
    data = text.encode("utf-8")
    path.write_bytes(data)
    _check_all_chunkings(path, data, SPECIALS)


#: The GPT-4 presets' cases too: case changes, `/` after punctuation, marks after letters
#: (Thai), title case, long s, digit runs.
PRESET_TRICKY = [
    *TRICKY,
    "A",
    "B",
    "/",
    "\u0301",
    "\u0e01",
    "\u0e35",
    "\u01c5",
    "\u017f",
    "12345",
    "'S",
    "ll",
]


@FILE_SETTINGS
@pytest.mark.parametrize("preset", ["cl100k", "o200k"])
@given(
    text=st.lists(st.sampled_from([*PRESET_TRICKY, "<|endoftext|>", "<my tok>"]), max_size=60).map(
        "".join
    )
)
def test_chunking_gpt4_presets(scratch: Path, preset: str, text: str) -> None:
    """cl100k and o200k cut files where their own rules allow (`can_cut_before` in
    rust/src/pretokenize/gpt4.rs and o200k.rs), not only at special tokens."""
    path = scratch / f"{preset}.txt"
    data = text.encode("utf-8")
    path.write_bytes(data)
    _check_all_chunkings(path, data, SPECIALS, preset)


WHITESPACE_SPECIALS = [" <s>", "\n\n", "a b", "x\t"]


@FILE_SETTINGS
@given(
    data=st.lists(
        st.sampled_from([b"a", b"b", b"x", b" ", b"\n", b"\t", b"<s>", b" <s>", b"\n\n", b"a b"]),
        max_size=40,
    ).map(b"".join)
)
def test_chunking_specials_with_whitespace(scratch: Path, data: bytes) -> None:
    # Special tokens that begin, end or consist of whitespace sit exactly where safe cuts are.
    path = scratch / "ws.txt"
    path.write_bytes(data)
    _check_all_chunkings(path, data, WHITESPACE_SPECIALS)


NON_ASCII_SPECIALS = ["中<|", "é 🙃", "\u3000\u3000"]


@FILE_SETTINGS
@given(
    text=st.lists(
        st.sampled_from(
            ["中", "<|", "🙃", "é", " ", "\n", "a", "中<|", "é 🙃", "\u00a0", "\u3000"]
        ),
        max_size=40,
    ).map("".join)
)
def test_chunking_non_ascii_specials(scratch: Path, text: str) -> None:
    # Cuts are byte offsets: they must never split a multi-byte character or special token.
    path = scratch / "non_ascii.txt"
    data = text.encode("utf-8")
    path.write_bytes(data)
    _check_all_chunkings(path, data, NON_ASCII_SPECIALS)


def test_chunking_without_special_tokens(tmp_path: Path) -> None:
    data = "the cat  sat\n\non the mat's  mat é 12 ab ".encode() * 30
    path = tmp_path / "plain.txt"
    path.write_bytes(data)
    _check_all_chunkings(path, data, [])


def test_chunking_custom_pattern(tmp_path: Path) -> None:
    # Other patterns have no safe cut inside text: chunks may end only at special tokens.
    data = ("one two<|endoftext|>three  four\n" * 50 + "five six").encode()
    path = tmp_path / "custom.txt"
    path.write_bytes(data)
    expected = _items(ref.count_words(data.decode(), ["<|endoftext|>"], r"\S+"))
    for chunk_size in (1, 7, 4096):
        for num_threads in (1, 2):
            got = count_files(
                path,
                special_tokens=["<|endoftext|>"],
                pattern=r"\S+",
                chunk_size=chunk_size,
                num_threads=num_threads,
            )
            assert got.items() == expected


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 4096, 1 << 24])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_chunking_corpus_en(cs336_data: Path, chunk_size: int, num_threads: int) -> None:
    path = cs336_data / "corpus.en"
    data = path.read_bytes()
    expected = _items(ref.count_words(data.decode("utf-8"), ["<|endoftext|>"]))
    got = count_files(
        path, special_tokens=["<|endoftext|>"], num_threads=num_threads, chunk_size=chunk_size
    )
    assert got.items() == expected
    assert got.total() == sum(n for _, n in expected)


def test_chunking_corpus_with_special_tokens(cs336_data: Path, tmp_path: Path) -> None:
    path = tmp_path / "stories.txt"
    path.write_bytes((cs336_data / "tinystories_sample.txt").read_bytes() * 3)
    text = path.read_text(encoding="utf-8")
    for specials in (["<|endoftext|>"], ["<|endoftext|>", "Once upon"]):
        expected = _items(ref.count_words(text, specials))
        for chunk_size in (1, 5, 13, 4096):
            got = count_files(path, special_tokens=specials, num_threads=2, chunk_size=chunk_size)
            assert got.items() == expected


@pytest.mark.parametrize("chunk_size", [1 << 40, 2**64 - 1])
def test_absurd_chunk_size_is_not_a_crash(tmp_path: Path, chunk_size: int) -> None:
    path = tmp_path / "hello.txt"
    path.write_text("hello world")
    code = textwrap.dedent(
        f"""
        import bytepair
        try:
            counts = bytepair.count_files({str(path)!r}, chunk_size={chunk_size}, num_threads=1)
            print(counts.items())
        except (ValueError, MemoryError) as e:
            print("clean error:", e)
        """
    )
    # In a subprocess: this once aborted the interpreter (a 1 TiB buffer allocated up front).
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "clean error" in result.stdout and "chunk_size" in result.stdout


def test_count_texts_matches_reference() -> None:
    texts = ["a cat<|endoftext|>a dog", "  x\n\n", "", "<|endoftext|>", "é中🙃 12"]
    expected: dict[bytes, int] = {}
    for t in texts:
        for word, n in ref.count_words(t, ["<|endoftext|>"]).items():
            expected[word] = expected.get(word, 0) + n
    for num_threads in (1, 2, 8):
        got = count_texts(texts, special_tokens=["<|endoftext|>"], num_threads=num_threads)
        assert got.items() == _items(expected)


@given(
    st.lists(
        st.lists(st.sampled_from([*TRICKY, "<|endoftext|>"]), max_size=20).map("".join), max_size=8
    )
)
def test_count_texts_fuzz(texts: list[str]) -> None:
    expected: dict[bytes, int] = {}
    for t in texts:
        for word, n in ref.count_words(t, ["<|endoftext|>"]).items():
            expected[word] = expected.get(word, 0) + n
    got = count_texts(texts, special_tokens=["<|endoftext|>"], num_threads=2, batch_bytes=7)
    assert got.items() == _items(expected)


def test_count_files_several_files_add_up(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("x y x")
    b.write_text(" y y")
    got = count_files([a, b], num_threads=1)
    assert got.items() == [(b" x", 1), (b" y", 3), (b"x", 1)]
    assert len(got) == 3
    assert got.total() == 5


# --- invalid UTF-8 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"ab\xff",
        b"\xff",
        b"hello \xffworld \xe2\x82 x",
        b"\xf0\x9f\x99",  # truncated 4-byte sequence at the end
        b"\xf0\x9f\x99 x",
        b"\xed\xa0\x80 surrogate",  # encoded surrogate: 3 replacements
        b"\xc0\xaf overlong",
        b"\xf4\x90\x80\x80 too big",
        b"caf\xc3\xa9 \xc3 \xa9",
        b"\xef\xbf\xbd literal \xff",
    ],
)
@pytest.mark.parametrize("chunk_size", [1, 2, 4096])
def test_invalid_utf8_replace_like_python(tmp_path: Path, data: bytes, chunk_size: int) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    stats = CountStats()
    got = count_files(path, chunk_size=chunk_size, stats=stats)
    assert got.items() == _items(ref.count_words(data.decode("utf-8", "replace"), []))
    assert stats.n_replaced == _replacements(data)


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b"\xff", 0),
        (b"ab\xff", 2),
        (b"caf\xc3\xa9 \xe2\x82", 6),
        (b"x" * 10_000 + b"\n\x80", 10_001),
        (("h\u00e9llo w\u00f6rld " * 2000).encode() + b"\xc3(", 2000 * 14),
    ],
)
@pytest.mark.parametrize("chunk_size", [1, 7, 4096, 1 << 24])
def test_invalid_utf8_strict_names_file_and_offset(
    tmp_path: Path, data: bytes, offset: int, chunk_size: int
) -> None:
    with pytest.raises(UnicodeDecodeError) as python:
        data.decode("utf-8")
    assert python.value.start == offset  # the expected offset is Python's
    path = tmp_path / "strict.txt"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=rf"byte offset {offset}\b") as info:
        count_files(path, errors="strict", chunk_size=chunk_size, num_threads=2)
    assert str(path) in str(info.value)


def test_invalid_utf8_strict_names_the_right_file(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_bytes(b"fine text\n" * 100)
    bad.write_bytes(b"ok \xfe")
    with pytest.raises(ValueError, match="byte offset 3") as info:
        count_files([good, bad], errors="strict")
    assert str(bad) in str(info.value)
    assert str(good) not in str(info.value)


def test_errors_option_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("x")
    with pytest.raises(ValueError, match="ignore"):
        count_files(path, errors="ignore")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="chunk_size"):
            count_files(path, chunk_size=bad)  # type: ignore[arg-type]
    for bad in (0, -2, True):
        with pytest.raises(ValueError, match="num_threads"):
            count_files(path, num_threads=bad)  # type: ignore[arg-type]


def test_word_counts_public_type() -> None:
    assert bytepair.WordCounts is type(count_texts(["x"]))
