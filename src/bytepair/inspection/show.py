"""The terminal: `bytepair show` (text with each token on its own background colour, ids under
it on request; bytes that are not whole characters as `\\xe4`) and the tables of `bytepair
inspect`. On a terminal it draws with rich (`pip install 'bytepair[inspect]'`); elsewhere (a pipe,
a file), or where rich is missing, tokens come one a line, plain, and need nothing.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, TextIO

from ..decoding import visible
from .summary import Table, label

if TYPE_CHECKING:  # rich loads only when it draws
    from rich.console import Console
    from rich.text import Text

    from ..encoding import Tokenizer

#: Light backgrounds with black text read on dark and light terminals alike; the HTML report
#: uses the same ones.
PALETTE = ("#ffe0a3", "#bfe3c0", "#b9d7f7", "#f6c3d5")
#: On 16-colour terminals the palette would fall to near-identical whites: named colours there.
_PALETTE_16 = ("yellow", "cyan", "green", "magenta")
_ESCAPE = "bold #b00020"


def require(module: str, command: str) -> ModuleType:
    """The optional `module` of the `inspect` extra, or an ImportError saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{command} needs {module}: pip install 'bytepair[inspect]'") from None


def has_rich() -> bool:
    """Whether rich, the `inspect` extra's, can be imported here."""
    try:
        importlib.import_module("rich")
    except ImportError:
        return False
    return True


def show(
    tok: Tokenizer,
    text: str,
    *,
    ids: bool = False,
    color: bool | None = None,
    file: TextIO | None = None,
    width: int | None = None,
) -> None:
    """Prints `text`'s tokens: coloured on a terminal (`color=None` asks the file, and whether
    rich is installed), else one a line as `'token'` (with `ID<tab>` before it when `ids`).

    >>> show(tok, "Héllo", ids=True, color=False)  # doctest: +SKIP
    39\t'H'
    """
    out = file or sys.stdout
    token_ids = tok.encode(text)
    if color is None:
        color = out.isatty() and has_rich()
    if not color:
        for i in token_ids:
            out.write(f"{i}\t" * ids + label(tok.id_to_token(i)) + "\n")
        return
    console = _console(out, width, force=True)
    palette = PALETTE if console.color_system in ("256", "truecolor") else _PALETTE_16
    for line in _lines(tok, token_ids, ids, console.width, palette):
        console.print(line, soft_wrap=True)


def _console(out: TextIO, width: int | None, *, force: bool) -> Console:
    require("rich", "bytepair show on a terminal")
    from rich.console import Console

    return Console(
        file=out, force_terminal=force, width=width, highlight=False, emoji=False, markup=False
    )


def _cell(raw: bytes, style: str) -> Text:
    """A token as rich Text on its background: newlines drawn as ↵, escapes in red."""
    from rich.text import Text

    cell = Text()
    for piece, escape in visible(raw):
        cell.append(piece.replace("\n", "↵"), f"{_ESCAPE} on {style}" if escape else style)
    return cell


def _lines(
    tok: Tokenizer, token_ids: Sequence[int], ids: bool, width: int, palette: Sequence[str]
) -> Iterator[Text]:
    """Rows of cells that fit `width` (a token with a newline ends its row); with `ids`, each
    row is followed by the ids, each under its token on the same background."""
    from rich.cells import cell_len
    from rich.text import Text

    top, bottom, used = Text(), Text(), 0
    for n, token_id in enumerate(token_ids):
        raw = tok.id_to_token(token_id)
        style = f"black on {palette[n % len(palette)]}"
        cell = _cell(raw, style)
        size = max(cell_len(cell.plain), len(str(token_id)) if ids else 0)
        if used and used + size > width:
            yield from (top, bottom) if ids else (top,)
            top, bottom, used = Text(), Text(), 0
        cell.append(" " * (size - cell_len(cell.plain)), style)
        top.append_text(cell)
        bottom.append(str(token_id).ljust(size), f"dim {style}")
        used += size
        if b"\n" in raw:
            yield from (top, bottom) if ids else (top,)
            top, bottom, used = Text(), Text(), 0
    if used:
        yield from (top, bottom) if ids else (top,)


def print_tables(tables: list[Table], file: TextIO | None = None) -> None:
    """The tables with rich: boxed and coloured on a terminal, plain boxes elsewhere."""
    from rich.table import Table as RichTable
    from rich.text import Text

    out = file or sys.stdout
    tty = out.isatty()
    console = _console(out, None if tty else 120, force=False)
    for table in tables:
        if not table.rows:
            continue
        shown = RichTable(
            title=table.title, caption=table.note or None, title_justify="left", show_edge=False
        )
        for name, align in zip(table.columns, table.align, strict=True):
            if align == "r":  # numbers are never broken; their headers break at "/" and "vs"
                header = Text(name.replace("/", "/\n").replace(" vs ", "\nvs "))
                shown.add_column(header, justify="right", no_wrap=True)
            else:  # text folds on narrow terminals
                shown.add_column(name, overflow="fold", min_width=min(len(name), 8))
        for row in table.rows:
            shown.add_row(*(Text(cell) for cell in row))
        console.print(shown)
