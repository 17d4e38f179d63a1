"""`bytepair inspect`: figures checked against hand-computed values and an independent count
(the reference BPE), the HTML report (self-contained, one span per id), the CLI's errors, and the
report opened in headless Chromium (slow)."""

from __future__ import annotations

import html.parser
import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bytepair
import reference as ref
from bytepair import Tokenizer, load
from bytepair.cli import main as cli_main
from bytepair.inspection.figures import inspect, merge_usage, unreachable_tokens
from bytepair.inspection.report import render, write_report
from bytepair.inspection.summary import tables

BYTES = {i: bytes([i]) for i in range(256)}
INSTALL = "pip install 'bytepair[inspect]'"
SAMPLE = (
    "The quick brown fox jumps over the lazy dog. It's 12 o'clock!\n"
    "Héllo wörld, 你好 🙃 สวัสดี — the end.<|endoftext|>\n\n"
    "A second document: the dog sleeps, the fox runs.  Tabs\tand  spaces.\n"
) * 30


def _tok(*merges: tuple[bytes, bytes], specials=()) -> Tokenizer:
    vocab = dict(BYTES)
    for k, (a, b) in enumerate(merges):
        vocab[256 + k] = a + b
    return Tokenizer(vocab, list(merges), list(specials))


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture(scope="module")
def trained() -> Tokenizer:
    return bytepair.train_from_iterator([SAMPLE], 360, ["<|endoftext|>"])


# --- vocabulary facts ----------------------------------------------------------------------------


def test_unreachable_tokens_hand_built() -> None:
    tok = _tok(
        (b"b", b"c"),  # 256 'bc'
        (b"a", b"b"),  # 257 'ab'
        (b"ab", b"c"),  # 258 'abc': 'abc' encodes as a + bc (bc ranks first): unreachable
        (b"x", b" "),  # 259 'x ': the pattern splits 'x' from ' ': unreachable
        (b"\x9f", b"\x99"),  # 260
        (b"\xf0", b"\x9f"),  # 261
        (b"\xf0\x9f", b"\x99"),  # 262: not text; its bytes merge as f0 + 9f99: unreachable
        (b" ", b"x"),  # 263 ' x': reachable
    )
    assert unreachable_tokens(tok) == [(258, [97, 256]), (259, [120, 32]), (262, [240, 260])]


def test_trained_tokenizer_has_no_unreachable_token(trained) -> None:
    assert unreachable_tokens(trained) == []


def test_merge_usage_counts_every_application(trained) -> None:
    """Times each merge fired while encoding, from the output alone, equals a count made by
    running the reference BPE and counting each merge as it is applied."""
    text = SAMPLE.replace("<|endoftext|>", "")
    counts = np.bincount(trained.encode(text), minlength=trained.n_vocab)
    made, applied, _ = merge_usage(trained, counts)
    ranks = {pair: k for k, pair in enumerate(trained.merges)}
    expected = np.zeros(len(ranks), np.int64)
    for pretoken in ref.pretokenize(text):
        parts = tuple(bytes([b]) for b in pretoken.encode())
        while len(parts) > 1:
            best = min(itertools.pairwise(parts), key=lambda p: ranks.get(p, 1 << 30))
            if best not in ranks:
                break
            merged = ref._merge_pair(parts, best)
            expected[ranks[best]] += len(parts) - len(merged)
            parts = merged
    assert applied.tolist() == expected.tolist()
    assert made.tolist() == list(range(256, 256 + len(ranks)))


def test_shadowed_merge_hand_built(tmp_path) -> None:
    tok = _tok((b"a", b"b"), (b"ab", b"c"), (b"c", b"d"))  # 256 ab, 257 abc, 258 cd
    ins = inspect(tok, _write(tmp_path / "s.txt", "abc abc\n"), progress=False)
    assert ins.applications.tolist() == [2, 2, 0]
    assert ins.shadowed() == [0]  # 'ab' made twice, always absorbed into 'abc'
    assert ins.absorbed_into.tolist() == [257, -1, -1]
    rows = {t.title: t.rows for t in tables(ins)}
    assert rows["Merges fully shadowed by later merges"] == [["256", "'ab'", "2", "'abc'"]]
    assert [r[0] for r in rows["Merge tokens never used on the sample"]] == ["256", "258"]


# --- the sample ----------------------------------------------------------------------------------


def test_compression_hand_computed(tmp_path) -> None:
    tok = _tok((b"a", b"b"))
    one = _write(tmp_path / "one.txt", "ab ab ab\n")  # ab, ' ', ab, ' ', ab, '\n': 6 tokens
    two = _write(tmp_path / "two.txt", "abab\n")  # ab, ab, '\n': 3 tokens
    ins = inspect(tok, [one, two], name="t", compare={"bytes": _tok()}, progress=False)
    got = {
        name: [(r.n_bytes, r.n_words, r.n_tokens) for r in rows]
        for name, rows in ins.compression.items()
    }
    assert got == {
        "t": [(9, 3, 6), (5, 1, 3), (14, 4, 9)],
        "bytes": [(9, 3, 9), (5, 1, 5), (14, 4, 14)],
    }
    table = next(t for t in tables(ins) if t.title == "Compression on the sample")
    assert table.rows[0][4:] == ["1.500", "2.000", "1.000"]  # 9/6 bytes a token, 6/3 a word
    assert table.rows[2][1:] == ["all", "14", "9", "1.556", "2.250", "1.000"]
    assert table.rows[3][4:] == ["1.000", "3.000", "1.500"]  # 9 tokens vs 6
    assert ins.counts[256] == 5 and ins.counts[ord(" ")] == 2 and ins.counts[ord("\n")] == 2


def test_block_boundaries_change_nothing(trained, tmp_path) -> None:
    """Small blocks cut the sample in many places (and words in two): the same figures, which
    count text (special tokens and their text left out: a special token ends a word)."""
    path = _write(tmp_path / "s.txt", SAMPLE)
    small = inspect(trained, path, progress=False, block_size=256)
    whole = inspect(trained, path, progress=False)
    ids = trained.encode(SAMPLE)
    special = trained.special_tokens["<|endoftext|>"]
    for ins in (small, whole):
        (row,) = ins.compression["tokenizer"]
        assert (row.n_bytes, row.n_words, row.n_tokens) == (
            len(SAMPLE.replace("<|endoftext|>", "").encode()),
            len(SAMPLE.replace("<|endoftext|>", " ").split()),
            len([i for i in ids if i != special]),
        )
        assert ins.counts.tolist() == np.bincount(ids, minlength=trained.n_vocab).tolist()


def test_excerpt_is_a_prefix_of_the_encoding(trained, tmp_path) -> None:
    path = _write(tmp_path / "s.txt", SAMPLE)
    ins = inspect(trained, path, progress=False, excerpt_bytes=500, block_size=256)
    ids = trained.encode(SAMPLE)
    assert ins.excerpt == ids[: len(ins.excerpt)]
    n_bytes = len(trained.decode_bytes(ins.excerpt))
    assert n_bytes >= 500 > n_bytes - len(trained.id_to_token(ins.excerpt[-1]))


def test_progress_bar_only_when_asked(trained, tmp_path, capsys) -> None:
    path = _write(tmp_path / "s.txt", SAMPLE)
    inspect(trained, path, name="mine", progress=False)
    assert capsys.readouterr().err == ""
    inspect(trained, path, name="mine", progress=True)
    assert "mine" in capsys.readouterr().err


def test_preset_gpt2_is_tiktokens(tiktoken_gpt2) -> None:
    gpt2 = load("gpt2")
    assert gpt2.encode(SAMPLE) == tiktoken_gpt2.encode(SAMPLE, allowed_special="all")
    with pytest.raises(FileNotFoundError, match="gpt3"):
        load("gpt3")


# --- the HTML report -----------------------------------------------------------------------------


class _Spans(html.parser.HTMLParser):
    """The data-id of every element that has one, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[int] = []

    def handle_starttag(self, tag, attrs) -> None:
        found = dict(attrs).get("data-id")
        if found is not None:
            assert tag == "span"
            self.ids.append(int(found))


def _span_ids(page: str) -> list[int]:
    parser = _Spans()
    parser.feed(page)
    return parser.ids


def test_report_is_self_contained_with_a_span_per_id(trained, tmp_path) -> None:
    path = _write(tmp_path / "s.txt", SAMPLE)
    ins = inspect(trained, path, compare={"bytes": _tok()}, progress=False)
    out = tmp_path / "report.html"
    write_report(ins, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "s.txt"]  # atomic
    page = out.read_text(encoding="utf-8")
    assert _span_ids(page) == trained.encode(SAMPLE)
    for remote in ("src='http", 'src="http', "href=", "url(", "@import", "<link"):
        assert remote not in page
    assert page.count("<img ") == 3 and page.count("data:image/png;base64,") == 1
    assert "Compression on the sample" in page
    assert page == render(ins, tables(ins))
    # tokens that hold part of a character are shown as escapes
    ins = inspect(_tok(), path, progress=False)
    page = render(ins, tables(ins))
    span = r"<span data-id='228' class='c\d' title='id 228 · 1 byte · e4'><b>\\xe4</b></span>"
    assert re.search(span, page)


def test_report_reads_right_before_any_hover(trained, tmp_path) -> None:
    """The hover panel starts as a grey hint, not an empty yellow box; the page names fonts that
    cover CJK and Thai, whose characters were drawn as boxes."""
    from bytepair.inspection.report import _INFO_HINT

    ins = inspect(trained, _write(tmp_path / "s.txt", SAMPLE), progress=False)
    page = render(ins, tables(ins))
    assert f"<div id='info'>{_INFO_HINT}</div>" in page
    assert "#info.on {" in page and "#fffbe6" in page.split("#info.on {")[1].split("}")[0]
    for font in ("Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", "Noto Sans Thai"):
        assert font in page


def test_compression_legend_sits_outside_the_bars(trained, tmp_path) -> None:
    """The legend is drawn below the plots: inside, it covered the last tokenizer's bars."""
    from bytepair.inspection.report import _compression_figure

    path = _write(tmp_path / "s.txt", SAMPLE)
    ins = inspect(trained, path, compare={"bytes": _tok(), "again": trained}, progress=False)
    fig = _compression_figure(ins)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent(renderer))
    assert [t.get_text() for t in legend.get_texts()] == list(ins.compression)


# --- the command line ----------------------------------------------------------------------------


def _cli(*args: object, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bytepair.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, **env},
    )


@pytest.fixture(scope="module")
def model_dir(trained, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("inspect") / "tok"
    trained.save(out, formats=["bytepair"])
    return out


def test_cli_inspect_prints_tables_and_writes_report(model_dir, tmp_path, cs336_data) -> None:
    sample = _write(tmp_path / "s.txt", SAMPLE)
    other = _write(tmp_path / "t.txt", SAMPLE[::-1])
    for name in ("gpt2_vocab.json", "gpt2_merges.txt"):
        shutil.copy(cs336_data / name, tmp_path / name)
    gpt2 = "gpt2_vocab.json"
    result = _cli(
        "inspect",
        model_dir,
        "--sample",
        sample,
        other,
        "--compare",
        gpt2,
        "--html",
        tmp_path / "r.html",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for title in ("Vocabulary of", "Compression on the sample", "Token lengths", "Longest tokens"):
        assert title in out
    assert (
        out.count("s.txt") == out.count("t.txt") == 2
        and "gpt2_vocab.json" in out
        and "\x1b[" not in out
    )
    assert result.stderr.strip() == f"wrote {tmp_path / 'r.html'}"  # no bar in a pipe
    assert (tmp_path / "r.html").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sample", "missing.txt"], "input file not found: missing.txt"),
        (["--sample", "s.txt", "--compare", "nope/"], "no such file or folder: nope"),
        (["--sample", "s.txt", "--html", "no/dir/r.html"], "folder no/dir does not exist"),
        (["--sample", "s.txt", "--top", "-1"], "--top must be 0 or more"),
        (["--sample", "s.txt", "--excerpt-bytes", "-5"], "excerpt_bytes must be an integer >= 0"),
    ],
)
def test_cli_inspect_errors(model_dir, tmp_path, args, message) -> None:
    _write(tmp_path / "s.txt", SAMPLE)
    result = _cli("inspect", model_dir, *args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"bytepair: error: {message}"] or (
        message in result.stderr and "Traceback" not in result.stderr
    )


def test_cli_missing_extra_says_how_to_install(model_dir, tmp_path, monkeypatch, capsys) -> None:
    _write(tmp_path / "s.txt", SAMPLE)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code = cli_main(
        [
            "inspect",
            str(model_dir),
            "--sample",
            str(tmp_path / "s.txt"),
            "--html",
            str(tmp_path / "r.html"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err == "bytepair: error: bytepair inspect --html needs matplotlib: " + INSTALL + "\n"
    monkeypatch.setitem(sys.modules, "rich", None)
    assert cli_main(["inspect", str(model_dir), "--sample", str(tmp_path / "s.txt")]) == 2
    assert f"needs rich: {INSTALL}" in capsys.readouterr().err


# --- in a real browser ---------------------------------------------------------------------------


def _chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: .ci/run installs Debian's chromium package")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


@pytest.mark.slow
def test_report_in_headless_chromium(model_dir, trained, tmp_path) -> None:
    """Chromium renders the report: its DOM holds one token span per id that encode gives for
    the sample, and the screenshot is a page (not blank) showing the tokens' colours."""
    from PIL import Image

    chromium = _chromium()
    sample = _write(tmp_path / "s.txt", SAMPLE)
    report = tmp_path / "r.html"
    result = _cli(
        "inspect", model_dir, "--sample", sample, "--html", report, "--quiet", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [chromium, *flags, "--dump-dom", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "</html>" in dom
    assert _span_ids(dom) == trained.encode(SAMPLE)
    shot = tmp_path / "shot.png"
    subprocess.run(
        [chromium, *flags, f"--screenshot={shot}", "--window-size=1200,3000", report.as_uri()],
        capture_output=True,
        timeout=60,
        check=True,
    )
    image = np.asarray(Image.open(shot).convert("RGB"))
    assert image.shape[:2] == (3000, 1200)
    colours = {tuple(c) for c in image.reshape(-1, 3)[::7]}
    assert len(colours) > 50  # text, tables and plots, not a blank page
    from bytepair.inspection.show import PALETTE

    palette = {tuple(bytes.fromhex(c[1:])) for c in PALETTE}
    assert palette <= colours  # the token backgrounds are on screen
    panel = (0xFF, 0xFB, 0xE6)  # the hover panel's yellow: none before any hover
    assert not (image.reshape(-1, 3) == panel).all(axis=1).any()


def test_invalid_utf8_is_replaced_and_counted(tmp_path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ab\xff\xfecd \xe4\xbd")  # two bad bytes, then a cut character
    ins = inspect(_tok(), path, progress=False)
    assert ins.n_replaced == 3
    assert ins.compression["tokenizer"][0].n_bytes == len("ab\ufffd\ufffdcd \ufffd".encode())
    assert "Replaced 3 invalid UTF-8 sequences" in tables(ins)[1].note
