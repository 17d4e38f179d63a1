"""decode_with_offsets against tiktoken's own on GPT-2, and the incremental decoder, on text whose
multi-byte characters (Chinese, Thai, emoji) are split over several tokens."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bytepair import Tokenizer
from bytepair.decoding import IncrementalDecoder, decode_stream, visible

TEXTS = [
    "hello world",
    "Héllò hôw are ü? 🙃",
    "你好，世界。我们今天去公园散步吧！",
    "สวัสดีครับ ยินดีต้อนรับสู่ประเทศไทย",
    "👩‍👩‍👧‍👦 family, 🇫🇷 flag, 1️⃣ keycap 🙃🙃",
    "mixed: naïve café 東京 ภาษาไทย emoji 😀 done\n\n",
    "",
]


@pytest.fixture(scope="module")
def gpt2(cs336_data) -> Tokenizer:
    return Tokenizer.from_files(
        cs336_data / "gpt2_vocab.json", cs336_data / "gpt2_merges.txt", ["<|endoftext|>"]
    )


def _splits_a_character(tok: Tokenizer, ids: list[int]) -> bool:
    return any(0x80 <= tok.id_to_token(i)[0] < 0xC0 for i in ids)


@pytest.mark.parametrize("text", TEXTS)
def test_offsets_equal_tiktoken(gpt2, tiktoken_gpt2, text: str) -> None:
    ids = gpt2.encode(text)
    assert ids == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.decode_with_offsets(ids) == tiktoken_gpt2.decode_with_offsets(ids)
    assert gpt2.decode_with_offsets(ids)[0] == text


def test_the_texts_do_split_characters(gpt2) -> None:
    """The cases above are the interesting ones: tokens that start inside a character."""
    for text in TEXTS[2:5]:
        assert _splits_a_character(gpt2, gpt2.encode(text)), text
    ids = gpt2.encode("🙃")  # f0 9f 99 83: one character, three tokens
    assert len(ids) == 3 and gpt2.decode_with_offsets(ids) == ("🙃", [0, 0, 0])
    ids = gpt2.encode("a你b")
    text, offsets = gpt2.decode_with_offsets(ids)
    assert text == "a你b" and offsets[-1] == 2 and all(o in (0, 1) for o in offsets[:-1])


@given(st.text(max_size=60))
def test_offsets_equal_tiktoken_on_any_text(gpt2, tiktoken_gpt2, text: str) -> None:
    ids = gpt2.encode_ordinary(text.encode("utf-8", "replace").decode("utf-8"))
    assert gpt2.decode_with_offsets(ids) == tiktoken_gpt2.decode_with_offsets(ids)


@pytest.mark.parametrize("text", TEXTS[1:5])
def test_slices_that_cut_characters_raise_like_tiktoken(gpt2, tiktoken_gpt2, text) -> None:
    ids = gpt2.encode(text)
    for start in range(len(ids)):
        for end in range(start, len(ids) + 1, 3):
            try:
                expected = tiktoken_gpt2.decode_with_offsets(ids[start:end])
            except UnicodeDecodeError:
                with pytest.raises(UnicodeDecodeError):
                    gpt2.decode_with_offsets(ids[start:end])
            else:
                assert gpt2.decode_with_offsets(ids[start:end]) == expected


def test_offsets_unknown_id(gpt2) -> None:
    with pytest.raises(KeyError, match="99999"):
        gpt2.decode_with_offsets([1, 99999])


@pytest.mark.parametrize("text", TEXTS)
def test_incremental_decoder_gives_whole_characters(gpt2, text: str) -> None:
    dec = gpt2.incremental_decoder()
    steps = [dec.step(i) for i in gpt2.encode(text)]
    assert "".join(steps) + dec.flush() == text
    assert all("\ufffd" not in s for s in steps)


def test_incremental_decoder_waits_for_the_last_byte(gpt2) -> None:
    ids = gpt2.encode("a🙃b")  # a, f0 9f, 99, 83, b (the emoji in three tokens)
    dec = IncrementalDecoder(gpt2)
    steps = [dec.step(i) for i in ids]
    assert steps == ["a", "", "", "🙃", "b"]
    # a stream that stops inside a character ends with U+FFFD, as decode() does
    dec = IncrementalDecoder(gpt2)
    assert [dec.step(i) for i in ids[:3]] == ["a", "", ""]
    assert dec.flush() == "\ufffd" == gpt2.decode(ids[:3])[1:]
    assert dec.step(ids[0]) == "a"  # flushed: starts anew


def test_incremental_decoder_unknown_id_keeps_state(gpt2) -> None:
    ids = gpt2.encode("🙃")
    dec = gpt2.incremental_decoder()
    assert dec.step(ids[0]) == ""
    with pytest.raises(KeyError, match="123456"):
        dec.step(123456)
    assert dec.step(ids[1]) + dec.step(ids[2]) == "🙃"


@given(st.lists(st.integers(0, 50256), max_size=40))
def test_incremental_decoder_equals_decode(gpt2, ids: list[int]) -> None:
    """Any ids, however they cut characters: the pieces add up to decode(ids)."""
    dec = gpt2.incremental_decoder()
    assert "".join(dec.step(i) for i in ids) + dec.flush() == gpt2.decode(ids)
    pieces = list(decode_stream(gpt2, ids))
    assert "".join(pieces) == gpt2.decode(ids) and all(pieces)


def test_visible_escapes() -> None:
    assert visible(b" a\n") == [(" a\n", False)]
    assert visible("你".encode()[:2]) == [("\\xe4\\xbd", True)]
    assert visible("x\x00\u200b\tz\u00a0".encode()) == [
        ("x", False),
        ("\\x00\\u200b\\t", True),
        ("z", False),
        ("\\xa0", True),
    ]
    assert visible(b"\xed\xa0\x80") == [("\\xed\\xa0\\x80", True)]  # an encoded surrogate
