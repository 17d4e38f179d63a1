"""transformers reads a saved folder as bytepair wrote it: `AutoTokenizer.from_pretrained` gives
bytepair's ids and knows the special tokens' roles. Importing transformers takes seconds, so the
tokenizers are built and loaded once per module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bytepair
from bytepair.cli.main import main as cli_main

transformers = pytest.importorskip("transformers")

EOT = "<|endoftext|>"
SPECIALS = [EOT, "<|pad|>", "<|ü🙃|>"]
CHAT = ["<|im_start|>", "<|im_end|>"]
CORPUS = [
    "Hello, world! It's a test.\n\nNew paragraph   with  spaces\t\ttabs. 1234567 12 1,234.56",
    "Héllò hôw are ü? 🙃 你好，世界！ Привет мир, مرحبا नमस्ते दुनिया 안녕하세요 こんにちは世界",
    "Γειά σου κόσμε שלום עולם สวัสดีชาวโลก ሰላም ዓለም Բարեւ աշխարհ გამარჯობა",
    "I'M he'S it'LL we'Ve they'RE ſ 'ſ ٣٤٥ ½ \x00\x7f\ufeff e\u0301 👨\u200d👩\u200d👧 ß ﬀ",
    "def f(x):\n    return x/2  # /path/to/file\n\n\n\r\n",
]


@pytest.fixture(scope="module")
def tok() -> bytepair.Tokenizer:
    trained = bytepair.train_from_iterator(CORPUS * 20, 560, SPECIALS, progress=False)
    return trained.with_special_tokens(CHAT)


@pytest.fixture(scope="module")
def folder(tok: bytepair.Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tok")
    tok.save(out)
    return out


@pytest.fixture(scope="module")
def fast(folder: Path) -> Any:
    return transformers.AutoTokenizer.from_pretrained(folder)


def _text() -> st.SearchStrategy[str]:
    """Text of any script (every code point but surrogates) with special tokens inside."""
    part = st.one_of(st.text(max_size=20), st.sampled_from([*SPECIALS, *CHAT, "<|", "|>", " "]))
    return st.lists(part, max_size=12).map("".join)


@given(text=_text())
def test_auto_tokenizer_gives_bytepair_ids(tok: bytepair.Tokenizer, fast: Any, text: str) -> None:
    ids = tok.encode(text)
    assert fast(text)["input_ids"] == ids
    assert fast.encode(text) == ids
    assert fast.decode(ids) == text


def test_corpus_ids_and_decoding(tok: bytepair.Tokenizer, fast: Any) -> None:
    texts = [*CORPUS, f"{CHAT[0]}user\nhi{CHAT[1]}{EOT}"]
    assert fast(texts)["input_ids"] == tok.encode_batch(texts)
    ids = tok.encode(texts[-1])
    assert fast.decode(ids, skip_special_tokens=True) == "user\nhi"


def test_roles_by_default(tok: bytepair.Tokenizer, fast: Any) -> None:
    assert type(fast).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend")
    assert fast.eos_token == EOT and fast.eos_token_id == tok.special_tokens[EOT]
    assert fast.bos_token is None and fast.pad_token is None and fast.unk_token is None
    assert fast.model_max_length == int(1e30)
    assert set(fast.all_special_tokens) == set(tok.special_tokens)
    assert len(fast) == tok.n_vocab


def test_cli_roles_reach_transformers(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "chat"
    roles = ["--eos-token", CHAT[1], "--bos-token", CHAT[0], "--pad-token", "<|pad|>"]
    argv = ["add-special-tokens", str(folder), "<|tool|>", "-o", str(out), *roles]
    assert cli_main([*argv, "--model-max-length", "2048", "--quiet"]) == 0
    fast = transformers.AutoTokenizer.from_pretrained(out)
    tok = bytepair.load(out)
    assert (fast.eos_token, fast.bos_token, fast.pad_token) == (CHAT[1], CHAT[0], "<|pad|>")
    assert fast.pad_token_id == tok.special_tokens["<|pad|>"]
    assert fast.model_max_length == 2048
    text = f"{CHAT[0]}user\n<|tool|> hi{CHAT[1]}"
    assert fast(text)["input_ids"] == tok.encode(text)  # no bos added: there is no template
    batch = fast([text, "hi"], padding=True)["input_ids"]
    assert batch[1][-1] == tok.special_tokens["<|pad|>"]


def test_bytepair_loads_what_transformers_saves(
    tok: bytepair.Tokenizer, fast: Any, tmp_path: Path
) -> None:
    fast.save_pretrained(tmp_path)
    back = bytepair.load(tmp_path)
    assert back.vocab == tok.vocab and back.special_tokens == tok.special_tokens
    assert back.special_token_roles == tok.special_token_roles
    for text in CORPUS:
        assert back.encode(text) == tok.encode(text)
