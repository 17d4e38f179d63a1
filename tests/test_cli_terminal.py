"""`bytepair show` as a person runs it: on a real terminal (tmux), coloured with rich and plain
with a one-line note without it, and into a pipe that closes early (`| head`), which ends it
quietly as it ends `cat`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bytepair

SPECIAL = "<|endoftext|>"
#: Runs the command line with rich made unimportable, as in an install without the extra.
NO_RICH = "import sys; sys.modules['rich'] = None; from bytepair.cli import main; sys.exit(main())"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model")
    tok = bytepair.train_from_iterator(["the cat sat on the mat"] * 20, 269, [SPECIAL])
    tok.save(out)
    return out


def _tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is missing: .ci/run installs Debian's tmux package")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    return found


def _on_terminal(command: list[str], tmp_path: Path) -> str:
    """What `command` shows on a 100-column terminal, with colours as escape sequences."""
    tmux = _tmux()
    run = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    run.mkdir()
    socket, done = str(run / "tmux.sock"), run / "done"
    line = f"{shlex.join(command)}; touch {shlex.quote(str(done))}"
    env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
    env.pop("NO_COLOR", None)
    subprocess.run(
        [tmux, "-S", socket, "new-session", "-d", "-x", "100", "-y", "30", "sh", "-c",
         f"{line}; sleep 30"],
        env=env,
        check=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not done.exists():
            assert time.monotonic() < deadline, "the command did not finish"
            time.sleep(0.05)
        shown = subprocess.run(
            [tmux, "-S", socket, "capture-pane", "-p", "-e", "-J"],
            capture_output=True,
            text=True,
            check=True,
        )
        return shown.stdout
    finally:
        subprocess.run([tmux, "-S", socket, "kill-server"], capture_output=True, check=False)


@pytest.mark.slow
def test_show_on_a_terminal_is_coloured(model_dir, tmp_path) -> None:
    pytest.importorskip("rich")
    shown = _on_terminal(
        [sys.executable, "-m", "bytepair.cli", "show", str(model_dir), "the cat sat"], tmp_path
    )
    assert "\x1b[" in shown  # escape sequences: colours
    assert "note:" not in shown


@pytest.mark.slow
def test_show_without_rich_is_plain_with_one_note(model_dir, tmp_path) -> None:
    shown = _on_terminal(
        [sys.executable, "-c", NO_RICH, "show", str(model_dir), "the cat"], tmp_path
    )
    lines = [line for line in shown.splitlines() if line.strip()]
    notes = [line for line in lines if "bytepair: note:" in line]
    assert len(notes) == 1 and "pip install 'bytepair[inspect]'" in notes[0]
    assert "--plain" in notes[0]
    tok = bytepair.load(model_dir)
    labels = [line for line in lines if line.startswith("'")]
    assert len(labels) == len(tok.encode("the cat"))
    # --plain: the same tokens, no note
    shown = _on_terminal(
        [sys.executable, "-c", NO_RICH, "show", str(model_dir), "the cat", "--plain"], tmp_path
    )
    assert "note:" not in shown


def test_show_into_a_pipe_that_closes_ends_quietly(model_dir, tmp_path) -> None:
    text = tmp_path / "big.txt"
    text.write_text(" ".join(str(i) for i in range(200_000)), encoding="utf-8")
    command = (
        f"{shlex.quote(sys.executable)} -m bytepair.cli show {shlex.quote(str(model_dir))} - "
        f"< {shlex.quote(str(text))} | head -n 2; echo status=${{PIPESTATUS[0]}} >&2"
    )
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines() == ["'0'", "' '"] or len(done.stdout.splitlines()) == 2
    assert done.stderr.strip() == "status=141", done.stderr  # nothing but the status: no error


def test_show_color_without_rich_says_how_to_get_it(model_dir, tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_RICH, "show", str(model_dir), "hi", "--color"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "pip install 'bytepair[inspect]'" in done.stderr
