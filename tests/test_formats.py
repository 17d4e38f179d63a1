"""Tests of the interchange formats (docs/spec.md §3): every format round-trips a tokenizer
(special tokens and pattern included); HF `tokenizers` and `tiktoken` built from the exported
files give bytepair's ids for every preset; GPT-2's files come back byte for byte; `load`
detects formats; foreign `tokenizer.json` shapes load or are refused naming the part; malformed
files name the file and line. The whole-corpus check is `tools/check_peers.py`.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

import bytepair
from bytepair.count import pretokenize
from bytepair.formats import hf as hf_format
from bytepair.patterns import BEHAVIORS, Split
from unicode_diff import ALL_CHARS

EOT = "<|endoftext|>"
SPECIALS = [EOT, "<|pad|>", "<|ü🙃|>"]
PRESETS = ["gpt2", "cl100k", "o200k"]
FILES = [
    "bytepair.model",
    "tokenizer.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.tiktoken",
    "tokenizer.tiktoken.json",
]
#: Written beside tokenizer.json for transformers; they hold no tokenizer to load.
CONFIG_FILES = ["tokenizer_config.json", "special_tokens_map.json"]
TEXTS = [
    "",
    "Hello, world! It's a test.\n\nNew paragraph   with  spaces\t\ttabs.",
    "Héllò hôw are ü? 🙃 你好，世界！ Привет мир, مرحبا",
    "line one\r\nline two\r\n\r\n  indented\r\n",
    "I'M he'S it'LL we'Ve they'RE ſ 'ſ 1234567 12 1,234.56 ٣٤٥ ½",
    "\x00\x7f\ufeff e\u0301 👨\u200d👩\u200d👧 \u2028 \x85 ǅ ß ﬀ",
    f"a{EOT}b <|pad|> c{EOT}{EOT}<|ü🙃|>",
    "def f(x):\n    return x/2  # /path/to/file\n\n\n",
]


def _corpus(data: Path) -> list[str]:
    names = ["corpus.en", "tinystories_sample.txt", "german.txt", "address.txt"]
    return [(data / n).read_text(encoding="utf-8") for n in names] + TEXTS


@pytest.fixture(scope="module", params=PRESETS)
def trained(request, cs336_data: Path) -> bytepair.Tokenizer:
    return bytepair.train_from_iterator(
        _corpus(cs336_data), 900, SPECIALS, pattern=request.param, progress=False
    )


@pytest.fixture(scope="module")
def gpt2(cs336_data: Path) -> bytepair.Tokenizer:
    return bytepair.load(cs336_data / "gpt2_vocab.json")


def _same(a: bytepair.Tokenizer, b: bytepair.Tokenizer) -> None:
    assert a.vocab == b.vocab
    assert a.merges == b.merges
    assert list(a.special_tokens.items()) == list(b.special_tokens.items())
    assert a.pattern == b.pattern
    assert a.special_token_roles == b.special_token_roles


def _tiktoken(directory: Path):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    sidecar = json.loads((directory / "tokenizer.tiktoken.json").read_text(encoding="utf-8"))
    ranks = load_tiktoken_bpe(str(directory / "tokenizer.tiktoken"))
    return tiktoken.Encoding(mergeable_ranks=ranks, **sidecar)


# --- round trips --------------------------------------------------------------------------------


def test_every_format_round_trips(trained, tmp_path: Path) -> None:
    trained.save(tmp_path)
    assert sorted(os.listdir(tmp_path)) == sorted(FILES + CONFIG_FILES)
    for name in FILES:
        # GPT-2's pair holds no pattern; special tokens are found as tokens no merge makes.
        gpt2_pair = name in ("vocab.json", "merges.txt")
        back = bytepair.load(tmp_path / name, pattern=trained.pattern if gpt2_pair else None)
        _same(back, trained)
        for text in TEXTS:
            assert back.encode(text) == trained.encode(text)
    _same(bytepair.load(tmp_path), trained)


def test_gpt2_files_are_byte_identical_through_every_format(gpt2, cs336_data, tmp_path) -> None:
    assert gpt2.special_tokens == {EOT: 50256}
    first = tmp_path / "first"
    gpt2.save(first)
    assert (first / "vocab.json").read_bytes() == (cs336_data / "gpt2_vocab.json").read_bytes()
    merges = (first / "merges.txt").read_bytes()
    assert merges == b"#version: 0.2\n" + (cs336_data / "gpt2_merges.txt").read_bytes()
    for name in FILES:
        again = tmp_path / name
        bytepair.load(first / name).save(again)
        for written in FILES + CONFIG_FILES:
            assert (again / written).read_bytes() == (first / written).read_bytes(), (name, written)


def test_hf_tokenizers_and_tiktoken_give_our_ids(trained, cs336_data: Path, tmp_path) -> None:
    import tokenizers

    trained.save(tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    enc = _tiktoken(tmp_path)
    for text in _corpus(cs336_data):
        ids = trained.encode(text)
        assert hf.encode(text, add_special_tokens=False).ids == ids, text[:60]
        assert enc.encode(text, allowed_special="all") == ids, text[:60]
        assert hf.decode(ids, skip_special_tokens=False) == text
    assert enc.special_tokens_set == set(SPECIALS)


def test_gpt2_exports_equal_tiktoken_gpt2(gpt2, tiktoken_gpt2, cs336_data, tmp_path) -> None:
    gpt2.save(tmp_path, formats=["tiktoken"])
    enc = _tiktoken(tmp_path)
    assert enc._mergeable_ranks == tiktoken_gpt2._mergeable_ranks
    assert enc._special_tokens == tiktoken_gpt2._special_tokens
    text = (cs336_data / "tinystories_sample.txt").read_text(encoding="utf-8")
    ours = enc.encode(text, allowed_special="all")
    assert ours == tiktoken_gpt2.encode(text, allowed_special="all") == gpt2.encode(text)


def test_transformers_loads_tokenizer_json(trained, tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    trained.save(tmp_path, formats=["hf"])
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(tmp_path / "tokenizer.json"), eos_token=EOT
    )
    for text in TEXTS:
        assert fast(text)["input_ids"] == trained.encode(text)
    assert fast.eos_token_id == trained.special_tokens[EOT]


# --- the HF Split regex pitfall -----------------------------------------------------------------


def test_cl100k_possessive_digits_are_rewritten_for_hf() -> None:
    from tokenizers import Regex, pre_tokenizers

    def split(regex: str, text: str) -> list[str]:
        pre = pre_tokenizers.Split(Regex(regex), behavior="isolated")
        return [piece for piece, _ in pre.pre_tokenize_str(text)]

    text = "1234567 abc"
    assert pretokenize(text, pattern="cl100k") == ["123", "456", "7", " abc"]
    assert split(bytepair.CL100K_PATTERN, text) == ["1234567", " abc"]  # Oniguruma's reading
    assert split(hf_format.hf_regex("cl100k"), text) == ["123", "456", "7", " abc"]
    with pytest.raises(ValueError, match=r"possessive '\{2,4\}\+'.*Oniguruma"):
        hf_format.hf_regex(r"\d{2,4}+|\s")


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(
    "context",
    [
        "{c}",
        "'{c}",
        *(pytest.param(c, marks=pytest.mark.slow) for c in ("a{c}b", " {c}1", "{c}\n")),
    ],
)
def test_hf_split_equals_bytepair_on_every_code_point(preset: str, context: str) -> None:
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(hf_format.hf_regex(preset)), behavior="isolated")
    text = "\x00".join(context.format(c=c) for c in ALL_CHARS)
    theirs = [piece for piece, _ in split.pre_tokenize_str(text)]
    assert theirs == pretokenize(text, pattern=preset)


# --- foreign tokenizer.json files -----------------------------------------------------------


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_tokenizer_json_both_merge_spellings(trained, tmp_path: Path) -> None:
    trained.save(tmp_path, formats=["hf"])
    doc = _json(tmp_path / "tokenizer.json")
    assert all(isinstance(m, str) for m in doc["model"]["merges"])  # read by every version
    doc["model"]["merges"] = [m.split(" ") for m in doc["model"]["merges"]]  # tokenizers >= 0.20
    (tmp_path / "pairs.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    _same(bytepair.load(tmp_path / "pairs.json"), trained)


def test_tokenizer_json_without_optional_keys(trained, tmp_path: Path) -> None:
    """Older and hand-written files leave out options at their defaults."""
    trained.save(tmp_path, formats=["hf"])
    doc = _json(tmp_path / "tokenizer.json")
    for key in (
        "dropout",
        "unk_token",
        "continuing_subword_prefix",
        "end_of_word_suffix",
        "fuse_unk",
        "byte_fallback",
        "ignore_merges",
    ):
        del doc["model"][key]
    del doc["normalizer"], doc["post_processor"], doc["truncation"], doc["padding"]
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    _same(bytepair.load(tmp_path / "tokenizer.json"), trained)


def _hf_built(pattern: str, tmp_path: Path, *, ignore_merges: bool = False) -> Path:
    """A tokenizer.json written by HF itself in Llama-3's shape (pair merges, added tokens)."""
    import tokenizers
    from tokenizers import Regex, decoders, models, pre_tokenizers

    tok = bytepair.train_from_iterator([TEXTS[1] * 3, TEXTS[2] * 3], 330, progress=False)
    tok.save(tmp_path / "src", formats=["gpt2"])
    model = models.BPE.from_file(
        str(tmp_path / "src" / "vocab.json"),
        str(tmp_path / "src" / "merges.txt"),
        ignore_merges=ignore_merges,
    )
    hf = tokenizers.Tokenizer(model)
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(["<|begin_of_text|>", "<|eot_id|>"])
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    return path


@pytest.mark.parametrize("ignore_merges", [False, True])
def test_llama3_shaped_tokenizer_json_loads_with_its_pattern(tmp_path, ignore_merges) -> None:
    import tokenizers

    path = _hf_built(bytepair.O200K_PATTERN, tmp_path, ignore_merges=ignore_merges)
    assert isinstance(_json(path)["model"]["merges"][0], list)
    tok = bytepair.load(path)
    assert tok.pattern == bytepair.O200K_PATTERN
    assert tok.special_tokens == {"<|begin_of_text|>": 330, "<|eot_id|>": 331}
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in [*TEXTS, "<|begin_of_text|>hi<|eot_id|>"]:
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids


def test_gpt2_byte_level_only_tokenizer_json(gpt2, tmp_path: Path) -> None:
    gpt2.save(tmp_path, formats=["hf"])
    doc = _json(tmp_path / "tokenizer.json")
    doc["pre_tokenizer"] = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": True,
    }
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    _same(bytepair.load(tmp_path), gpt2)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda d: d.update(normalizer={"type": "Lowercase"}), "unsupported normalizer"),
        (
            lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}]}),
            "unsupported normalizer",
        ),
        (lambda d: d["model"].update(type="WordPiece"), "unsupported model type"),
        (lambda d: d["model"].update(byte_fallback=True), "byte_fallback"),
        (lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(behavior="Gone"), "Split"),
        (
            lambda d: d["pre_tokenizer"]["pretokenizers"][1].update(add_prefix_space=True),
            "pre_tokenizer ByteLevel with add_prefix_space=true",
        ),
        (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "unsupported pre_tokenizer"),
        (lambda d: d["model"]["vocab"].update({"ab c": 5000}), r"line \d+: vocab token 'ab c'"),
        (lambda d: d["model"]["merges"].append("Ġ"), r"line \d+: merge \d+ is 'Ġ'"),
    ],
)
def test_unsupported_tokenizer_json_is_refused(trained, tmp_path, change, match) -> None:
    trained.save(tmp_path, formats=["hf"])
    doc = _json(tmp_path / "tokenizer.json")
    change(doc)
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    with pytest.raises(ValueError, match=match) as error:
        bytepair.load(tmp_path / "tokenizer.json")
    assert "tokenizer.json" in str(error.value)


# --- tiktoken -------------------------------------------------------------------------------


def test_tiktoken_without_sidecar_asks_for_the_pattern(trained, tmp_path: Path) -> None:
    trained.save(tmp_path, formats=["tiktoken"])
    (tmp_path / "tokenizer.tiktoken.json").unlink()
    with pytest.raises(ValueError, match="pass pattern="):
        bytepair.load(tmp_path / "tokenizer.tiktoken")
    back = bytepair.load(tmp_path, pattern=trained.pattern, special_tokens=trained.special_tokens)
    _same(back, trained)
    listed = bytepair.load(tmp_path / "tokenizer.tiktoken", pattern="gpt2", special_tokens=[EOT])
    assert listed.special_tokens == {EOT: max(trained.vocab) - len(SPECIALS) + 1}


def test_tiktoken_bad_line_is_named(trained, tmp_path: Path) -> None:
    trained.save(tmp_path, formats=["tiktoken"])
    path = tmp_path / "tokenizer.tiktoken"
    lines = path.read_text(encoding="ascii").splitlines()
    for bad in ["!!!! 3", f"{base64.b64encode(b'zz').decode()} x", lines[3].split()[0]]:
        path.write_text("\n".join([*lines[:4], bad, *lines[4:]]) + "\n", encoding="ascii")
        with pytest.raises(ValueError, match=r"tokenizer\.tiktoken: line 5"):
            bytepair.load(path)


def test_lone_surrogate_tokens_are_refused_naming_the_file(trained, tmp_path: Path) -> None:
    """Found by the fuzzer: JSON can spell a lone surrogate ("\\ud800"), UTF-8 cannot."""
    trained.save(tmp_path, formats=["tiktoken", "hf"])
    sidecar = tmp_path / "tokenizer.tiktoken.json"
    doc = _json(sidecar)
    doc["special_tokens"]["\ud800"] = 5000
    sidecar.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tiktoken\.json: token '\\ud800' holds a lone"):
        bytepair.load(tmp_path / "tokenizer.tiktoken")
    doc = _json(tmp_path / "tokenizer.json")
    doc["added_tokens"][0]["content"] = "\udfff"
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer\.json: token '\\udfff' holds a lone"):
        bytepair.load(tmp_path / "tokenizer.json")


def test_tiktoken_refuses_ids_out_of_merge_order(tmp_path: Path) -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"abc", 257: b"ab"}
    tok = bytepair.Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")])
    with pytest.raises(ValueError, match="tiktoken applies merges in id order"):
        tok.save(tmp_path, formats=["tiktoken"])
    assert not list(tmp_path.iterdir())
    tok.save(tmp_path, formats=["gpt2", "hf", "bytepair"])
    _same(bytepair.load(tmp_path / "tokenizer.json"), tok)


# --- detection and options ----------------------------------------------------------------------


def test_load_detects_every_file_and_folder(gpt2, cs336_data: Path, tmp_path: Path) -> None:
    _same(bytepair.load(cs336_data / "gpt2_merges.txt"), gpt2)  # finds gpt2_vocab.json
    for fmt in ["gpt2", "hf", "tiktoken", "bytepair"]:
        gpt2.save(tmp_path / fmt, formats=[fmt])
        _same(bytepair.load(tmp_path / fmt), gpt2)
    with pytest.raises(ValueError, match="text of no known kind"):
        bytepair.load(cs336_data / "corpus.en")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no tokenizer file"):
        bytepair.load(tmp_path / "empty")
    (tmp_path / "alone.json").write_text('{"add_bos_token": false}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"a JSON file of no known kind .first key 'add_bos"):
        bytepair.load(tmp_path / "alone.json")
    (tmp_path / "vocab.json").write_text('{"a": 0}', encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="partner file"):
        bytepair.load(tmp_path / "vocab.json")
    with pytest.raises(ValueError, match="stores its own pattern"):
        bytepair.load(tmp_path / "hf", pattern="cl100k")
    with pytest.raises(ValueError, match="unknown format"):
        gpt2.save(tmp_path, formats=["sentencepiece"])


def test_gpt2_files_take_a_pattern_and_special_tokens(trained, tmp_path: Path) -> None:
    trained.save(tmp_path, formats=["gpt2"])
    back = bytepair.load(tmp_path / "vocab.json", pattern=trained.pattern, special_tokens=SPECIALS)
    _same(back, trained)
    assert bytepair.load(tmp_path).pattern == bytepair.GPT2_PATTERN  # GPT-2's by default


@pytest.mark.parametrize("behavior", BEHAVIORS)
@pytest.mark.parametrize("invert", [False, True])
def test_split_behaviours_give_hf_tokenizers_ids(
    gpt2, cs336_data: Path, tmp_path: Path, behavior: str, invert: bool
) -> None:
    """Every HF `Split` behaviour, inverted or not, before GPT-2's pattern: written to
    tokenizer.json, HF tokenizers reads the same pieces and gives the same ids, and bytepair
    reads the same pattern back."""
    import tokenizers

    pattern = (Split(r"\p{N}+|[!?]", behavior, invert), bytepair.GPT2_PATTERN)
    tok = bytepair.Tokenizer(gpt2.vocab, gpt2.merges, ["<|endoftext|>"], pattern=pattern)
    with pytest.warns(UserWarning, match="not written: tokenizer.tiktoken"):
        tok.save(tmp_path)
    assert bytepair.load(tmp_path / "tokenizer.json").pattern == tok.pattern
    assert bytepair.load(tmp_path / "bytepair.model").pattern == tok.pattern
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in [*TEXTS, "a1b22 c333!? x", "12!ab?  3", *_corpus(cs336_data)[:2]]:
        ids = tok.encode(text)
        assert hf.encode(text, add_special_tokens=False).ids == ids, text[:60]
