"""argparse as the `bytepair` command speaks: every error is one line on stderr and exit status 2
(argparse prints the usage first, over several lines), a misspelt option or command names the
nearest valid one, and the line says where the command's help is.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import NoReturn, TypeAlias

#: argparse's message for a value not among an argument's choices (a command among commands).
_INVALID_CHOICE = re.compile(r"argument ([^:]+): invalid choice: '([^']*)' \(choose from (.*)\)")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line; subcommands' parsers are of this class too
    (`add_subparsers` makes its parsers of the parent's class)."""

    def error(self, message: str) -> NoReturn:
        choice = _INVALID_CHOICE.match(message)
        if choice:
            given, offered = choice.group(2), re.findall(r"'([^']*)'", choice.group(3))
            which = "" if choice.group(1) == "command" else f"{choice.group(1)}: "
            message = f"{which}invalid choice {given!r}{_nearest(given, offered)}"
            message += f" (choose from {', '.join(offered)})"
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse's, but an unknown option is refused by the command's own parser, which
        knows the options to suggest."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._command_parser(parsed).refuse(extras)
        return parsed

    def refuse(self, extras: list[str]) -> NoReturn:
        """The error for arguments this parser does not take."""
        first = extras[0]
        if not first.startswith("-") or first == "-":
            self.error(f"unexpected argument {first!r}")
        name = first.split("=", 1)[0]
        options = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        self.error(f"unrecognized option {name}{_nearest(name, options)}")

    def _command_parser(self, parsed: argparse.Namespace) -> Parser:
        """The subcommand's parser that `parsed` went through, or this one."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(chosen, Parser):
                    return chosen
        return self


#: The subcommands of the `bytepair` parser, to which each command group adds its own.
Commands: TypeAlias = "argparse._SubParsersAction[Parser]"


def _nearest(word: str, offered: list[str]) -> str:
    """`: did you mean X?` for the closest of `offered`, or nothing."""
    close = difflib.get_close_matches(word, offered, n=1, cutoff=0.6)
    return f": did you mean {close[0]}?" if close else ""


def ends_quietly() -> int:
    """Output to a closed pipe (`bytepair show ... | head`) ends the command quietly, as `cat`
    and `grep` end: stdout goes to /dev/null, so that Python's own flush at exit does not fail
    again, and the status is the shell's for SIGPIPE (128 + 13)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141
