"""Tests of the oracle (`tests/reference.py`) against docs/spec.md and the upstream CS336
fixtures.

If these pass, the oracle can be trusted as the other side of every differential test. They do not
test `bytepair`.
"""

from __future__ import annotations

import itertools
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference as ref
from unicode_diff import same_text

SPECIAL = "<|endoftext|>"

HAND_STRINGS = [
    "",
    "Héllò hôw <|endoftext|> are ü? 🙃",
    "I'll you've we're don't she's I'm he'd they'LL DON'T O'Neil's '' 's",
    "a   b\t\tc  \n  d   ",
    "\n\n\n",
    "   leading and trailing   ",
    " \t \r\n \u00a0\u3000x",
    "1234567890 3.14159 1,000,000 ١٢٣ ⅷ 12ab34",
    "<|endoftext|><|endoftext|> <|endoftext| <|endoftext|>x<|endoftext|>\n",
    "你好，世界！ 안녕하세요 Привет, мир! مرحبا",
    "e\u0301 👨‍👩‍👧‍👦 🇫🇷 $$$ --- ...!!!",
]


_UNICODE_TO_BYTES = ref.unicode_to_bytes()


def _gpt2_bytes(token: str) -> bytes:
    return bytes(_UNICODE_TO_BYTES[char] for char in token)


def _read_merges(path: Path) -> list[tuple[bytes, bytes]]:
    merges = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#version"):
            continue
        # GPT-2 characters contain no space (byte 0x20 is written as "Ġ"), so one split suffices.
        left, right = line.split(" ")
        merges.append((_gpt2_bytes(left), _gpt2_bytes(right)))
    return merges


def _read_vocab(path: Path) -> dict[int, bytes]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {token_id: _gpt2_bytes(token) for token, token_id in raw.items()}


@pytest.fixture(scope="module")
def gpt2(cs336_data: Path) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    return _read_vocab(cs336_data / "gpt2_vocab.json"), _read_merges(cs336_data / "gpt2_merges.txt")


# --- tables and splitting ---------------------------------------------------------------------


def test_bytes_to_unicode_is_gpt2_table() -> None:
    table = ref.bytes_to_unicode()
    assert len(table) == 256 and len(set(table.values())) == 256
    assert table[ord("!")] == "!" and table[ord("ÿ")] == "ÿ"
    assert table[0] == "Ā" and table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ"
    assert table[0xAD] == "Ń"  # the soft hyphen is the last byte outside the printable ranges
    assert ref.unicode_to_bytes() == {char: b for b, char in table.items()}


def test_split_on_specials_longest_wins_and_drops_empty_pieces() -> None:
    specials = ["<|a|>", "<|a|><|a|>"]
    assert ref.split_on_specials("<|a|><|a|><|a|>x", specials) == [
        ("<|a|><|a|>", True),
        ("<|a|>", True),
        ("x", False),
    ]
    assert ref.split_on_specials("", specials) == []
    assert ref.split_on_specials("ab", []) == [("ab", False)]
    assert ref.split_on_specials("x<s>", ["<s>"]) == [("x", False), ("<s>", True)]


def test_split_on_specials_leftmost_match_first() -> None:
    # "bc" starts before "cde", so it wins even though "cde" is longer.
    assert ref.split_on_specials("abcde", ["cde", "bc"]) == [
        ("a", False),
        ("bc", True),
        ("de", False),
    ]


def test_pretokenize_gpt2() -> None:
    expected = ["I", "'ll", " ", " go", "\n\n", " now", " 42", "!"]
    assert ref.pretokenize("I'll  go\n\n now 42!") == expected


def test_count_words_never_counts_special_text() -> None:
    counts = ref.count_words("hi<|endoftext|>hi <|endoftext|>", [SPECIAL])
    assert counts == {b"hi": 2, b" ": 1}


# --- training ---------------------------------------------------------------------------------


def test_spec_worked_example() -> None:
    corpus = (
        "low low low low low lower lower widest widest widest "
        "newest newest newest newest newest newest"
    )
    vocab, merges = ref.train(corpus, 256 + 12, [], pattern=r"\S+")
    expected = "s t, e st, o w, l ow, w est, n e, ne west, w i, wi d, wid est, low e, lowe r"
    assert merges == [tuple(m.encode().split(b" ")) for m in expected.split(", ")]
    assert vocab[256] == b"st" and vocab[267] == b"lower" and len(vocab) == 268


def test_overlapping_pairs_count_and_merge_left_to_right() -> None:
    # "aaa" holds (a, a) twice, so it beats (b, c): a word counted 0 times adds nothing.
    assert ref.train_from_counts({b"aaa": 1, b"bc": 1, b"xbc": 0}, 257, [])[1] == [(b"a", b"a")]
    # "aaaa" becomes aa aa (not a aa a), so the next pair is (aa, aa).
    vocab, merges = ref.train_from_counts({b"aaaa": 1}, 258, [])
    assert merges == [(b"a", b"a"), (b"aa", b"aa")]
    assert vocab[257] == b"aaaa"


def test_ties_go_to_greater_pair_of_byte_strings() -> None:
    # HF and rustbpe would pick (a, b): smaller ids.
    assert ref.train_from_counts({b"ab": 1, b"cd": 1}, 257, [])[1] == [(b"c", b"d")]
    # Compared as a tuple, not as the concatenation: (abc, d) > (ab, d), though b"abcd" < b"abd".
    merges = ref.train_from_counts({b"abc": 1, b"abd": 1, b"abcd": 1}, 260, [])[1]
    assert merges == [(b"a", b"b"), (b"ab", b"c"), (b"abc", b"d"), (b"ab", b"d")]


def test_early_stop_puts_specials_after_last_merge() -> None:
    vocab, merges = ref.train("ab ab", 1000, ["<s>", "<t>"], pattern=r"\S+")
    assert merges == [(b"a", b"b")]
    assert vocab == {**{i: bytes([i]) for i in range(256)}, 256: b"ab", 257: b"<s>", 258: b"<t>"}


def test_vocab_size_too_small_names_minimum() -> None:
    with pytest.raises(ValueError, match="minimum is 258"):
        ref.train("abc", 257, ["<a>", "<b>"])
    assert len(ref.train("abc", 258, ["<a>", "<b>"])[0]) == 258


def test_bad_special_tokens_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        ref.train("abc", 300, [""])
    with pytest.raises(ValueError, match="duplicate"):
        ref.train("abc", 300, ["<a>", "<a>"])


def test_corpus_en_matches_reference(cs336_data: Path) -> None:
    text = (cs336_data / "corpus.en").read_text(encoding="utf-8")
    vocab, merges = ref.train(text, 500, [SPECIAL])
    assert merges == _read_merges(cs336_data / "train-bpe-reference-merges.txt")
    expected = json.loads((cs336_data / "train-bpe-reference-vocab.json").read_text("utf-8"))
    assert set(vocab.values()) == {_gpt2_bytes(token) for token in expected}
    assert sorted(vocab) == list(range(500)) and vocab[499] == SPECIAL.encode()


def test_special_tokens_snapshot(cs336_data: Path) -> None:
    # The snapshot's corpus, tinystories_sample_5M.txt, is not shipped (tests/data/README.md), so
    # its merges cannot be reproduced. What it still pins down is the layout of docs/spec.md §1:
    # vocab_size=1000 with one special gives 1000 - 256 - 1 = 743 merges, ids 0..999, and no
    # token but the special contains "<|".
    with open(cs336_data / "snapshots" / "test_train_bpe_special_tokens.pkl", "rb") as f:
        snapshot = pickle.load(f)
    merges = snapshot["merges"]
    assert snapshot["vocab_keys"] == set(range(1000))
    assert len(merges) == 1000 - 256 - 1
    singles = {bytes([b]) for b in range(256)}
    assert snapshot["vocab_values"] == singles | {a + b for a, b in merges} | {SPECIAL.encode()}
    assert [v for v in snapshot["vocab_values"] if b"<|" in v] == [SPECIAL.encode()]

    # The same property on the oracle, trained on the small sample (it holds <|endoftext|> 5 times).
    text = (cs336_data / "tinystories_sample.txt").read_text(encoding="utf-8")
    vocab, merges = ref.train(text, 1000, [SPECIAL])
    assert [v for v in vocab.values() if b"<|" in v] == [SPECIAL.encode()]
    assert sorted(vocab) == list(range(len(vocab))) and vocab[len(vocab) - 1] == SPECIAL.encode()


# --- encoding and decoding --------------------------------------------------------------------


def test_gpt2_merges_are_in_creation_order(
    gpt2: tuple[dict[int, bytes], list[tuple[bytes, bytes]]],
) -> None:
    # Every merge uses only tokens made earlier, so "lowest rank first" (GPT-2's loop) and
    # "apply the merges in creation order" are the same function on this file (docs/spec.md §2.2).
    vocab, merges = gpt2
    known = {bytes([b]) for b in range(256)}
    for left, right in merges:
        assert left in known and right in known
        known.add(left + right)
    assert known <= set(vocab.values())
    assert len(merges) == 50000 and len(vocab) == 50257 and vocab[50256] == SPECIAL.encode()


def _encode_in_creation_order(word: bytes, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
    tokens = tuple(bytes([b]) for b in word)
    for pair in merges:
        if len(tokens) < 2:
            break
        if pair[0] in tokens and pair in set(itertools.pairwise(tokens)):
            tokens = ref._merge_pair(tokens, pair)
    return list(tokens)


def test_lowest_rank_equals_creation_order_on_fixtures(
    cs336_data: Path, gpt2: tuple[dict[int, bytes], list[tuple[bytes, bytes]]]
) -> None:
    _, merges = gpt2
    ranks = {pair: rank for rank, pair in enumerate(merges)}
    words: set[bytes] = set()
    for name in ["address.txt", "german.txt", "tinystories_sample.txt"]:
        words |= set(ref.count_words((cs336_data / name).read_text(encoding="utf-8"), [SPECIAL]))
    for word in words:
        assert ref._bpe(word, ranks) == _encode_in_creation_order(word, merges), word


@pytest.mark.parametrize(
    "name",
    [
        "address.txt",
        "german.txt",
        "tinystories_sample.txt",
        "special_token_double_newlines_non_whitespace.txt",
        "special_token_trailing_newlines.txt",
    ],
)
def test_encode_matches_tiktoken_on_fixtures(name, cs336_data, gpt2, tiktoken_gpt2) -> None:
    text = (cs336_data / name).read_text(encoding="utf-8")
    vocab, merges = gpt2
    ids = ref.encode(text, vocab, merges, [SPECIAL])
    assert ids == tiktoken_gpt2.encode(text, allowed_special={SPECIAL})
    assert ref.decode(ids, vocab) == text


@pytest.mark.parametrize("text", HAND_STRINGS)
def test_encode_matches_tiktoken_on_hand_strings(text, gpt2, tiktoken_gpt2) -> None:
    vocab, merges = gpt2
    ids = ref.encode(text, vocab, merges, [SPECIAL])
    assert ids == tiktoken_gpt2.encode(text, allowed_special={SPECIAL})
    assert ref.decode(ids, vocab) == text


@given(same_text(max_size=40))
def test_encode_matches_tiktoken_on_random_text(gpt2, tiktoken_gpt2, text: str) -> None:
    vocab, merges = gpt2
    try:
        expected = tiktoken_gpt2.encode(text, allowed_special={SPECIAL})
    except UnicodeEncodeError:  # lone surrogates: neither side can encode them as UTF-8
        with pytest.raises(UnicodeEncodeError):
            ref.encode(text, vocab, merges, [SPECIAL])
        return
    assert ref.encode(text, vocab, merges, [SPECIAL]) == expected


def test_encode_without_specials_treats_them_as_text(gpt2, tiktoken_gpt2) -> None:
    vocab, merges = gpt2
    text = "a<|endoftext|>b"
    assert ref.encode(text, vocab, merges) == tiktoken_gpt2.encode_ordinary(text)


def test_specials_missing_from_vocab_get_next_free_ids() -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    assert ref.build_vocab_with_specials(vocab, ["<x>", "a", "<y>"]) == vocab | {
        257: b"<x>",
        258: b"<y>",
    }
    assert ref.encode("<y>ab<x>", vocab, [(b"a", b"b")], ["<x>", "<y>"]) == [258, 256, 257]
    assert vocab == {i: bytes([i]) for i in range(256)} | {256: b"ab"}


def test_encode_merges_all_occurrences_of_lowest_rank_pair() -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"aa", 257: b"ab"}
    # (a, a) ranks first and is merged left to right: "aaab" -> aa a b, then (a, b) -> aa ab.
    assert ref.encode("aaab", vocab, [(b"a", b"a"), (b"a", b"b")]) == [256, 257]
    assert ref.encode("aaaa", vocab, [(b"a", b"a"), (b"a", b"b")]) == [256, 256]


def test_decode_replaces_malformed_utf8_and_names_unknown_ids() -> None:
    vocab = {0: b"\xe2\x82", 1: b"\xac", 2: b"x"}
    assert ref.decode([0, 1], vocab) == "€"
    assert ref.decode([0, 2], vocab) == "\ufffdx"
    with pytest.raises(KeyError, match="12345"):
        ref.decode([2, 12345], vocab)


@pytest.fixture(scope="module")
def small_model() -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    return ref.train("the cat sat on the mat, the end. <|endoftext|>", 300, [SPECIAL])


@given(st.text(max_size=60))
def test_roundtrip_with_small_trained_vocab(small_model, text: str) -> None:
    vocab, merges = small_model
    try:
        ids = ref.encode(text, vocab, merges, [SPECIAL])
    except UnicodeEncodeError:
        return
    assert ref.decode(ids, vocab) == text
