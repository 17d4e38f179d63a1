"""The one atomic write: a file appears whole or not at all. Data goes to a new temporary file
beside the target (a unique name, removed again on any error), then a rename replaces the
target. Every stage that writes a finished file (tokenizer files, token-file sidecars and
indexes, journals, manifests, `.bpc` counts, reports) goes through it; appending is not its job.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Names tried for the temporary file before giving up (each is random).
_ATTEMPTS = 100


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, sync: bool = True) -> None:
    """Writes `data` (str as UTF-8) to `path` through a temporary file in the same folder and a
    rename, so a reader never sees a partial file; the file gets the usual permissions (0666
    less the umask). `sync`: on the disk before the rename, so that it survives a machine
    crash; without it, only the process being killed (a journal saved many times a second).

    >>> write_atomic("out/tok.json", "{}")  # doctest: +SKIP
    """
    path = Path(path)
    fd, tmp = _create_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new, empty, hidden file `.NAME.RANDOM.tmp` beside `path`, opened for writing. Created
    with mode 0666 so that the kernel applies the umask, as to any new file: reading the umask
    means setting it, which would race with other threads creating files."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(_ATTEMPTS):
        tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot create a temporary file beside {path}")
