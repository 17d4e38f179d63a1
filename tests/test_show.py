"""`bytepair show`: coloured token boundaries on a terminal (a real pseudo-terminal, and rich's
output read back colour by colour), one token a line in a pipe; escapes for partial UTF-8."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bytepair import Tokenizer
from bytepair.inspection.show import PALETTE, show

TEXT = "Héllò hôw are ü? 🙃"
# GPT-2's tokens of TEXT, as `show` writes them: ò, ü and 🙃 are cut inside their bytes.
TOKENS = ["'H'", "'é'", "'ll'", "'\\xc3'", "'\\xb2'", "' h'", "'ô'", "'w'", "' are'", "' \\xc3'",
          "'\\xbc'", "'?'", "' \\xf0\\x9f'", "'\\x99'", "'\\x83'"]  # fmt: skip
SGR = re.compile(r"\x1b\[([0-9;]*)m([^\x1b]*)")


@pytest.fixture(scope="module")
def gpt2(cs336_data) -> Tokenizer:
    return Tokenizer.from_files(
        cs336_data / "gpt2_vocab.json", cs336_data / "gpt2_merges.txt", ["<|endoftext|>"]
    )


def _cli(*args: object, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bytepair.cli", *map(str, args)],
        input=stdin, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _runs(output: str) -> list[tuple[str, str]]:
    """(background, text) of each coloured run of a truecolour line."""
    runs = []
    for codes, text in SGR.findall(output):
        background = re.search(r"48;2;(\d+);(\d+);(\d+)", codes)
        if background and text:
            red, green, blue = map(int, background.groups())
            runs.append((f"#{red:02x}{green:02x}{blue:02x}", text))
    return runs


def _tokens_of(line: str) -> list[tuple[str, str]]:
    """Adjacent runs on one background are one token (neighbours never share a colour)."""
    cells: list[tuple[str, str]] = []
    for background, text in _runs(line):
        if cells and cells[-1][0] == background:
            cells[-1] = (background, cells[-1][1] + text)
        else:
            cells.append((background, text))
    return cells


def test_plain_in_a_pipe(gpt2, cs336_data) -> None:
    result = _cli("show", cs336_data / "gpt2_vocab.json", TEXT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == TOKENS
    ids = gpt2.encode(TEXT)
    result = _cli("show", cs336_data / "gpt2_vocab.json", TEXT, "--ids")
    assert result.stdout.splitlines() == [f"{i}\t{t}" for i, t in zip(ids, TOKENS, strict=True)]


def test_standard_input(cs336_data) -> None:
    result = _cli("show", cs336_data / "gpt2_vocab.json", "-", stdin="some text\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["'some'", "' text'", "'\\n'"]


def test_colours_and_ids_on_a_terminal(gpt2, monkeypatch) -> None:
    monkeypatch.setenv("COLORTERM", "truecolor")
    out = io.StringIO()
    show(gpt2, TEXT + "\nnext line", ids=True, color=True, file=out, width=200)
    lines = out.getvalue().splitlines()
    assert len(lines) == 4  # tokens, ids; after the newline token: tokens, ids
    cells = _tokens_of(lines[0])
    ids = gpt2.encode(TEXT + "\nnext line")
    assert [text.rstrip(" ") or text for _, text in cells] == [t[1:-1] for t in TOKENS] + ["↵"]
    assert [bg for bg, _ in cells] == [PALETTE[n % len(PALETTE)] for n in range(len(cells))]
    id_cells = _tokens_of(lines[1])
    assert [int(text) for _, text in id_cells] == ids[: len(cells)]
    assert [bg for bg, _ in id_cells] == [bg for bg, _ in cells]  # each id under its token
    widths = [len(text) for _, text in cells]
    assert [len(text) for _, text in id_cells] == widths  # ... and as wide as it
    escape = next(codes for codes, text in SGR.findall(lines[0]) if text == "\\xc3")
    assert escape.startswith("1;38;2;176;0;32")  # partial UTF-8 in bold red


def test_a_real_terminal_gets_colours(cs336_data) -> None:
    """Run in a pseudo-terminal, `show` colours on its own; piped, it does not (above)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    with subprocess.Popen(
        [sys.executable, "-m", "bytepair.cli", "show", cs336_data / "gpt2_vocab.json", TEXT],
        stdout=follower, stderr=subprocess.PIPE, env=env,
    ) as proc:  # fmt: skip
        os.close(follower)
        output = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            output += chunk
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    os.close(leader)
    text = output.decode()
    assert "\x1b[" in text and "48;5;" in text  # 256-colour backgrounds
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text).strip()
    assert plain == "Héll\\xc3\\xb2 hôw are \\xc3\\xbc? \\xf0\\x9f\\x99\\x83"


def test_show_errors(tmp_path: Path) -> None:
    result = _cli("show", tmp_path / "missing", "x")
    assert result.returncode == 2
    assert (
        result.stderr.strip() == f"bytepair: error: no such file or folder: {tmp_path / 'missing'}"
    )


def test_plain_needs_no_extra_and_colours_say_how_to_get_it(
    cs336_data, monkeypatch, capsys
) -> None:
    from bytepair.cli import main

    monkeypatch.setitem(sys.modules, "rich", None)
    model = str(cs336_data / "gpt2_vocab.json")
    assert main(["show", model, "hi", "--plain"]) == 0
    assert capsys.readouterr().out == "'hi'\n"
    assert main(["show", model, "hi", "--color"]) == 2
    assert capsys.readouterr().err == (
        "bytepair: error: bytepair show --color needs rich: pip install 'bytepair[inspect]'\n"
    )
