"""A generator run on another thread, so that reading (files, decompression, Arrow batches)
overlaps the core's work: used by counting (`count.py`) and corpus encoding (`corpus/`).
"""

from __future__ import annotations

import enum
import queue
import threading
from collections.abc import Iterator
from typing import Literal, TypeVar

_T = TypeVar("_T")


class _End(enum.Enum):
    """The end of `in_background`'s items (an enum member, so that `is` narrows it away)."""

    END = enum.auto()


class _Failed:
    """An exception raised in a background thread, on its way to the consumer."""

    def __init__(self, error: BaseException):
        self.error = error


def in_background(items: Iterator[_T], ahead: int) -> Iterator[_T]:
    """The items of `items`, made on another thread up to `ahead` in advance: an error there is
    raised here after the items made before it; closing this iterator stops the thread."""
    made: queue.Queue[_T | _Failed | Literal[_End.END]] = queue.Queue(maxsize=ahead)
    stop, end = threading.Event(), _End.END

    def put(item: _T | _Failed | Literal[_End.END]) -> bool:
        while not stop.is_set():
            try:
                made.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(end)
        except BaseException as e:
            put(_Failed(e))
        finally:  # a generator's own clean-up (its files, its reader thread) runs now
            getattr(items, "close", lambda: None)()

    threading.Thread(target=run, daemon=True).start()
    try:
        while (item := made.get()) is not end:
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
