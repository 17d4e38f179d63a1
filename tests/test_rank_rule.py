"""Rank files encode by tiktoken's rule (docs/spec.md §2.2): ids are ranks, any two adjacent tokens
whose bytes are a token merge, lowest rank first, and a pretoken that is a token is taken whole.
Where every token has a merge of two lower-ranked tokens (OpenAI's files) that is the merge list
HF's converter derives; where some have none (Llama 3's, Qwen 3.5's ranks) the tokenizer keeps
the rule itself. Checked against tiktoken on random vocabularies whose ranks are shuffled, so
that many tokens are made of tokens ranked after them; and HF's `ignore_merges` lists (every
split of every token, as Meta's Llama 3 `tokenizer.json`) against HF tokenizers.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair

tiktoken = pytest.importorskip("tiktoken")
PATTERN = r"\S+|\s+"  # keeps every character: the BPE is what is checked


def shuffled_ranks(seed: int, n: int) -> dict[bytes, int]:
    """The 256 bytes, then `n` tokens over "abcd" of 2-6 letters ranked in random order."""
    rng = random.Random(seed)
    tokens: list[bytes] = []
    while len(tokens) < n:
        token = bytes(rng.choice(b"abcd") for _ in range(rng.randint(2, 6)))
        if token not in tokens:
            tokens.append(token)
    return {bytes([b]): b for b in range(256)} | {t: 256 + i for i, t in enumerate(tokens)}


def write_rank_file(ranks: dict[bytes, int], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "r.tiktoken"
    lines = "".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items())
    path.write_text(lines, encoding="ascii")
    sidecar = {"name": "r", "pat_str": PATTERN, "special_tokens": {}}
    (folder / "r.tiktoken.json").write_text(json.dumps(sidecar), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=[1, 2, 3])
def pair(request, tmp_path_factory) -> tuple[bytepair.Tokenizer, object]:
    ranks = shuffled_ranks(request.param, 120)
    path = write_rank_file(ranks, tmp_path_factory.mktemp("ranks"))
    enc = tiktoken.Encoding("r", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    return bytepair.load(path), enc


words = st.text(alphabet="abcd ", max_size=200)


@given(text=words)
@settings(deadline=None)
def test_rank_files_encode_as_tiktoken(pair, text: str) -> None:
    tok, enc = pair
    assert tok.bpe == "tiktoken"  # shuffled ranks leave tokens that no merge of lower ones makes
    assert tok.encode(text) == enc.encode_ordinary(text)


def test_rank_rule_survives_pickle_and_the_model_file(pair, tmp_path) -> None:
    import pickle

    tok, enc = pair
    text = "abcdabcd dcba aabbccdd " * 20
    for again in (pickle.loads(pickle.dumps(tok)), _saved(tok, tmp_path, "bytepair")):
        assert again.bpe == "tiktoken" and again.encode(text) == enc.encode_ordinary(text)
    with pytest.raises(ValueError, match=r"tiktoken's rule.*merge list cannot say"):
        tok.save(tmp_path / "gpt2", formats=["gpt2"])
    assert not (tmp_path / "gpt2").exists()


def _saved(tok: bytepair.Tokenizer, tmp_path: Path, fmt: str) -> bytepair.Tokenizer:
    tok.save(tmp_path / fmt, formats=[fmt])
    return bytepair.load(tmp_path / fmt)


def test_openai_files_keep_their_merge_list(tiktoken_ready) -> None:
    if "cl100k_base" not in tiktoken_ready:
        pytest.skip("tiktoken's cl100k_base file is not available")
    tok = bytepair.load("cl100k_base")
    assert tok.bpe == "gpt2" and len(tok.merges) == 100_000


def test_hf_every_split_list_with_ignore_merges_is_hfs(pair, tmp_path) -> None:
    """A rank tokenizer saved as tokenizer.json holds every split and `ignore_merges`, as Meta's
    Llama 3 file; bytepair reads that file as HF tokenizers encodes it."""
    tokenizers = pytest.importorskip("tokenizers")
    tok, _ = pair
    tok.save(tmp_path, formats=["hf"])
    doc = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert doc["model"]["ignore_merges"] is True
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    again = bytepair.load(tmp_path / "tokenizer.json")
    assert again.ignore_merges and again.bpe == "hf"
    rng = random.Random(7)
    for _ in range(300):
        text = "".join(rng.choice("abcd ") for _ in range(rng.randint(0, 120)))
        assert again.encode(text) == hf.encode(text, add_special_tokens=False).ids, text
