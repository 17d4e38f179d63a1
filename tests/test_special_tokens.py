"""Special tokens added after training (`Tokenizer.with_special_tokens`, `bytepair
add-special-tokens`) and the roles transformers reads (`special_token_roles`,
`model_max_length`, `tokenizer_config.json`): ids, files, round trips and bad input.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import bytepair
from bytepair.cli.main import main as cli_main

EOT = "<|endoftext|>"
CHAT = ["<|im_start|>", "<|im_end|>"]
TEXTS = [
    "Hello, world! It's a test.\n\nNew paragraph   with  spaces\t\ttabs.",
    "Héllò 🙃 你好，世界！ Привет мир, مرحبا नमस्ते 안녕하세요 こんにちは",
    f"<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\nhello{EOT}",
    "<|im_start<|im_end|>|>im_end|><|im_start|><|im_start|>",
]
VERY_LARGE_INTEGER = int(1e30)


@pytest.fixture(scope="module")
def tok() -> bytepair.Tokenizer:
    corpus = [t.replace("<|im_start|>", "").replace("<|im_end|>", "") for t in TEXTS] * 10
    return bytepair.train_from_iterator(corpus, 400, [EOT, "<|pad|>"], progress=False)


@pytest.fixture(scope="module")
def chat(tok: bytepair.Tokenizer) -> bytepair.Tokenizer:
    return tok.with_special_tokens(CHAT)


def _same(a: bytepair.Tokenizer, b: bytepair.Tokenizer) -> None:
    assert a.vocab == b.vocab
    assert a.merges == b.merges
    assert list(a.special_tokens.items()) == list(b.special_tokens.items())
    assert a.pattern == b.pattern
    assert a.special_token_roles == b.special_token_roles
    assert a.model_max_length == b.model_max_length


# --- with_special_tokens --------------------------------------------------------------------------


def test_new_special_tokens_come_after_the_last_id(
    tok: bytepair.Tokenizer, chat: bytepair.Tokenizer
) -> None:
    n = tok.n_vocab
    assert chat.special_tokens == tok.special_tokens | {CHAT[0]: n, CHAT[1]: n + 1}
    assert list(chat.special_tokens) == [*tok.special_tokens, *CHAT]
    assert chat.n_vocab == n + 2
    assert {i: b for i, b in chat.vocab.items() if i < n} == tok.vocab  # every old id unchanged
    assert chat.merges == tok.merges and chat.pattern == tok.pattern
    assert chat.unicode_version == tok.unicode_version
    assert chat.special_token_roles == tok.special_token_roles == {"eos_token": EOT}


def test_encoding_with_the_new_special_tokens(
    tok: bytepair.Tokenizer, chat: bytepair.Tokenizer
) -> None:
    start, end = chat.special_tokens[CHAT[0]], chat.special_tokens[CHAT[1]]
    for text in TEXTS:
        ids = chat.encode(text)
        assert chat.decode(ids) == text
        assert chat.encode_ordinary(text) == tok.encode_ordinary(text)
        assert chat.encode(text, allowed_special={EOT}) == tok.encode(text)
        pieces = text.replace(CHAT[0], "\0").replace(CHAT[1], "\0").split("\0")
        assert len([i for i in ids if i in (start, end)]) == len(pieces) - 1
    ids = chat.encode(TEXTS[2])
    assert ids[0] == start and ids[-1] == tok.special_tokens[EOT] and end in ids


def test_a_special_token_equal_to_a_plain_token_gets_a_new_id(tok: bytepair.Tokenizer) -> None:
    word = next(b for b in tok.vocab.values() if len(b) > 2 and b.isalpha()).decode()
    old_id = tok.token_to_id(word.encode())
    new = tok.with_special_tokens([word, "a"])
    assert new.special_tokens[word] == tok.n_vocab and new.special_tokens["a"] == tok.n_vocab + 1
    assert new.vocab[old_id] == word.encode() and new.vocab[97] == b"a"
    assert new.encode(word) == [tok.n_vocab]
    assert new.encode_ordinary(word) == [old_id]


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        ([EOT], r"'<\|endoftext\|>' is already a special token of this tokenizer \(id \d+\)"),
        ([CHAT[0], "<|pad|>"], r"'<\|pad\|>' is already a special token"),
        ([CHAT[0], CHAT[0]], r"'<\|im_start\|>' is given twice"),
        ([CHAT[0], ""], r"must not be empty"),
    ],
)
def test_bad_special_tokens(tok: bytepair.Tokenizer, tokens: list[str], message: str) -> None:
    before = tok.vocab
    with pytest.raises(ValueError, match=message):
        tok.with_special_tokens(tokens)
    assert tok.vocab == before


def test_roles_are_checked_merged_and_defaulted(tok: bytepair.Tokenizer) -> None:
    plain = bytepair.Tokenizer(tok.vocab, tok.merges)
    assert plain.special_token_roles == {}
    # <|endoftext|> becomes the eos token when it arrives, unless a role is given for eos
    assert plain.with_special_tokens([EOT]).special_token_roles == {"eos_token": EOT}
    none = plain.with_special_tokens([EOT], special_token_roles={"eos_token": None})
    assert none.special_token_roles == {}
    both = tok.with_special_tokens(
        CHAT, special_token_roles={"pad_token": "<|pad|>", "bos_token": CHAT[0]}
    )
    assert both.special_token_roles == {
        "bos_token": CHAT[0],
        "eos_token": EOT,
        "pad_token": "<|pad|>",
    }
    moved = both.with_special_tokens([], special_token_roles={"eos_token": CHAT[1]})
    assert moved.special_token_roles["eos_token"] == CHAT[1]
    with pytest.raises(ValueError, match=r"the pad_token '<\|nope\|>' is not a special token"):
        tok.with_special_tokens(CHAT, special_token_roles={"pad_token": "<|nope|>"})
    with pytest.raises(ValueError, match=r"unknown special-token role 'eos'; the roles are"):
        tok.with_special_tokens(CHAT, special_token_roles={"eos": EOT})
    with pytest.raises(ValueError, match="the eos_token 'hi' is not a special token"):
        bytepair.Tokenizer(tok.vocab, tok.merges, special_token_roles={"eos_token": "hi"})


def test_roles_and_max_length_setters(tok: bytepair.Tokenizer) -> None:
    copy = pickle.loads(pickle.dumps(tok))
    copy.special_token_roles = {"pad_token": "<|pad|>"}
    assert copy.special_token_roles == {"pad_token": "<|pad|>"}  # replaced, not merged
    copy.model_max_length = 2048
    assert copy.model_max_length == 2048
    copy.model_max_length = VERY_LARGE_INTEGER  # transformers' "unknown"
    assert copy.model_max_length is None
    with pytest.raises(ValueError, match="model_max_length must be 1 or more, got 0"):
        copy.model_max_length = 0
    with pytest.raises(TypeError, match="model_max_length must be an int or None"):
        copy.model_max_length = 1.5  # type: ignore[assignment]
    assert tok.special_token_roles == {"eos_token": EOT}  # the original is unchanged


def test_pickle_keeps_roles_and_max_length(chat: bytepair.Tokenizer) -> None:
    tok = chat.with_special_tokens(
        [], special_token_roles={"pad_token": "<|pad|>"}, model_max_length=4096
    )
    _same(pickle.loads(pickle.dumps(tok)), tok)


# --- files ----------------------------------------------------------------------------------------


def test_save_load_round_trip_every_format(chat: bytepair.Tokenizer, tmp_path: Path) -> None:
    tok = chat.with_special_tokens(
        [], special_token_roles={"pad_token": "<|pad|>"}, model_max_length=1024
    )
    tok.save(tmp_path)
    _same(bytepair.load(tmp_path), tok)
    _same(bytepair.load(tmp_path / "tokenizer.json"), tok)  # roles from tokenizer_config.json
    for name in ("tokenizer.tiktoken", "vocab.json"):  # no roles there: the default
        back = bytepair.load(tmp_path / name, pattern=tok.pattern if name == "vocab.json" else None)
        assert back.vocab == tok.vocab and back.special_tokens == tok.special_tokens
        assert back.special_token_roles == {"eos_token": EOT}
        for text in TEXTS:
            assert back.encode(text) == tok.encode(text)
    again = tmp_path / "again"
    bytepair.load(tmp_path).save(again)
    for path in tmp_path.iterdir():
        if path.is_file():
            assert (again / path.name).read_bytes() == path.read_bytes(), path.name


def test_tiktoken_files_give_the_same_ids(chat: bytepair.Tokenizer, tmp_path: Path) -> None:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    chat.save(tmp_path, formats=["tiktoken"])
    sidecar = json.loads((tmp_path / "tokenizer.tiktoken.json").read_text(encoding="utf-8"))
    ranks = load_tiktoken_bpe(str(tmp_path / "tokenizer.tiktoken"))
    enc = tiktoken.Encoding(mergeable_ranks=ranks, **sidecar)
    assert enc.special_tokens_set == set(chat.special_tokens)
    for text in TEXTS:
        assert enc.encode(text, allowed_special="all") == chat.encode(text)


def test_tokenizer_config(chat: bytepair.Tokenizer, tmp_path: Path) -> None:
    chat.save(tmp_path, formats=["hf"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    others = ["<|pad|>", *CHAT]
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert config["model_max_length"] == VERY_LARGE_INTEGER
    assert config["eos_token"] == EOT and "bos_token" not in config
    assert config["clean_up_tokenization_spaces"] is False
    assert config["additional_special_tokens"] == others
    decoder = config["added_tokens_decoder"]
    assert {int(i): d["content"] for i, d in decoder.items()} == {
        i: t for t, i in chat.special_tokens.items()
    }
    assert all(d["special"] and not d["normalized"] for d in decoder.values())
    special_map = json.loads((tmp_path / "special_tokens_map.json").read_text(encoding="utf-8"))
    assert special_map == {"eos_token": EOT, "additional_special_tokens": others}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"eos_token": "<|nope|>"}, r"tokenizer_config\.json: eos_token '<\|nope\|>' is not a"),
        ({"pad_token": 3}, r"tokenizer_config\.json: pad_token must be a string or null"),
        ({"model_max_length": -5}, r"model_max_length must be a positive integer, got -5"),
    ],
)
def test_bad_tokenizer_config(
    chat: bytepair.Tokenizer, tmp_path: Path, change: dict[str, object], message: str
) -> None:
    chat.save(tmp_path, formats=["hf"])
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | change), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        bytepair.load(tmp_path)


def test_foreign_tokenizer_config_forms(chat: bytepair.Tokenizer, tmp_path: Path) -> None:
    """transformers also writes a role as an AddedToken object, and null for no token."""
    chat.save(tmp_path, formats=["hf"])
    path = tmp_path / "tokenizer_config.json"
    doc = json.loads(path.read_text())
    doc |= {"bos_token": {"__type": "AddedToken", "content": CHAT[0]}, "pad_token": None}
    doc["model_max_length"] = 1e30
    path.write_text(json.dumps(doc), encoding="utf-8")
    back = bytepair.load(tmp_path)
    assert back.special_token_roles == {"bos_token": CHAT[0], "eos_token": EOT}
    assert back.model_max_length is None


# --- command line ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder(tok: bytepair.Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tok")
    tok.save(out)
    return out


def test_cli_add_special_tokens(
    tok: bytepair.Tokenizer, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tok2"
    argv = ["add-special-tokens", str(folder), *CHAT, "-o", str(out), "--pad-token", "<|pad|>"]
    assert cli_main(argv) == 0
    err = capsys.readouterr().err
    assert f"<|im_start|> = {tok.n_vocab}" in err and "pad_token=<|pad|>" in err
    assert {p.name for p in out.iterdir()} == {p.name for p in folder.iterdir()}
    back = bytepair.load(out)
    _same(back, tok.with_special_tokens(CHAT, special_token_roles={"pad_token": "<|pad|>"}))
    _same(bytepair.load(folder), tok)  # the input is left as it was


def test_cli_add_special_tokens_in_place(
    tok: bytepair.Tokenizer, folder: Path, tmp_path: Path
) -> None:
    here = tmp_path / "here"
    tok.save(here)
    argv = ["add-special-tokens", str(here), CHAT[0], "-o", str(here), "--model-max-length", "64"]
    assert cli_main([*argv, "--quiet"]) == 0
    assert cli_main(["add-special-tokens", str(here), CHAT[1], "-o", str(here), "--quiet"]) == 0
    back = bytepair.load(here)
    _same(back, tok.with_special_tokens(CHAT, model_max_length=64))
    assert not [p for p in here.iterdir() if p.name.startswith(".")]  # no temporary files


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([EOT], "'<|endoftext|>' is already a special token of this tokenizer"),
        ([CHAT[0], CHAT[0]], "'<|im_start|>' is given twice"),
        ([""], "special tokens must not be empty"),
        ([CHAT[0], "--eos-token", "<|nope|>"], "the eos_token '<|nope|>' is not a special token"),
        ([], "nothing to change: give special tokens to add"),
        ([CHAT[0], "--formats", "onnx"], "unknown format(s) ['onnx']"),
    ],
)
def test_cli_add_special_tokens_bad_input(
    folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    out = tmp_path / "out"
    assert cli_main(["add-special-tokens", str(folder), *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bytepair: error: ") and message in err, err
    assert not out.exists()


def test_cli_train_roles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) * 5, encoding="utf-8")
    base = ["train", str(corpus), "--vocab-size", "300", "--quiet", "--special-token", EOT]
    base += ["--special-token", "<|pad|>"]
    out = tmp_path / "m"
    argv = [*base, "-o", str(out), "--pad-token", "<|pad|>", "--model-max-length", "128"]
    assert cli_main([*argv, "--save-at", "290"]) == 0
    for folder in (out, out / "290"):
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        assert config["eos_token"] == EOT and config["pad_token"] == "<|pad|>"
        assert config["model_max_length"] == 128
        assert bytepair.load(folder).special_token_roles == {
            "eos_token": EOT,
            "pad_token": "<|pad|>",
        }
    assert cli_main([*base, "-o", str(tmp_path / "n"), "--eos-token", ""]) == 0
    assert bytepair.load(tmp_path / "n").special_token_roles == {}
    # a role that names no special token fails before training, with nothing written
    assert cli_main([*base, "-o", str(tmp_path / "x"), "--bos-token", "<s>"]) == 2
    err = capsys.readouterr().err
    assert "--bos-token '<s>' is not a special token; add it with --special-token '<s>'" in err
    assert not (tmp_path / "x").exists()
