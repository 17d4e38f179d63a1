"""What the command line says: every error one line with exit status 2, a misspelt option or
command answered with the nearest valid one, messages that name the CLI's options (not Python
arguments), and a `--help` where every argument says what it takes and its default.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

import bytepair
from bytepair.cli import main as cli_main
from bytepair.cli.main import _parser

SPECIAL = "<|endoftext|>"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model")
    tok = bytepair.train_from_iterator(["the cat sat on the mat"] * 20, 269, [SPECIAL])
    tok.save(out)
    return out


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as e:
        cli_main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_a_misspelt_option_names_the_nearest(capsys, tmp_path) -> None:
    err = _one_line_error(
        capsys, ["train", "x.txt", "--vocab-size", "300", "--special-tokens", "X", "-o", "o"]
    )
    assert "unrecognized option --special-tokens: did you mean --special-token?" in err
    assert "bytepair train --help" in err
    err = _one_line_error(capsys, ["show", "gpt2", "hi", "--colr"])
    assert "did you mean --color?" in err


def test_a_misspelt_command_and_choice_name_the_nearest(capsys) -> None:
    assert "did you mean train?" in _one_line_error(capsys, ["trian"])
    err = _one_line_error(capsys, ["train", "x", "--vocab-size", "300", "-o", "o", "--errors", "x"])
    assert "--errors: invalid choice 'x'" in err
    assert "did you mean" in _one_line_error(
        capsys, ["train", "x", "--vocab-size", "300", "-o", "o", "--errors", "strikt"]
    )


def test_a_missing_argument_is_one_line(capsys) -> None:
    err = _one_line_error(capsys, ["train", "x.txt", "-o", "out"])
    assert "the following arguments are required: --vocab-size" in err


def test_decode_without_a_sidecar_names_the_cli_option(model_dir, tmp_path, capsys) -> None:
    bare = tmp_path / "ids.bin"
    np.array([116, 104, 101], np.uint16).tofile(bare)
    assert cli_main(["decode", str(model_dir), str(bare)]) == 2
    err = capsys.readouterr().err
    assert "(CLI: --dtype)" in err and "dtype=" in err
    assert cli_main(["decode", str(model_dir), str(bare), "--dtype", "uint16"]) == 0
    assert capsys.readouterr().out == "the\n"


def _actions() -> list[tuple[str, argparse.Action]]:
    """Every argument of every command, with its command's name."""
    parser = _parser()
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += [(name, a) for a in sub._actions]
    return out


FLAGS = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._HelpAction)


@pytest.mark.parametrize("command,action", _actions(), ids=lambda x: getattr(x, "dest", x))
def test_every_argument_says_what_it_takes_and_its_default(command, action) -> None:
    if action.help == argparse.SUPPRESS:
        return
    assert action.help, f"{command} {action.dest}: no help"
    optional = action.option_strings and not action.required
    if optional and not isinstance(action, FLAGS) and action.dest != "help":
        assert "default" in action.help, f"{command} {action.option_strings}: no default"


def test_model_arguments_name_every_way_to_give_a_tokenizer() -> None:
    for command, action in _actions():
        if action.dest == "model":
            for word in ("folder", "tokenizer.json", "gpt2", "cl100k_base", "o200k_base"):
                assert word in (action.help or ""), (command, word)


def test_a_tokenizer_by_name_loads_everywhere(tiktoken_ready, tmp_path, capsys) -> None:
    if "cl100k_base" not in tiktoken_ready:
        pytest.skip("tiktoken's cl100k_base file is not available")
    text = tmp_path / "t.txt"
    text.write_text("hello world", encoding="utf-8")
    out = tmp_path / "ids.bin"
    assert cli_main(["encode", "cl100k_base", str(text), "-o", str(out), "--quiet"]) == 0
    assert bytepair.load_tokens(out).tolist() == [15339, 1917]
    assert cli_main(["decode", "cl100k", str(out)]) == 0
    assert capsys.readouterr().out == "hello world\n"
