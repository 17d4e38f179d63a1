"""Tests of `bytepair.Tokenizer` encoding and decoding (docs/spec.md §2).

Two oracles: tiktoken's `gpt2` (loaded offline) for the GPT-2 files, and `tests/reference.py` for
tokenizers trained by bytepair and for cases tiktoken cannot express (overlapping special tokens,
subsets of allowed special tokens). Hypothesis sizes come from HYPOTHESIS_MAX_EXAMPLES (conftest).
"""

from __future__ import annotations

import inspect
import itertools
import pickle
import random
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bytepair
import reference as ref
from bytepair import _stream as bp_stream
from unicode_diff import same_text

EOT = "<|endoftext|>"
EOT2 = EOT + EOT
PAD = "<pad>"
TRAIN_SPECIALS = [EOT, EOT2, PAD]

FIXTURE_FILES = [
    "address.txt",
    "german.txt",
    "tinystories_sample.txt",
    "special_token_double_newlines_non_whitespace.txt",
    "special_token_trailing_newlines.txt",
    "corpus.en",
]

HELLO = "Héllò hôw <|endoftext|> are ü? 🙃"

HAND_STRINGS = [
    "",
    " ",
    "a",
    HELLO,
    "I'll you've we're don't she's I'm he'd they'LL DON'T O'Neil's '' 's",
    "a   b\t\tc  \n  d   ",
    "\n\n\n",
    "   leading and trailing   ",
    " \t \r\n \u00a0\u3000x",
    "1234567890 3.14159 1,000,000 ١٢٣ ⅷ 12ab34",
    "<|endoftext|><|endoftext|> <|endoftext| <|endoftext|>x<|endoftext|>\n",
    "<|endoftext|><|endoftext|><|endoftext|>",
    "你好\uff0c世界\uff01 안녕하세요 Привет, мир! مرحبا",
    "e\u0301 👨\u200d👩\u200d👧\u200d👦 🇫🇷 $$$ --- ...!!!",
    "\x00\x01\x7f\ufeff\u2028\u0085",
]

# Pieces that stress the pretokenizer, the special-token matcher and the merges.
TRICKY_PIECES = [
    " ", "  ", "   ", "\n", "\n\n", "\t", "\r", "\r\n", "\u00a0", "\u3000", "\x0b", "\x0c",
    "\u2028", "\u0085", "\u200b",
    "0", "7", "123", "٣", "Ⅷ", "½",
    "'s", "'re", "'ll", "'t", "'ve", "'m", "'d", "'S", "'", "''",
    EOT, "<|", "|>", "endoftext", "<|endo", "ftext|>", "<", "|", ">", PAD, "<pa", "d>",
    "🙃", "👨\u200d👩\u200d👧", "🇫🇷", "你好", "世界", "e\u0301", "\u0301", "\u0308",
    "a", "aa", "ab", "Z", "é", "ß", "x", "the", " the", ".", "!", "?", "$", "-", "…", "\ufeff",
    "\x00", "\x7f",
]  # fmt: skip

tricky_text = st.lists(st.sampled_from(TRICKY_PIECES), max_size=40).map("".join)
any_text = st.one_of(st.text(), tricky_text)
# For the oracle: without the characters its newer Unicode adds (test_unicode.py).
oracle_text = st.one_of(same_text(), tricky_text)
SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large]


def _pieces_at(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(text)]
    return [text[i:j] for i, j in itertools.pairwise(bounds)]


@st.composite
def split_text(draw, texts=any_text) -> list[str]:
    """A text cut into pieces at random places (empty pieces included)."""
    text = draw(texts)
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=12))
    pieces = _pieces_at(text, cuts)
    if draw(st.booleans()):
        pieces.insert(draw(st.integers(0, len(pieces))), "")
    return pieces


def _surrogates_fixed(text: str) -> str:
    """What tiktoken (and bytepair) encode for a str holding lone surrogates."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2(cs336_data: Path) -> bytepair.Tokenizer:
    return bytepair.Tokenizer.from_files(
        cs336_data / "gpt2_vocab.json", cs336_data / "gpt2_merges.txt", [EOT]
    )


@pytest.fixture(scope="module")
def gpt2_tables(gpt2: bytepair.Tokenizer) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """GPT-2's vocab and merges as the reference takes them."""
    return gpt2.vocab, gpt2.merges


def _training_corpus(cs336_data: Path) -> list[str]:
    rng = random.Random(1234)
    texts = [(cs336_data / name).read_text(encoding="utf-8") for name in FIXTURE_FILES[:3]]
    texts += HAND_STRINGS
    texts += ["".join(rng.choice(TRICKY_PIECES) for _ in range(60)) for _ in range(200)]
    texts += ["".join(rng.choice("ab") for _ in range(rng.randint(1, 300))) for _ in range(300)]
    texts += ["a" * n for n in (2, 3, 5, 8, 16, 33, 64, 100, 257)]
    texts += [" " * n + "x" for n in (1, 2, 7, 40)] + ["\n" * n for n in (1, 2, 3, 9)]
    return texts


@pytest.fixture(scope="module")
def trained(cs336_data: Path) -> bytepair.Tokenizer:
    """A bytepair-trained tokenizer with overlapping special tokens and rich a/b merges."""
    tok = bytepair.train_from_iterator(
        _training_corpus(cs336_data), 900, TRAIN_SPECIALS, progress=False
    )
    assert len(tok.merges) > 400
    return tok


def _ref_encode(tok: bytepair.Tokenizer, text: str, specials=None) -> list[int]:
    specials = list(tok.special_tokens) if specials is None else list(specials)
    return ref.encode(text, tok.vocab, tok.merges, specials, pattern=tok.pattern)


# --- parity with tiktoken --------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_fixture_files_match_tiktoken(name, cs336_data, gpt2, tiktoken_gpt2) -> None:
    text = (cs336_data / name).read_text(encoding="utf-8")
    expected = tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.encode(text) == expected
    assert gpt2.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)
    assert gpt2.decode(expected) == text


@pytest.mark.parametrize("text", HAND_STRINGS)
def test_hand_strings_match_tiktoken(text, gpt2, tiktoken_gpt2) -> None:
    assert gpt2.encode(text) == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)


@given(text=any_text)
@settings(suppress_health_check=SUPPRESS)
def test_random_text_matches_tiktoken(gpt2, tiktoken_gpt2, text: str) -> None:
    assert gpt2.encode(text) == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)


@given(text=st.text(st.characters(codec="utf-8", max_codepoint=0x7F), max_size=200))
def test_random_ascii_matches_tiktoken(gpt2, tiktoken_gpt2, text: str) -> None:
    assert gpt2.encode(text) == tiktoken_gpt2.encode(text, allowed_special="all")


def test_hello_exact_ids(gpt2, tiktoken_gpt2) -> None:
    ids = gpt2.encode(HELLO)
    assert ids == tiktoken_gpt2.encode(HELLO, allowed_special="all")
    assert ids.count(50256) == 1
    assert gpt2.decode(ids) == HELLO
    assert [gpt2.decode([i]) for i in ids] == [tiktoken_gpt2.decode([i]) for i in ids]


def test_strict_mode_matches_tiktoken_default(gpt2, tiktoken_gpt2) -> None:
    """tiktoken's default (allowed=set(), disallowed="all") is a keyword pair away."""
    with pytest.raises(ValueError, match="disallowed special token"):
        tiktoken_gpt2.encode(HELLO)
    with pytest.raises(ValueError, match="disallowed special token '<\\|endoftext\\|>'"):
        gpt2.encode(HELLO, allowed_special=set(), disallowed_special="all")
    plain = "no special token here"
    assert gpt2.encode(plain, allowed_special=set(), disallowed_special="all") == (
        tiktoken_gpt2.encode(plain)
    )


# --- special tokens ---------------------------------------------------------------------------


def test_overlapping_specials_longest_wins_gpt2(gpt2_tables) -> None:
    vocab, merges = gpt2_tables
    gpt2_vocab = {i: b for i, b in vocab.items() if i < 50256}
    specials = [EOT, EOT2]
    tok = bytepair.Tokenizer(gpt2_vocab, merges, specials)
    assert tok.special_tokens == {EOT: 50256, EOT2: 50257}
    for text in [
        EOT2,
        EOT * 3,
        "a" + EOT * 4 + "b",
        f"x {EOT} {EOT2}{EOT}y",
        "<|endoftext|<|endoftext|>|>",
        HELLO,
    ]:
        assert tok.encode(text) == ref.encode(text, gpt2_vocab, merges, specials), text
    assert tok.encode(EOT * 3) == [50257, 50256]
    # Order of the list does not matter: still the longest match.
    tok_rev = bytepair.Tokenizer(gpt2_vocab, merges, [EOT2, EOT])
    assert tok_rev.encode(EOT * 3) == [tok_rev.special_tokens[EOT2], tok_rev.special_tokens[EOT]]


def test_overlapping_specials_leftmost_wins() -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    tok = bytepair.Tokenizer(vocab, [], ["ab", "bc", "abcd"])
    for text in ["abc", "bcab", "abcd", "xabcde", "abab", "bcbc", "aabcdd"]:
        assert tok.encode(text) == ref.encode(text, vocab, [], ["ab", "bc", "abcd"]), text


@given(text=tricky_text)
@settings(suppress_health_check=SUPPRESS)
def test_trained_matches_reference(trained, text: str) -> None:
    assert trained.encode(text) == _ref_encode(trained, text)
    assert trained.encode_ordinary(text) == _ref_encode(trained, text, [])


@given(text=same_text(max_size=80))
@settings(suppress_health_check=SUPPRESS)
def test_trained_matches_reference_on_unicode(trained, text: str) -> None:
    assert trained.encode(text) == _ref_encode(trained, text)


@given(word=st.text(alphabet="ab", min_size=1, max_size=400), lead=st.sampled_from(["", " "]))
@settings(suppress_health_check=SUPPRESS)
def test_trained_long_words_match_reference(trained, word: str, lead: str) -> None:
    """Words around the short/long algorithm and cache thresholds (64, 128 bytes)."""
    text = lead + word
    assert trained.encode(text) == _ref_encode(trained, text)


@st.composite
def random_bpe(draw) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Arbitrary merges over a, b, c (not in creation order; repeats allowed)."""
    tokens = [b"a", b"b", b"c"]
    merges = []
    for _ in range(draw(st.integers(0, 40))):
        left, right = draw(st.sampled_from(tokens)), draw(st.sampled_from(tokens))
        merges.append((left, right))
        if left + right not in tokens:
            tokens.append(left + right)
    vocab = {i: bytes([i]) for i in range(256)}
    vocab |= {256 + i: t for i, t in enumerate(tokens[3:])}
    return vocab, draw(st.permutations(merges))


@given(bpe=random_bpe(), word=st.text(alphabet="abc", max_size=300))
@settings(suppress_health_check=SUPPRESS)
def test_arbitrary_merges_match_reference(bpe, word: str) -> None:
    """GPT-2's bpe() semantics (lowest rank first, all occurrences left to right) for any merge
    list, on words both shorter and longer than the core's short-word limit."""
    vocab, merges = bpe
    tok = bytepair.Tokenizer(vocab, merges)
    assert tok.encode(word) == ref.encode(word, vocab, merges)


@pytest.mark.parametrize("n", [1, 2, 3, 63, 64, 65, 127, 128, 129, 256, 1000])
@pytest.mark.parametrize("unit", ["a", "ab", "aab", " a"])
def test_runs_match_reference_at_thresholds(trained, n: int, unit: str) -> None:
    text = " " + "a" * n if unit == " a" else unit * n
    assert trained.encode(text) == _ref_encode(trained, text)


@given(text=tricky_text, subset=st.sets(st.sampled_from(TRAIN_SPECIALS)))
@settings(suppress_health_check=SUPPRESS)
def test_special_ids_only_when_allowed(trained, text: str, subset: set[str]) -> None:
    special_ids = set(trained.special_tokens.values())
    allowed_ids = {trained.special_tokens[t] for t in subset}
    ids = trained.encode(text, allowed_special=subset)
    assert (set(ids) & special_ids) <= allowed_ids
    ordered = [t for t in TRAIN_SPECIALS if t in subset]
    assert ids == _ref_encode(trained, text, ordered)
    if not subset:
        assert ids == trained.encode_ordinary(text)


def test_allowed_and_disallowed_special(gpt2, tiktoken_gpt2) -> None:
    text = f"a {EOT} b"
    # strict mode raises, naming the token
    with pytest.raises(ValueError, match="disallowed special token"):
        gpt2.encode(text, allowed_special=set(), disallowed_special="all")
    with pytest.raises(ValueError, match="disallowed special token"):
        gpt2.encode(text, allowed_special=set(), disallowed_special={EOT})
    with pytest.raises(ValueError, match="disallowed special token"):
        gpt2.encode_batch(["fine", text], allowed_special=set(), disallowed_special="all")
    with pytest.raises(ValueError, match="disallowed special token"):
        gpt2.encode_to_numpy(text, allowed_special=set(), disallowed_special="all")
    # nothing allowed, nothing disallowed: special text is ordinary text
    ordinary = gpt2.encode(text, allowed_special=set(), disallowed_special=())
    assert ordinary == gpt2.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)
    assert 50256 not in ordinary
    # default: every special token of the tokenizer is special
    assert 50256 in gpt2.encode(text)
    assert gpt2.encode(text, allowed_special={EOT}) == gpt2.encode(text)
    assert gpt2.encode(text, allowed_special={EOT}, disallowed_special="all") == (
        tiktoken_gpt2.encode(text, allowed_special={EOT})
    )


def test_unknown_allowed_special_is_an_error(gpt2) -> None:
    with pytest.raises(ValueError, match="<\\|nope\\|>"):
        gpt2.encode("x", allowed_special={"<|nope|>"})
    with pytest.raises(ValueError, match="not special tokens"):
        list(gpt2.encode_iterable(["x"], allowed_special={"<|nope|>"}))
    with pytest.raises(ValueError):
        gpt2.encode_batch(["x"], allowed_special={"<|nope|>"})


def test_special_token_properties(gpt2, tiktoken_gpt2) -> None:
    assert gpt2.special_tokens == {EOT: 50256}
    assert gpt2.special_tokens_set == tiktoken_gpt2.special_tokens_set
    assert gpt2.n_vocab == tiktoken_gpt2.n_vocab == 50257
    assert gpt2.token_to_id(EOT) == 50256
    assert gpt2.encode_single_token("hello") == tiktoken_gpt2.encode_single_token("hello")
    assert gpt2.token_to_id(b" the") == tiktoken_gpt2.encode_single_token(b" the")
    assert gpt2.decode_single_token_bytes(31373) == tiktoken_gpt2.decode_single_token_bytes(31373)
    assert gpt2.id_to_token(50256) == EOT.encode()
    with pytest.raises(KeyError):
        gpt2.token_to_id(b"definitely not one token")
    with pytest.raises(KeyError, match="99999"):
        gpt2.id_to_token(99999)


def test_specials_missing_from_vocab_get_next_ids() -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    tok = bytepair.Tokenizer(vocab, [(b"a", b"b")], ["<s>", "ab", "</s>"])
    assert tok.special_tokens == {"<s>": 257, "ab": 256, "</s>": 258}
    assert tok.encode("<s>ab</s>a") == [257, 256, 258, 97]
    assert tok.n_vocab == 259


CUSTOM_PATTERNS = [
    r"\S+",
    r"\s+|\S+",
    r"\w+|[^\w\s]+|\s+",
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # cl100k_base
    r"a*",  # empty matches
    r"(?<=a)b|.",
]


@pytest.fixture(scope="module")
def custom_tokenizers(trained) -> dict[str, bytepair.Tokenizer]:
    return {
        p: bytepair.Tokenizer(trained.vocab, trained.merges, TRAIN_SPECIALS, pattern=p)
        for p in CUSTOM_PATTERNS
    }


@given(text=oracle_text, pattern=st.sampled_from(CUSTOM_PATTERNS))
@settings(suppress_health_check=SUPPRESS)
def test_custom_patterns_match_reference(custom_tokenizers, text: str, pattern: str) -> None:
    tok = custom_tokenizers[pattern]
    assert tok.pattern == pattern
    assert tok.encode(text) == _ref_encode(tok, text)


def test_invalid_pattern_is_a_clear_error(trained) -> None:
    with pytest.raises(ValueError, match="invalid pattern"):
        bytepair.Tokenizer(trained.vocab, trained.merges, pattern="(")


# --- round trips and decoding ----------------------------------------------------------------


@given(text=any_text)
@settings(suppress_health_check=SUPPRESS)
def test_roundtrip_gpt2(gpt2, text: str) -> None:
    assert gpt2.decode(gpt2.encode(text)) == text
    assert gpt2.decode(gpt2.encode_ordinary(text)) == text


@given(text=any_text)
@settings(suppress_health_check=SUPPRESS)
def test_roundtrip_trained(trained, text: str) -> None:
    assert trained.decode(trained.encode(text)) == text


surrogate_text = st.lists(
    st.one_of(st.characters(categories=["Cs"]), st.sampled_from(["a", " ", "é", "🙃", EOT])),
    max_size=20,
).map("".join)


@given(text=surrogate_text)
def test_lone_surrogates_become_replacement_chars(gpt2, tiktoken_gpt2, text: str) -> None:
    """Documented behaviour (like tiktoken): lone surrogates are replaced by U+FFFD, and a
    surrogate pair written as two code points is read as the character it encodes."""
    ids = gpt2.encode(text)
    assert ids == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.decode(ids) == _surrogates_fixed(text)
    assert gpt2.encode_batch([text], num_threads=1) == [ids]
    assert gpt2.encode_to_numpy(text).tolist() == ids
    assert gpt2.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)


def test_lone_surrogates_in_batches_read_by_workers(gpt2) -> None:
    """A batch's strings are read by its worker threads: a lone surrogate in one, short or cut
    into pieces, is replaced as in `encode`, whichever thread meets it."""
    long = "héllo wörld 你好 " * 20_000  # over 256 KB: cut into pieces on the calling thread
    texts = [f"doc {i} ü" for i in range(2_000)]
    texts[700] = "x\ud800y"
    texts[1_500] = "tail \udfff" + long
    texts.insert(1_000, long)
    want = [gpt2.encode(t) for t in texts]
    for threads in (1, 2):
        ids, offsets = gpt2.encode_batch_to_numpy(texts, num_threads=threads)
        # lists made by each run's worker, and after the batch for the texts cut in pieces
        assert gpt2.encode_batch(texts, num_threads=threads) == want
        for i in (0, 700, 1_000, 1_501, len(texts) - 1):
            assert ids[offsets[i] : offsets[i + 1]].tolist() == want[i]
        assert sum(map(len, want)) == len(ids)


def test_lone_surrogate_examples(gpt2) -> None:
    assert gpt2.decode(gpt2.encode("a\ud800b")) == "a\ufffdb"
    assert gpt2.decode(gpt2.encode("\ud83d\ude43")) == "🙃"


@given(data=st.binary(max_size=200))
@settings(suppress_health_check=SUPPRESS)
def test_bytes_roundtrip(gpt2, trained, data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    for tok in (gpt2, trained):
        assert tok.decode_bytes(tok.encode(text)) == text.encode("utf-8")
        byte_ids = [tok.token_to_id(bytes([b])) for b in data]
        assert tok.decode_bytes(byte_ids) == data
        assert tok.decode(byte_ids) == text


def test_decode_partial_utf8(gpt2, tiktoken_gpt2) -> None:
    head = gpt2.token_to_id(b"\xe2\x80")  # the first two bytes of U+2019 (right single quote)
    tail = gpt2.token_to_id(b"\x99")
    assert gpt2.decode([head]) == "\ufffd" == tiktoken_gpt2.decode([head])
    assert gpt2.decode([head, tail]) == "\u2019"
    assert gpt2.decode_bytes([head, tail]) == "\u2019".encode()
    hi = gpt2.encode("hi")
    assert gpt2.decode([tail, *hi]) == "\ufffdhi"
    assert gpt2.decode([head, *hi]) == tiktoken_gpt2.decode([head, *hi]) == "\ufffdhi"
    assert gpt2.decode_batch([[head, tail], [], hi]) == ["\u2019", "", "hi"]


def test_decode_unknown_ids(gpt2) -> None:
    with pytest.raises(KeyError, match="50257"):
        gpt2.decode([104, 50257])
    with pytest.raises(KeyError, match="123456789"):
        gpt2.decode_bytes([123456789])
    with pytest.raises(KeyError, match="-1"):
        gpt2.decode([-1])
    for bad in ["a", 1.5, None, 2**40]:
        with pytest.raises((KeyError, TypeError), match="token id"):
            gpt2.decode([bad])
    # a hole in the id space is unknown too
    sparse = bytepair.Tokenizer({i: bytes([i]) for i in range(256)} | {300: b"ab"}, [(b"a", b"b")])
    assert sparse.encode("ab") == [300]
    with pytest.raises(KeyError, match="256"):
        sparse.decode([256])
    assert sparse.decode([]) == ""


def test_encode_rejects_non_str(gpt2) -> None:
    # the default calls leave the type to the core, then say what is wrong in bytepair's words
    for bad in (b"bytes", 3, None):
        for call in (gpt2.encode, gpt2.encode_ordinary):
            with pytest.raises(TypeError, match="text must be str, got"):
                call(bad)
    with pytest.raises(TypeError, match="text must be str"):
        gpt2.encode(b"bytes", allowed_special=set())
    with pytest.raises(TypeError, match="str"):
        gpt2.encode_to_numpy(b"bytes")
    with pytest.raises(TypeError):
        gpt2.encode_batch(["ok", 3])
    with pytest.raises(TypeError):
        list(gpt2.encode_iterable(["ok", b"no"]))


def test_encode_is_the_core_method_with_python_options(gpt2) -> None:
    """`encode` and `encode_ordinary` are the core's methods; options go to the general path,
    which gives the same ids as the plain call, and a wrong keyword is named as Python would."""
    assert type(gpt2).encode is bytepair._core.Encoder.encode
    assert str(inspect.signature(gpt2.encode)) == (
        "(text, *, allowed_special='all', disallowed_special=(), add_special_tokens=False)"
    )
    text = "a <|endoftext|> b"
    plain = gpt2.encode(text)
    assert gpt2.encode(text, allowed_special="all") == plain
    assert gpt2.encode(text, **{}) == plain
    assert gpt2.encode(text, allowed_special=set()) == gpt2.encode_ordinary(text) != plain
    with pytest.raises(TypeError, match="unexpected keyword argument 'allowed'"):
        gpt2.encode(text, allowed={"<|endoftext|>"})
    with pytest.raises(TypeError):
        gpt2.encode(text, "all")  # the options are keyword-only, as in tiktoken

    class Upper(bytepair.Tokenizer):  # a subclass's own encode wins
        def encode(self, text: str, **options: object) -> list[int]:  # type: ignore[override]
            return super().encode(text.upper())

    upper = Upper(gpt2.vocab, gpt2.merges, gpt2.special_tokens_set)
    assert upper.encode("ab") == gpt2.encode("AB")

    class Tagged(bytepair.Tokenizer):  # a subclass's __init__ may call the base's
        def __init__(self, vocab, merges, special_tokens=None, *, tag: str = "") -> None:
            super().__init__(vocab, merges, special_tokens)
            self.tag = tag

    tagged = Tagged(gpt2.vocab, gpt2.merges, ["<|endoftext|>"], tag="t")
    assert (tagged.tag, tagged.encode(text)) == ("t", plain)

    class Unbuilt(bytepair.Tokenizer):  # one that skips it gets an error, not a crash
        def __init__(self) -> None:
            pass

    with pytest.raises(RuntimeError, match="not built"):
        Unbuilt().encode("x")
    with pytest.raises(RuntimeError, match="already built"):
        gpt2._build(list(gpt2.vocab.items()), gpt2.merges, [], gpt2.pattern)
    assert pickle.loads(pickle.dumps(gpt2)).encode(text) == plain


# --- batch and numpy --------------------------------------------------------------------------


@given(texts=st.lists(any_text, max_size=8))
@settings(suppress_health_check=SUPPRESS)
def test_batch_equals_single(gpt2, texts: list[str]) -> None:
    single = [gpt2.encode(t) for t in texts]
    ordinary = [gpt2.encode_ordinary(t) for t in texts]
    for n in (1, 2):
        assert gpt2.encode_batch(texts, num_threads=n) == single
        assert gpt2.encode_ordinary_batch(texts, num_threads=n) == ordinary
    assert gpt2.encode_batch(texts) == single
    strict = [gpt2.encode(t, allowed_special=set()) for t in texts]
    assert gpt2.encode_batch(texts, num_threads=2, allowed_special=set()) == strict
    assert gpt2.decode_batch(single) == [gpt2.decode(ids) for ids in single]


def test_batch_on_files(cs336_data, gpt2, trained) -> None:
    texts = [(cs336_data / name).read_text(encoding="utf-8") for name in FIXTURE_FILES] * 3
    for tok in (gpt2, trained):
        expected = [tok.encode(t) for t in texts]
        assert tok.encode_batch(texts, num_threads=1) == expected
        assert tok.encode_batch(texts, num_threads=2) == expected
    assert gpt2.encode_batch([]) == []


def test_batch_splits_long_texts_without_changing_ids(cs336_data, gpt2) -> None:
    """Texts past 256 KB are encoded in pieces on the threads: the same ids as one encode."""
    base = (cs336_data / "corpus.en").read_text(encoding="utf-8")
    mixed = "\n".join([base, "中文，没有空格。" * 3000, " " * 5000, EOT, "x" * 70_000, base])
    texts = ["short", mixed * 2, "", base, mixed[::-1]]
    assert len(mixed) > 1 << 18
    expected = [gpt2.encode(t) for t in texts]
    for n in (1, 2):
        assert gpt2.encode_batch(texts, num_threads=n) == expected
        ids, offsets = gpt2.encode_batch_to_numpy(texts, num_threads=n)
        parts = np.split(ids, offsets[1:-1].astype(np.int64))
        assert [part.tolist() for part in parts] == expected


def test_batch_bad_num_threads(gpt2) -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="num_threads"):
            gpt2.encode_batch(["x"], num_threads=bad)


@given(text=any_text)
@settings(suppress_health_check=SUPPRESS)
def test_numpy_equals_encode(gpt2, text: str) -> None:
    arr = gpt2.encode_to_numpy(text)
    assert arr.dtype == np.uint16
    assert arr.tolist() == gpt2.encode(text)


def test_numpy_dtypes(gpt2, cs336_data) -> None:
    text = (cs336_data / "tinystories_sample.txt").read_text(encoding="utf-8")
    ids = gpt2.encode(text)
    assert gpt2.encode_to_numpy(text).dtype == np.uint16
    wide = gpt2.encode_to_numpy(text, dtype=np.uint32)
    assert wide.dtype == np.uint32 and wide.tolist() == ids
    assert gpt2.encode_to_numpy(text, dtype="uint16").tolist() == ids
    assert gpt2.encode_to_numpy("", dtype=np.uint32).shape == (0,)
    for bad in (np.uint8, np.int64, np.float32):
        with pytest.raises(ValueError, match="uint16 or uint32"):
            gpt2.encode_to_numpy(text, dtype=bad)
    assert gpt2.encode_to_numpy(f"x{EOT}", allowed_special=set()).tolist() == (
        gpt2.encode_ordinary(f"x{EOT}")
    )
    # past 1 MiB the ids are narrowed piece by piece, below straight into the array
    long = (cs336_data / "corpus.en").read_text(encoding="utf-8") * 9
    assert len(long.encode()) > 1 << 20
    assert gpt2.encode_to_numpy(long).tolist() == gpt2.encode(long)


def test_numpy_large_vocab_is_uint32() -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {70000: b"ab"}
    tok = bytepair.Tokenizer(vocab, [(b"a", b"b")])
    assert tok.n_vocab == 70001
    arr = tok.encode_to_numpy("abc ab")
    assert arr.dtype == np.uint32 and arr.tolist() == [70000, 99, 32, 70000] == tok.encode("abc ab")
    with pytest.raises(ValueError, match="uint32"):
        tok.encode_to_numpy("ab", dtype=np.uint16)


@given(texts=st.lists(any_text, max_size=8), threads=st.sampled_from([1, 2]))
@settings(suppress_health_check=SUPPRESS)
def test_batch_to_numpy_equals_encode_of_each_text(gpt2, texts: list[str], threads: int) -> None:
    ids, offsets = gpt2.encode_batch_to_numpy(texts, num_threads=threads)
    assert ids.dtype == np.uint16 and offsets.dtype == np.uint64
    assert offsets.tolist()[0] == 0 and len(offsets) == len(texts) + 1
    for i, text in enumerate(texts):
        assert ids[offsets[i] : offsets[i + 1]].tolist() == gpt2.encode(text)
    assert len(ids) == offsets[-1]


def test_batch_to_numpy_options(gpt2, cs336_data) -> None:
    docs = (cs336_data / "tinystories_sample.txt").read_text(encoding="utf-8").split(EOT)
    ids, offsets = gpt2.encode_batch_to_numpy(docs, dtype=np.uint32, allowed_special=set())
    assert ids.dtype == np.uint32
    assert np.split(ids, offsets[1:-1])[1].tolist() == gpt2.encode_ordinary(docs[1])
    empty_ids, empty_offsets = gpt2.encode_batch_to_numpy([])
    assert empty_ids.shape == (0,) and empty_offsets.tolist() == [0]
    with pytest.raises(ValueError, match="disallowed special token"):
        gpt2.encode_batch_to_numpy(["a", EOT], allowed_special=set(), disallowed_special="all")


def test_decode_accepts_numpy_ids(gpt2) -> None:
    arr = gpt2.encode_to_numpy("hello world")
    assert gpt2.decode(arr) == "hello world"
    assert gpt2.decode_bytes(np.array(gpt2.encode("hi"), dtype=np.int64)) == b"hi"


def test_concurrent_python_threads(gpt2, cs336_data) -> None:
    """The encoder is shared by Python threads (the GIL is released while encoding)."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [(cs336_data / name).read_text(encoding="utf-8") for name in FIXTURE_FILES] * 4
    expected = [gpt2.encode(t) for t in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(gpt2.encode, texts)) == expected
        assert list(pool.map(lambda t: list(gpt2.encode_iterable(t.splitlines(True))), texts)) == (
            expected
        )


# --- encode_iterable --------------------------------------------------------------------------


@given(pieces=split_text())
@settings(suppress_health_check=SUPPRESS)
def test_iterable_equals_encode(gpt2, trained, pieces: list[str]) -> None:
    text = "".join(pieces)
    for tok in (gpt2, trained):
        assert list(tok.encode_iterable(pieces)) == tok.encode(text)


@given(
    pieces=split_text(),
    chunk=st.integers(1, 40),
    subset=st.sampled_from([None, set(), {EOT}, {EOT2}, {PAD, EOT}]),
)
@settings(suppress_health_check=SUPPRESS)
def test_iterable_streaming_cuts(trained, pieces: list[str], chunk: int, subset) -> None:
    """With a tiny streaming threshold every piece goes through the cutting path."""
    text = "".join(pieces)
    kwargs = {} if subset is None else {"allowed_special": subset}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bp_stream, "STREAM_CHARS", chunk)
        assert list(trained.encode_iterable(pieces, **kwargs)) == trained.encode(text, **kwargs)
        assert list(trained.encode_iterable(list(text), **kwargs)) == trained.encode(text, **kwargs)


#: The GPT-4 presets' cases too: case changes, `/` after punctuation, marks after letters
#: (Thai), digit runs.
preset_text = st.lists(
    st.sampled_from([*TRICKY_PIECES, "AB", "aB", "Ab", "/", "//", "\u0e01", "\u0e35", "12345"]),
    max_size=40,
).map("".join)


@pytest.mark.parametrize("pattern", ["cl100k", "o200k"])
@given(pieces=split_text(preset_text), chunk=st.integers(1, 40))
@settings(suppress_health_check=SUPPRESS)
def test_iterable_streaming_cuts_gpt4_presets(trained, pattern, pieces, chunk: int) -> None:
    """cl100k and o200k cut streams where their own rules allow (`can_cut_before` in
    rust/src/pretokenize/gpt4.rs and o200k.rs), not only at special tokens."""
    tok = bytepair.Tokenizer(trained.vocab, trained.merges, TRAIN_SPECIALS, pattern=pattern)
    text = "".join(pieces)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bp_stream, "STREAM_CHARS", chunk)
        assert list(tok.encode_iterable(pieces)) == tok.encode(text)


SPACEY_SPECIALS = ["x y", " \n", "<a b>", "\n\n", "  "]
spacey_text = st.lists(
    st.sampled_from(["x", " ", "y", "\n", "<a", " b>", "a", "b", "<", ">", "z", "  ", "é"]),
    max_size=30,
).map("".join)


@given(
    pieces=split_text(spacey_text),
    chunk=st.integers(1, 12),
    subset=st.sampled_from([None, set(), {"x y"}, {" \n", "  "}, {"<a b>", "\n\n"}]),
)
@settings(suppress_health_check=SUPPRESS)
def test_iterable_streaming_whitespace_specials(trained, pieces, chunk: int, subset) -> None:
    """Special tokens made of (or holding) whitespace straddle the places the stream may cut."""
    tok = bytepair.Tokenizer(trained.vocab, trained.merges, SPACEY_SPECIALS)
    text = "".join(pieces)
    kwargs = {} if subset is None else {"allowed_special": subset}
    expected = tok.encode(text, **kwargs)
    assert expected == _ref_encode(tok, text, subset if subset is not None else SPACEY_SPECIALS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bp_stream, "STREAM_CHARS", chunk)
        assert list(tok.encode_iterable(pieces, **kwargs)) == expected


@given(pieces=split_text(), chunk=st.integers(1, 40))
@settings(suppress_health_check=SUPPRESS)
def test_iterable_streaming_disallowed(trained, pieces: list[str], chunk: int) -> None:
    """A disallowed special token is found even when it spans a streaming cut."""
    text = "".join(pieces)
    kwargs = {"allowed_special": {EOT}, "disallowed_special": "all"}
    try:
        expected = trained.encode(text, **kwargs)
    except ValueError:
        expected = None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bp_stream, "STREAM_CHARS", chunk)
        if expected is None:
            with pytest.raises(ValueError, match="disallowed special token"):
                list(trained.encode_iterable(pieces, **kwargs))
        else:
            assert list(trained.encode_iterable(pieces, **kwargs)) == expected


@pytest.mark.parametrize(
    "pieces",
    [
        ["<|endo", "ftext|>"],
        ["<|endoftext|", ">"],
        ["<", "|endoftext|><|endo", "ftext|>"],
        ["a  ", "  b"],
        ["a ", " ", " ", "b"],
        ["\n\n", "\n", "x"],
        ["it", "'s", " we'", "ll"],
        ["Hel", "lo", " wor", "ld", "!"],
        ["🙃", "🙃"],
        ["e", "\u0301"],
        ["", "", ""],
        [],
        list(HELLO),
    ],
)
def test_iterable_fixed_splits(gpt2, tiktoken_gpt2, pieces: list[str]) -> None:
    text = "".join(pieces)
    expected = tiktoken_gpt2.encode(text, allowed_special="all")
    assert list(gpt2.encode_iterable(pieces)) == expected
    assert list(gpt2.encode_iterable(iter(pieces))) == expected


@pytest.mark.parametrize(
    "pieces",
    [
        ["\ud83d", "\ude43"],
        ["a\ud83d", "\ude43b", "\ud83d"],
        ["\ude43", "\ud83d"],
        ["x" * 65535 + "\ud83d", "\ude43 tail"],  # the pair straddles the streaming threshold
        ["x " * 40_000 + "\ud83d", "\ude43", " \ud800"],
    ],
    ids=["pair", "pair-and-lone", "reversed", "at-threshold", "after-cut"],
)
def test_iterable_surrogates_across_items(gpt2, pieces: list[str]) -> None:
    """A surrogate pair split over two items is read as one character, as encode reads it."""
    text = "".join(pieces)
    assert list(gpt2.encode_iterable(pieces)) == gpt2.encode(text)
    assert gpt2.decode(gpt2.encode(text)) == _surrogates_fixed(text)


@given(pieces=split_text(surrogate_text), chunk=st.integers(1, 40))
@settings(suppress_health_check=SUPPRESS)
def test_iterable_streaming_surrogates(trained, pieces: list[str], chunk: int) -> None:
    expected = trained.encode("".join(pieces))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bp_stream, "STREAM_CHARS", chunk)
        assert list(trained.encode_iterable(pieces)) == expected


def _long_texts(cs336_data: Path) -> dict[str, str]:
    story = (cs336_data / "tinystories_sample.txt").read_text(encoding="utf-8")
    german = (cs336_data / "german.txt").read_text(encoding="utf-8")
    mixed = "héllo wörld 你好 🙃 it's\t\tfine  \n<|endoftext|>" + "x" * 37 + "\n\n"
    return {
        "stories": story * 60,  # > 200 KB
        "german+specials": (german + EOT) * 400,
        "non-ascii": mixed * 3000,
        "no-whitespace": "ab" * 120_000 + " tail",
        "only-specials": EOT * 20_000,
        "space-runs": ("word" + " " * 70_000 + "\n") * 3,
    }


@pytest.mark.parametrize(
    "name",
    ["stories", "german+specials", "non-ascii", "no-whitespace", "only-specials", "space-runs"],
)
def test_iterable_long_text_streams(cs336_data, gpt2, tiktoken_gpt2, name: str) -> None:
    text = _long_texts(cs336_data)[name]
    assert len(text) > 200_000
    expected = gpt2.encode(text)
    if name in ("stories", "german+specials", "non-ascii"):
        assert expected == tiktoken_gpt2.encode(text, allowed_special="all")
    lines = text.splitlines(keepends=True)
    assert list(gpt2.encode_iterable(lines)) == expected
    chunks = [text[i : i + 1000] for i in range(0, len(text), 1000)]
    assert list(gpt2.encode_iterable(chunks)) == expected
    odd = [text[i : i + 4093] for i in range(0, len(text), 4093)]
    assert list(gpt2.encode_iterable(odd)) == expected


def test_iterable_over_open_file(cs336_data, gpt2) -> None:
    path = cs336_data / "tinystories_sample.txt"
    with open(path, encoding="utf-8") as f:
        ids = list(gpt2.encode_iterable(f))
    with open(path, encoding="utf-8") as f:
        assert ids == gpt2.encode(f.read())


def test_iterable_is_lazy(gpt2) -> None:
    line = "hello world, it's a lazy stream\n"
    consumed = 0

    def endless():
        nonlocal consumed
        while True:
            consumed += 1
            yield line

    it = gpt2.encode_iterable(endless())
    assert iter(it) is it
    assert consumed == 0  # nothing read before the first id is asked for
    first = list(itertools.islice(it, 100))
    assert first == gpt2.encode(line * 20)[:100]
    assert consumed < 1_000_000 // len(line)


def test_iterable_yields_before_a_failing_source(gpt2) -> None:
    line = "hello world\n"

    def failing():
        yield from [line] * 20_000  # 240 KB, beyond the streaming threshold
        raise RuntimeError("source broke")

    it = gpt2.encode_iterable(failing())
    head = list(itertools.islice(it, 50))
    assert head == gpt2.encode(line * 20)[:50]
    with pytest.raises(RuntimeError, match="source broke"):
        list(it)


# --- long pretokens -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "a" * n,
        lambda n: " " + "a" * n,
        lambda n: "ab" * (n // 2),
        lambda n: " " * n,
        lambda n: "\n" * n,
        lambda n: "7" * n,
        lambda n: "é" * (n // 2),
        lambda n: "!" * n,
    ],
    ids=["a", "space-a", "ab", "spaces", "newlines", "digits", "e-acute", "punct"],
)
def test_long_pretokens(gpt2, gpt2_tables, tiktoken_gpt2, make) -> None:
    big = make(1_000_000)
    start = time.perf_counter()
    ids = gpt2.encode(big)
    elapsed = time.perf_counter() - start
    assert elapsed < 10, f"1 MB pretoken took {elapsed:.1f} s"
    assert gpt2.decode(ids) == big
    small = make(5000)
    vocab, merges = gpt2_tables
    expected = ref.encode(small, vocab, merges, [EOT])
    assert gpt2.encode(small) == expected == tiktoken_gpt2.encode(small)


@pytest.mark.parametrize("n", [9_999, 10_000, 10_001])
def test_long_runs_trained(trained, n: int) -> None:
    for text in ("a" * n, "ab" * (n // 2) + "a", " " * n, "\n" * n):
        ids = trained.encode(text)
        assert trained.decode(ids) == text
    assert trained.encode("a" * 3000) == _ref_encode(trained, "a" * 3000)


# --- constructor errors ---------------------------------------------------------------------


def _bytes_vocab() -> dict[int, bytes]:
    return {i: bytes([i]) for i in range(256)}


def test_constructor_missing_byte() -> None:
    vocab = _bytes_vocab()
    del vocab[0xFF]
    with pytest.raises(ValueError, match="0xff"):
        bytepair.Tokenizer(vocab, [])


def test_constructor_bad_merges() -> None:
    with pytest.raises(ValueError, match="merge 0"):
        bytepair.Tokenizer(_bytes_vocab(), [(b"a", b"b")])  # b"ab" is not in the vocab
    vocab = _bytes_vocab() | {256: b"ab", 257: b"abc"}
    with pytest.raises(ValueError, match=r"merge 1.*not in the vocabulary"):
        bytepair.Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"cd")])


def test_constructor_bad_vocab_and_specials() -> None:
    with pytest.raises(TypeError, match="dict"):
        bytepair.Tokenizer([b"a"], [])
    with pytest.raises(TypeError, match="bytes"):
        bytepair.Tokenizer(_bytes_vocab() | {256: "ab"}, [])
    with pytest.raises(ValueError, match="-1"):
        bytepair.Tokenizer(_bytes_vocab() | {-1: b"ab"}, [])
    with pytest.raises(ValueError, match="same bytes"):
        bytepair.Tokenizer(_bytes_vocab() | {256: b"a"}, [])
    with pytest.raises(ValueError, match="twice"):
        bytepair.Tokenizer(_bytes_vocab(), [], ["<s>", "<s>"])
    with pytest.raises(ValueError, match="empty"):
        bytepair.Tokenizer(_bytes_vocab(), [], [""])
    with pytest.raises(TypeError, match="list"):
        bytepair.Tokenizer(_bytes_vocab(), [], "<s>")
    with pytest.raises(ValueError, match="pattern"):
        bytepair.Tokenizer(_bytes_vocab(), [], pattern="")


def test_properties_are_copies(trained) -> None:
    vocab = trained.vocab
    vocab[0] = b"changed"
    trained.merges.clear()
    assert trained.vocab[0] == b"\x00"
    assert len(trained.merges) > 0
    assert "Tokenizer" in repr(trained)


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity"), reason="Linux rlimits")
def test_out_of_memory_is_memory_error_not_an_abort(tmp_path: Path) -> None:
    """Under a tight address-space limit (as CS336's memory tests set one), encode raises
    MemoryError and the interpreter lives on; it must never abort in native code."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import os, resource, bytepair
        tok = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [])
        for text in ("hello world " * 500_000, "héllo wörld " * 500_000):
            rss = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            prev = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (rss + 1_000_000, prev[1]))
            try:
                tok.encode(text)
                print("encoded")
            except MemoryError:
                print("MemoryError")
            finally:
                resource.setrlimit(resource.RLIMIT_AS, prev)
        print("alive")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["MemoryError", "MemoryError", "alive"]
