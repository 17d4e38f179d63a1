"""Tests of model files (docs/spec.md §3, §4): `save`/`load` (bytepair.model), GPT-2
`vocab.json` + `merges.txt` via `Tokenizer.from_files`, interoperability with HF `tokenizers`,
the GPT-2 byte table, clear errors on malformed files, and atomic writes.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

import bytepair
import reference as ref
from bytepair.formats._common import bytes_to_unicode, unicode_to_bytes

EOT = "<|endoftext|>"
SPECIALS = [EOT, "<pad>"]

SAMPLE_TEXTS = [
    "",
    "Hello, world! It's a test.\n\nNew paragraph   with  spaces\t\ttabs.",
    "Héllò hôw are ü? 🙃 你好\uff0c世界\uff01 Привет",
    "low lower lowest newest widest 12345 3.14",
    "\x00\x7f\ufeff e\u0301 👨\u200d👩\u200d👧",
]
TEXTS_WITH_SPECIALS = [*SAMPLE_TEXTS, f"a{EOT}b <pad> c{EOT}{EOT}", "<pad><pad> x"]


def _corpus(cs336_data: Path) -> list[str]:
    names = ["tinystories_sample.txt", "german.txt", "address.txt"]
    texts = [(cs336_data / n).read_text(encoding="utf-8") for n in names]
    return texts + SAMPLE_TEXTS


@pytest.fixture(scope="module")
def trained(cs336_data: Path) -> bytepair.Tokenizer:
    return bytepair.train_from_iterator(_corpus(cs336_data), 600, SPECIALS, progress=False)


@pytest.fixture(scope="module")
def trained_ws(cs336_data: Path) -> bytepair.Tokenizer:
    """A tokenizer with a custom pattern (whitespace splitting)."""
    return bytepair.train_from_iterator(
        _corpus(cs336_data), 500, [EOT], pattern=r"\S+", progress=False
    )


@pytest.fixture(scope="module")
def gpt2(cs336_data: Path) -> bytepair.Tokenizer:
    return bytepair.Tokenizer.from_files(
        cs336_data / "gpt2_vocab.json", cs336_data / "gpt2_merges.txt", [EOT]
    )


def _same(a: bytepair.Tokenizer, b: bytepair.Tokenizer) -> None:
    assert a.vocab == b.vocab
    assert a.merges == b.merges
    assert a.special_tokens == b.special_tokens
    assert list(a.special_tokens) == list(b.special_tokens)
    assert a.pattern == b.pattern
    assert a.n_vocab == b.n_vocab


def _tmp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# --- save / load round trips ------------------------------------------------------------------


@pytest.mark.parametrize("which", ["trained", "trained_ws"])
def test_save_load_roundtrip(request, tmp_path: Path, which: str) -> None:
    tok = request.getfixturevalue(which)
    # \S+ leaves the whitespace unmatched: bytepair keeps it, tiktoken would drop it
    tiktoken = ["tokenizer.tiktoken", "tokenizer.tiktoken.json"] if which == "trained" else []
    with warnings.catch_warnings():
        warnings.simplefilter("error" if tiktoken else "ignore")
        tok.save(tmp_path / "model")
    assert sorted(os.listdir(tmp_path / "model")) == sorted(
        [
            "bytepair.model",
            "merges.txt",
            "special_tokens_map.json",
            "tokenizer.json",
            *tiktoken,
            "tokenizer_config.json",
            "vocab.json",
        ]
    )
    model = tmp_path / "model"
    for source in (model, model / "bytepair.model", str(model)):
        back = bytepair.load(source)
        _same(back, tok)
        for text in TEXTS_WITH_SPECIALS:
            assert back.encode(text) == tok.encode(text)
            assert back.encode_ordinary(text) == tok.encode_ordinary(text)


def test_custom_pattern_kept_verbatim(trained_ws, tmp_path: Path) -> None:
    assert trained_ws.pattern == r"\S+"
    with pytest.warns(UserWarning, match=r"not written: tokenizer.tiktoken \(the pattern may"):
        trained_ws.save(tmp_path)
    back = bytepair.load(tmp_path)
    assert back.pattern == r"\S+"
    text = "a b  c\nd"
    assert back.encode(text) == trained_ws.encode(text)
    assert back.decode(back.encode(text)) == text  # unmatched text is kept, as HF's Split does


def test_save_load_odd_specials_and_pattern(tmp_path: Path) -> None:
    specials = [EOT, "<sp ace>", 'q"uote\\', "new\nline", "ümlaut", "🙃", "\t"]
    pattern = "'s|\\p{L}+|\"|\n|\\s+|."
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"\xff\xfe"}
    tok = bytepair.Tokenizer(vocab, [(b"a", b"b"), (b"\xff", b"\xfe")], specials, pattern=pattern)
    bytepair.save(tok, tmp_path / "a" / "b")  # creates parents
    back = bytepair.load(tmp_path / "a" / "b")
    _same(back, tok)
    text = "ab new\nline🙃 q\"uote\\ <sp ace>\tümlaut's"
    assert back.encode(text) == tok.encode(text)
    gpt2_back = bytepair.Tokenizer.from_files(
        tmp_path / "a" / "b" / "vocab.json",
        tmp_path / "a" / "b" / "merges.txt",
        specials,
        pattern=pattern,
    )
    _same(gpt2_back, tok)


def test_save_load_sparse_ids_and_unmerged_tokens(tmp_path: Path) -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {300: b"ab", 1000: b"zzz"}
    tok = bytepair.Tokenizer(vocab, [(b"a", b"b")], ["<s>"])
    assert tok.special_tokens == {"<s>": 1001}
    tok.save(tmp_path)
    _same(bytepair.load(tmp_path), tok)
    _same(
        bytepair.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", ["<s>"]),
        tok,
    )


def test_save_overwrites(trained, trained_ws, tmp_path: Path) -> None:
    trained.save(tmp_path)
    trained_ws.save(tmp_path)
    _same(bytepair.load(tmp_path), trained_ws)
    assert _tmp_files(tmp_path) == []


# --- GPT-2 files ------------------------------------------------------------------------------


def test_gpt2_files_written_by_save(trained, tmp_path: Path) -> None:
    trained.save(tmp_path)
    lines = (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#version: 0.2")
    assert len(lines) == 1 + len(trained.merges)
    b2u = ref.bytes_to_unicode()
    for line, (a, b) in zip(lines[1:], trained.merges, strict=True):
        assert line == "".join(b2u[x] for x in a) + " " + "".join(b2u[x] for x in b)
    vocab_json = json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))
    assert len(vocab_json) == len(trained.vocab)
    assert vocab_json[EOT] == trained.special_tokens[EOT]
    assert vocab_json["Ġ"] == trained.token_to_id(b" ")
    back = bytepair.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", SPECIALS)
    _same(back, trained)
    for text in TEXTS_WITH_SPECIALS:
        assert back.encode(text) == trained.encode(text)


def test_gpt2_files_survive_a_round_trip(gpt2, cs336_data: Path, tmp_path: Path) -> None:
    gpt2.save(tmp_path)
    again = bytepair.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", [EOT])
    _same(again, gpt2)
    _same(bytepair.load(tmp_path), gpt2)
    original = json.loads((cs336_data / "gpt2_vocab.json").read_text(encoding="utf-8"))
    assert json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8")) == original
    ours = (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]
    theirs = (cs336_data / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
    assert ours == [line for line in theirs if line.strip() and not line.startswith("#version")]
    text = (cs336_data / "tinystories_sample.txt").read_text(encoding="utf-8")
    assert again.encode(text) == gpt2.encode(text)


def test_from_files_accepts_crlf_and_blank_lines(trained, tmp_path: Path) -> None:
    trained.save(tmp_path)
    merges = (tmp_path / "merges.txt").read_text(encoding="utf-8")
    (tmp_path / "crlf.txt").write_bytes(merges.replace("\n", "\r\n").encode() + b"\r\n")
    back = bytepair.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "crlf.txt", SPECIALS)
    assert back.merges == trained.merges


def test_from_files_special_not_in_vocab_json(tmp_path: Path) -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    bytepair.Tokenizer(vocab, []).save(tmp_path)
    tok = bytepair.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", [EOT])
    assert tok.special_tokens == {EOT: 256}
    assert tok.encode(f"a{EOT}") == [97, 256]


def test_save_refuses_gpt2_key_collisions(tmp_path: Path) -> None:
    """A special token whose text equals another token's GPT-2 form ('§' is also how byte 0xA7
    is written) cannot go into vocab.json: save must say so, not drop a token silently. Named,
    the format is an error and nothing is written; by default, the formats that cannot hold
    it are left out with a warning, and the others written."""
    tok = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["§"])
    with pytest.raises(ValueError, match=r"§.*rename the special token"):
        tok.save(tmp_path / "out", formats=["gpt2"])
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    with pytest.warns(UserWarning, match=r"not written: vocab.json \(token 256"):
        written = tok.save(tmp_path / "out")
    assert {p.name for p in written} == {
        "bytepair.model",
        "tokenizer.tiktoken",
        "tokenizer.tiktoken.json",
    }


# --- HF tokenizers ----------------------------------------------------------------------------


def _hf_from_saved(directory: Path):
    import tokenizers
    from tokenizers import Regex, decoders, models, pre_tokenizers

    model = models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt"))
    hf = tokenizers.Tokenizer(model)
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(bytepair.GPT2_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf.decoder = decoders.ByteLevel()
    return hf


@pytest.mark.parametrize("which", ["trained", "gpt2"])
def test_hf_tokenizers_read_our_files(request, cs336_data: Path, tmp_path: Path, which) -> None:
    tok = request.getfixturevalue(which)
    tok.save(tmp_path)
    hf = _hf_from_saved(tmp_path)
    texts = [
        *SAMPLE_TEXTS,
        (cs336_data / "german.txt").read_text(encoding="utf-8"),
        (cs336_data / "tinystories_sample.txt").read_text(encoding="utf-8"),
    ]
    for text in texts:
        ids = tok.encode_ordinary(text)
        assert hf.encode(text, add_special_tokens=False).ids == ids, text[:40]
        assert hf.decode(ids) == text


# --- the GPT-2 byte table -------------------------------------------------------------------


def test_bytes_to_unicode_table() -> None:
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    chars = list(table.values())
    assert len(set(chars)) == 256
    assert all(len(c) == 1 and c.isprintable() and not c.isspace() for c in chars)
    identity = [b for b, c in table.items() if ord(c) == b]
    assert len(identity) == 188
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    assert identity == printable
    others = [b for b in range(256) if b not in printable]
    assert [table[b] for b in others] == [chr(256 + n) for n in range(68)]
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ"
    assert table == ref.bytes_to_unicode()
    assert unicode_to_bytes() == {c: b for b, c in table.items()}


# --- malformed files ------------------------------------------------------------------------


def _write_gpt2(directory: Path, vocab_text: str, merges_text: str) -> tuple[Path, Path]:
    vocab_path, merges_path = directory / "vocab.json", directory / "merges.txt"
    vocab_path.write_text(vocab_text, encoding="utf-8")
    merges_path.write_text(merges_text, encoding="utf-8")
    return vocab_path, merges_path


def _byte_vocab_json(extra: dict[str, int] | None = None) -> str:
    table = bytes_to_unicode()
    return json.dumps({table[b]: b for b in range(256)} | (extra or {}), ensure_ascii=False)


@pytest.mark.parametrize(
    "line3",
    ["a b c", "ab", "a  b", " a b", "a b ", "a\tb"],
    ids=["three-fields", "one-field", "double-space", "leading-space", "trailing-space", "tab"],
)
def test_bad_merges_line_is_named(tmp_path: Path, line3: str) -> None:
    vocab, merges = _write_gpt2(
        tmp_path, _byte_vocab_json({"ab": 256, "abc": 257}), f"#version: 0.2\na b\n{line3}\n"
    )
    with pytest.raises(ValueError, match=r"merges\.txt: line 3"):
        bytepair.Tokenizer.from_files(vocab, merges)


def test_bad_merges_character_is_named(tmp_path: Path) -> None:
    merges_text = "#version: 0.2\na b\nx \u4e00\n"
    vocab, merges = _write_gpt2(tmp_path, _byte_vocab_json({"ab": 256}), merges_text)
    with pytest.raises(ValueError, match=r"line 3.*'\u4e00'"):
        bytepair.Tokenizer.from_files(vocab, merges)


def test_merge_of_unknown_token(tmp_path: Path) -> None:
    vocab, merges = _write_gpt2(tmp_path, _byte_vocab_json(), "#version: 0.2\na b\n")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        bytepair.Tokenizer.from_files(vocab, merges)


def test_vocab_json_not_json_names_line(tmp_path: Path) -> None:
    vocab, merges = _write_gpt2(tmp_path, '{\n "a": 1,\n oops\n}\n', "#version: 0.2\n")
    with pytest.raises(ValueError, match=r"vocab\.json: line 3"):
        bytepair.Tokenizer.from_files(vocab, merges)
    vocab.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.json: line 1"):
        bytepair.Tokenizer.from_files(vocab, merges)


@pytest.mark.parametrize(
    "bad, match",
    [
        ('"1"', "not an integer"),
        ("1.5", "not an integer"),
        ("true", "not an integer"),
        ("null", "not an integer"),
        ("-3", "-3"),
        ("65", "given to two tokens"),
    ],
)
def test_vocab_json_bad_ids(tmp_path: Path, bad: str, match: str) -> None:
    text = _byte_vocab_json()[:-1] + f', "ab": {bad}}}'
    vocab, merges = _write_gpt2(tmp_path, text, "#version: 0.2\n")
    with pytest.raises(ValueError, match=match):
        bytepair.Tokenizer.from_files(vocab, merges)


def test_vocab_json_bad_shape_and_chars(tmp_path: Path) -> None:
    vocab, merges = _write_gpt2(tmp_path, "[1, 2]", "#version: 0.2\n")
    with pytest.raises(ValueError, match="JSON object"):
        bytepair.Tokenizer.from_files(vocab, merges)
    vocab.write_text(_byte_vocab_json({"a b": 256}), encoding="utf-8")
    with pytest.raises(ValueError, match="'a b'"):
        bytepair.Tokenizer.from_files(vocab, merges)
    vocab.write_text(json.dumps({"a": 97}), encoding="utf-8")
    with pytest.raises(ValueError, match="byte"):
        bytepair.Tokenizer.from_files(vocab, merges)


def test_missing_files(tmp_path: Path) -> None:
    vocab, merges = _write_gpt2(tmp_path, _byte_vocab_json(), "#version: 0.2\n")
    with pytest.raises(FileNotFoundError):
        bytepair.Tokenizer.from_files(tmp_path / "nope.json", merges)
    with pytest.raises(FileNotFoundError):
        bytepair.Tokenizer.from_files(vocab, tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError):
        bytepair.load(tmp_path / "no-such-dir")


@pytest.mark.parametrize(
    "which", ["vocab.json", "merges.txt", "bytepair.model", "tokenizer.json", "tokenizer.tiktoken"]
)
def test_invalid_utf8_in_model_files_names_the_file(trained, tmp_path: Path, which: str) -> None:
    trained.save(tmp_path)
    path = tmp_path / which
    if which == "vocab.json":  # GPT-2's layout is one line: make it three
        path.write_bytes(path.read_bytes().replace(b", ", b",\n", 2))
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2] + b"\xff"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match=rf"{which}: line 3: invalid UTF-8"):
        if which in ("bytepair.model", "tokenizer.json", "tokenizer.tiktoken"):
            bytepair.load(path)
        else:
            vocab, merges = tmp_path / "vocab.json", tmp_path / "merges.txt"
            bytepair.Tokenizer.from_files(vocab, merges, SPECIALS)


def _model_lines(tok: bytepair.Tokenizer, tmp_path: Path) -> list[str]:
    tok.save(tmp_path / "good")
    return (tmp_path / "good" / "bytepair.model").read_text(encoding="utf-8").splitlines()


def _load_lines(tmp_path: Path, lines: list[str]) -> bytepair.Tokenizer:
    path = tmp_path / "bad.model"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bytepair.load(path)


def test_model_wrong_header(trained, tmp_path: Path) -> None:
    lines = _model_lines(trained, tmp_path)
    with pytest.raises(ValueError, match=r"bad\.model: line 1.*not a bytepair model"):
        _load_lines(tmp_path, ["#bytepair-model v999", *lines[1:]])
    with pytest.raises(ValueError, match="a JSON file of no known kind"):
        _load_lines(tmp_path, ["{}"])
    (tmp_path / "empty.model").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1"):
        bytepair.load(tmp_path / "empty.model")


def test_model_truncated_at_line_ends(trained, tmp_path: Path) -> None:
    lines = _model_lines(trained, tmp_path)
    for keep in [1, 2, 3, 4, 5, len(lines) // 2, len(lines) - 1]:
        with pytest.raises(ValueError, match=rf"line {keep + 1}.*(truncated|expected)"):
            _load_lines(tmp_path, lines[:keep])


def test_model_bad_fields_name_the_line(trained, tmp_path: Path) -> None:
    lines = _model_lines(trained, tmp_path)
    vocab_at = lines.index(f"vocab {len(trained.vocab)}")
    merges_at = lines.index(f"merges {len(trained.merges)}")
    cases = {
        "bad base64": (vocab_at + 3, "2 !!notbase64"),
        "bad base64 in merge": (merges_at + 2, "YQ== b@d"),
        "id not an integer": (vocab_at + 3, "x Ag=="),
        "one field": (vocab_at + 3, "2"),
        "count not a number": (vocab_at, "vocab many"),
        "wrong section": (merges_at, "merged 3"),
        "bad unicode version": (1, "unicode sixteen"),
        "missing unicode line": (1, 'pattern "x"'),
        "bad pattern json": (2, 'pattern "unterminated'),
        "bad special json": (4, '99 "<|endo'),
    }
    for index, replacement in cases.values():
        broken = list(lines)
        broken[index] = replacement
        with pytest.raises(ValueError, match=rf"bad\.model: line {index + 1}\b"):
            _load_lines(tmp_path, broken)


def test_model_special_ids_mismatch(trained, tmp_path: Path) -> None:
    lines = _model_lines(trained, tmp_path)
    special_line = 5  # "id text" of the first special token
    _, text = lines[special_line].split(" ", 1)
    lines[special_line] = f"5 {text}"
    with pytest.raises(ValueError, match="special tokens' ids"):
        _load_lines(tmp_path, lines)


def test_model_truncated_inside_last_merge(tmp_path: Path) -> None:
    """A cut inside the last merge line can leave valid base64 for a shorter token that exists
    (here b"defg" -> b"def", and (b"abc", b"def") is a valid merge): it must not load."""
    vocab = {i: bytes([i]) for i in range(256)}
    tokens = [b"ab", b"abc", b"de", b"def", b"defg", b"abcdef", b"abcdefg"]
    vocab |= {256 + i: t for i, t in enumerate(tokens)}
    merges = [
        (b"a", b"b"),
        (b"ab", b"c"),
        (b"d", b"e"),
        (b"de", b"f"),
        (b"def", b"g"),
        (b"abc", b"def"),
        (b"abc", b"defg"),
    ]
    tok = bytepair.Tokenizer(vocab, merges)
    tok.save(tmp_path)
    model = (tmp_path / "bytepair.model").read_text(encoding="utf-8")
    last_merge = "YWJj ZGVmZw=="  # (b"abc", b"defg")
    assert model.count(last_merge) == 1
    cut = model.index(last_merge) + len("YWJj ZGVm")
    for end in ("", "\n"):
        (tmp_path / "bytepair.model").write_text(model[:cut] + end, encoding="utf-8")
        with pytest.raises(ValueError, match=r"bytepair\.model: line \d+"):
            bytepair.load(tmp_path)


def test_model_truncated_anywhere_is_an_error(trained, tmp_path: Path) -> None:
    """A cut at any byte raises ValueError naming the line (a cut of only the final newline
    aside)."""
    trained.save(tmp_path / "good")
    data = (tmp_path / "good" / "bytepair.model").read_bytes()
    path = tmp_path / "cut.model"
    n = len(data)
    for k in [*range(0, 200), *range(200, n - 1, 29), *range(n - 40, n - 1)]:
        path.write_bytes(data[:k])
        with pytest.raises(ValueError, match=r"cut\.model: line \d+"):
            bytepair.load(path)


def test_load_folder_with_gpt2_files_only(trained, tmp_path: Path) -> None:
    trained.save(tmp_path, formats=["gpt2"])
    assert sorted(os.listdir(tmp_path)) == ["merges.txt", "vocab.json"]
    back = bytepair.load(tmp_path)  # special tokens: the vocab.json tokens no merge makes
    _same(back, trained)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError):
        bytepair.load(empty)


# --- atomic writes --------------------------------------------------------------------------


def test_save_leaves_no_temp_files(trained, tmp_path: Path) -> None:
    trained.save(tmp_path)
    assert _tmp_files(tmp_path) == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    umask = os.umask(0)
    os.umask(umask)
    for name in ("vocab.json", "merges.txt", "bytepair.model"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~umask


def test_save_into_a_file_path_is_an_error(trained, tmp_path: Path) -> None:
    target = tmp_path / "a_file"
    target.write_text("keep me", encoding="utf-8")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        trained.save(target)
    assert target.read_text(encoding="utf-8") == "keep me"
    with pytest.raises(OSError):
        trained.save(target / "sub")


@pytest.mark.parametrize(
    "obj",
    [None, "tok", {"vocab": {}, "merges": []}, bytepair.WordCounts()],
    ids=["None", "str", "dict", "WordCounts"],
)
def test_save_of_a_non_tokenizer_is_a_type_error(obj: object, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"save\(\) takes a Tokenizer.*got " + type(obj).__name__):
        bytepair.save(obj, tmp_path / "tok")  # type: ignore[arg-type]
    assert not (tmp_path / "tok").exists()


def test_save_with_its_arguments_swapped_names_the_order(trained, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"got str .*call save\(tokenizer, folder\)"):
        bytepair.save(str(tmp_path), trained)  # type: ignore[arg-type]


def test_failed_save_keeps_old_files(trained, trained_ws, tmp_path: Path, monkeypatch) -> None:
    trained.save(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def broken_replace(src, dst):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr("bytepair._atomic.os.replace", broken_replace)
    with pytest.raises(OSError, match="simulated"):
        trained_ws.save(tmp_path)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert _tmp_files(tmp_path) == []
    _same(bytepair.load(tmp_path), trained)


# --- the Unicode version of training ---------------------------------------------------------


def _tiny(pattern: str = "gpt2") -> bytepair.Tokenizer:
    return bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT], pattern=pattern)


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the versions this process was already warned about."""
    monkeypatch.setattr(bytepair.loading, "_warned_unicode", set())


def test_model_records_the_unicode_version(tmp_path: Path, fresh_warnings) -> None:
    lines = _model_lines(_tiny(), tmp_path)
    assert lines[:2] == ["#bytepair-model v4", f"unicode {bytepair.UNICODE_VERSION}"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bytepair.load(tmp_path / "good").unicode_version == bytepair.UNICODE_VERSION


def test_other_unicode_version_warns_once_per_version(tmp_path: Path, fresh_warnings) -> None:
    lines = _model_lines(_tiny(), tmp_path)
    with pytest.warns(UserWarning, match=r"trained with .*Unicode 15\.1\.0; .* uses Unicode 16"):
        tok = _load_lines(tmp_path, [lines[0], "unicode 15.1.0", *lines[2:]])
    assert tok.unicode_version == "15.1.0"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _load_lines(tmp_path, [lines[0], "unicode 15.1.0", *lines[2:]])
    with pytest.warns(UserWarning, match=r"Unicode 17\.0\.0"):
        _load_lines(tmp_path, [lines[0], "unicode 17.0.0", *lines[2:]])
    tok.save(tmp_path / "again")  # the version of training is kept, not the loader's
    assert (tmp_path / "again" / "bytepair.model").read_text().splitlines()[1] == "unicode 15.1.0"


def _without_roles(lines: list[str]) -> list[str]:
    """A v4 file's lines less its `options` line, `roles` section and `model_max_length` line
    (as v1 and v2)."""
    lines = [line for line in lines if not line.startswith("options ")]
    at = next(n for n, line in enumerate(lines) if line.startswith("roles "))
    n_roles = int(lines[at].split()[1])
    assert lines[at + n_roles + 1].startswith("model_max_length ")
    return lines[:at] + lines[at + n_roles + 2 :]


def test_v2_model_without_roles_gets_the_default_roles(tmp_path: Path) -> None:
    tok = _tiny().with_special_tokens(["<|pad|>"])
    tok.special_token_roles = {"pad_token": "<|pad|>"}
    tok.model_max_length = 512
    lines = _model_lines(tok, tmp_path)
    assert lines[0] == "#bytepair-model v4"
    assert "roles 1" in lines and 'pad_token "<|pad|>"' in lines
    assert "model_max_length 512" in lines
    v2 = ["#bytepair-model v2", *_without_roles(lines)[1:]]
    loaded = _load_lines(tmp_path, v2)
    assert loaded.vocab == tok.vocab and loaded.special_tokens == tok.special_tokens
    assert loaded.special_token_roles == {"eos_token": "<|endoftext|>"}
    assert loaded.model_max_length is None


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('eos_token "<|nope|>"', r"line 8: the eos_token '<\|nope\|>' is not one of the special"),
        ('cls_token "<|endoftext|>"', r"line 8: expected a role, one of \['bos_token'"),
        ("eos_token 7", r"line 8: the role's token must be a JSON string"),
    ],
)
def test_model_bad_role_line(tmp_path: Path, line: str, error: str) -> None:
    lines = _model_lines(_tiny(), tmp_path)
    assert lines[6:8] == ["roles 1", 'eos_token "<|endoftext|>"']
    with pytest.raises(ValueError, match=error):
        _load_lines(tmp_path, [*lines[:7], line, *lines[8:]])


@pytest.mark.parametrize("value", ["0", "-1", "1e3", ""])
def test_model_bad_max_length_line(tmp_path: Path, value: str) -> None:
    lines = _model_lines(_tiny(), tmp_path)
    at = lines.index("model_max_length none")
    with pytest.raises(ValueError, match=rf"line {at + 1}: expected 'model_max_length <positive"):
        _load_lines(tmp_path, [*lines[:at], f"model_max_length {value}", *lines[at + 1 :]])


@pytest.mark.parametrize(("pattern", "version"), [("gpt2", "17.0.0"), (r"\S+", "16.0.0")])
def test_v1_model_without_unicode_line(tmp_path: Path, fresh_warnings, pattern, version) -> None:
    """v1 files (before the version was pinned): the GPT-2 scanner had Python `regex`'s
    Unicode 17.0 classes, other patterns fancy-regex's 16.0."""
    tok = _tiny(pattern)
    v1 = ["#bytepair-model v1", *_without_roles(_model_lines(tok, tmp_path))[2:]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = _load_lines(tmp_path, v1)
    assert loaded.unicode_version == version
    assert loaded.vocab == tok.vocab and loaded.pattern == tok.pattern
    messages = [str(w.message) for w in caught]
    if version == bytepair.UNICODE_VERSION:
        assert messages == []
    else:
        assert len(messages) == 1 and f"Unicode {version};" in messages[0]
