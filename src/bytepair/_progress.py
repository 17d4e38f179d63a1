"""Progress for people: the one switch that decides whether bars are drawn (asked, or stderr is a
terminal) and the one bar every stage draws (tqdm on stderr, imported only when a bar is shown).
What a stage counts (bytes, merges, shards) and when it reports is the stage's.
"""

from __future__ import annotations

import sys


def show_progress(progress: bool | None) -> bool:
    """Whether to draw progress bars: as asked, or (None) when stderr is a terminal."""
    if progress is None:
        return sys.stderr.isatty()
    return bool(progress)


class Bar:
    """A tqdm bar on stderr, or nothing when `show` is false. `to(done)` moves it to an absolute
    amount (the form of the core's progress callbacks); it never moves back. `scale` shows
    amounts as k, M, G in steps of `divisor`; `initial` is where a resumed job stands."""

    def __init__(
        self,
        show: bool,
        total: int,
        desc: str,
        unit: str = "B",
        *,
        scale: bool = True,
        divisor: int = 1000,
        initial: int = 0,
        note: str | None = None,
    ):
        self._bar = None
        self._last = initial
        if show:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                initial=initial,
                desc=desc,
                unit=unit,
                unit_scale=scale,
                unit_divisor=divisor,
                file=sys.stderr,
                dynamic_ncols=True,
            )
            if note is not None:
                self._bar.set_postfix_str(note)

    def to(self, done: int, note: str | None = None) -> None:
        """Moves the bar to `done`; `note` replaces the text after it (a rate, shards done)."""
        if self._bar is None:
            return
        if note is not None:
            self._bar.set_postfix_str(note, refresh=False)
        if done > self._last:
            self._bar.update(done - self._last)
            self._last = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
