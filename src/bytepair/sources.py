"""What an input is, for every command (training, counting, sharding, sampling, encoding): files,
globs and folders of plain text, `.jsonl`/`.ndjson` (a record a line) and `.parquet` (a record a
row), plain, `.gz` or `.zst`; a compressed or binary file named as text is refused, never read as
text. Also the Arrow side of records: a Parquet file's row groups and text column, and the
batches of a Hugging Face dataset or an Arrow table. Reading the bytes is the stages' own
(`count.py` counts in the core, `corpus/inputs.py` encodes).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_COMPRESSION = {".gz": "gz", ".zst": "zst"}
_RECORD_KINDS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
_EXTRA = {"zst": ("zstandard", "zst"), "parquet": ("pyarrow", "parquet")}
#: Bytes of a file looked at to tell text from binary data.
_SNIFF = 1 << 16
#: Leading bytes of formats that are not text, with their names and what to do.
_MAGIC = [
    (b"\x1f\x8b", "gzip-compressed", "name it *.gz"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "name it *.zst"),
    (b"\xfd7zXZ\x00", "xz-compressed", "decompress it (xz -d)"),
    (b"BZh", "bzip2-compressed", "decompress it (bzip2 -d)"),
    (b"PK\x03\x04", "a zip archive", "extract it"),
    (b"PAR1", "Parquet", "name it *.parquet"),
    (b"\x7fELF", "an executable", "train on text files"),
    (b"\x93NUMPY", "a numpy array", "train on text files"),
    (b"%PDF-", "a PDF document", "extract its text first"),
    (b"\x89PNG", "a PNG image", "train on text files"),
    (b"\xff\xd8\xff", "a JPEG image", "train on text files"),
    (b"\xff\xfe", "UTF-16 text", "convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text", "convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"),
]


class InputError(ValueError):
    """Bad input: the message names the file and the line, row or byte offset."""


def os_error(e: OSError, message: str) -> OSError:
    """An OSError that prints as `message` alone (one clear line) but keeps the errno."""
    err = OSError(message)
    err.errno = e.errno
    return err


def require(extra: str) -> Any:
    """The optional module behind an extra, or an ImportError saying how to install it."""
    module, name = _EXTRA[extra]
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(
            f"reading {'.zst' if extra == 'zst' else '.parquet'} files needs {module}: "
            f"pip install 'bytepair[{name}]'"
        ) from None


@dataclass(frozen=True)
class Source:
    """One input file: how to read it, and what identifies it (`--resume`, shard plans)."""

    path: Path
    kind: str  # "text", "jsonl" or "parquet"
    compression: str | None  # None, "gz" or "zst"
    size: int
    mtime_ns: int

    def key(self) -> list[str | int | None]:
        return [str(self.path), self.kind, self.compression, self.size, self.mtime_ns]

    @property
    def splittable(self) -> bool:
        """Whether a byte range of it can be read alone (compressed streams cannot)."""
        return self.compression is None


Inputs = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


def expand_inputs(inputs: Inputs) -> list[Source]:
    """The inputs `expand_paths` finds, each described by its name; an error names a file that
    is not what its name says."""
    return [_source(p) for p in expand_paths(inputs)]


def expand_paths(inputs: Inputs) -> list[Path]:
    """Files as given, glob patterns and folders (recursively, hidden files skipped), each sorted;
    an error names a pattern that matches nothing or a path that is missing."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    paths: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p, path))
            if not found:
                raise InputError(f"input folder {path} holds no files")
            paths += found
        elif not path.exists() and glob.has_magic(str(item)):
            found = sorted(Path(p) for p in glob.glob(str(item), recursive=True))
            if not found:
                raise InputError(f"no file matches {str(item)!r}")
            paths += [p for p in found if p.is_file()]
        elif not path.exists():
            raise FileNotFoundError(f"input file not found: {path}")
        else:
            paths.append(path)
    if not paths:
        raise InputError("no input files given")
    return paths


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def _source(path: Path) -> Source:
    suffixes = [s.lower() for s in path.suffixes]
    compression = _COMPRESSION.get(suffixes[-1]) if suffixes else None
    if compression:
        suffixes = suffixes[:-1]
    kind = _RECORD_KINDS.get(suffixes[-1], "text") if suffixes else "text"
    if kind == "parquet" and compression:
        raise InputError(f"{path}: a .parquet file compresses inside; do not compress it again")
    try:
        st = path.stat()
        if not os.access(path, os.R_OK):
            raise PermissionError(13, "Permission denied")
        head = b""
        if kind != "parquet" and not compression and path.is_file():
            with open(path, "rb") as f:
                head = f.read(_SNIFF)
    except OSError as e:
        raise os_error(e, f"cannot read {path}: {e.strerror}") from None
    if head:
        _refuse_binary(path, head)
    return Source(path, kind, compression, st.st_size, st.st_mtime_ns)


def _refuse_binary(path: Path, head: bytes) -> None:
    what = binary_kind(head)
    if what:
        raise InputError(f"{path}: {what}")


def binary_kind(head: bytes) -> str | None:
    """What the first bytes of a file named as text say it is instead and what to do, or None
    for text: a known binary format, or NUL bytes with invalid UTF-8 in more than 1% of the
    bytes (damaged text, a stray NUL or a few bad bytes, is text: replaced or refused by
    `errors`). Up to 256 bytes are always text."""
    for magic, what, fix in _MAGIC:
        if head.startswith(magic):
            return f"the file is {what}, not UTF-8 text: {fix}"
    if len(head) < 256 or b"\x00" not in head:
        return None
    invalid = head.decode("utf-8", "replace").count("\ufffd") - head.count(b"\xef\xbf\xbd")
    if invalid * 100 <= len(head):
        return None
    return (
        f"the file looks binary, not UTF-8 text ({invalid:,} invalid UTF-8 sequences and NUL "
        f"bytes in its first {len(head):,} bytes): train on text, .jsonl, .parquet, .gz or .zst "
        f"files"
    )


def open_parquet(path: Path, column: str) -> Any:
    """A `pyarrow.parquet.ParquetFile` that has the text column `column`."""
    require("parquet")
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except OSError as e:
        raise os_error(e, f"cannot read {path}: {e.strerror or e}") from None
    except Exception as e:  # pyarrow raises ArrowInvalid, ...
        raise InputError(f"{path}: not a readable Parquet file ({e})") from None
    names = pf.schema_arrow.names
    if column not in names:
        raise InputError(
            f"{path}: no column {column!r} (its columns: {', '.join(map(repr, names))}; "
            f"choose one with --column / column=)"
        )
    return pf


@contextmanager
def parquet_errors(path: Path, where: Callable[[], str] = str) -> Iterator[None]:
    """pyarrow's errors while reading `path` as one clear line naming it (and `where()`)."""
    try:
        yield
    except OSError as e:
        raise os_error(e, f"cannot read {path}: {e.strerror or e}") from None
    except Exception as e:
        if type(e).__module__.startswith("pyarrow"):
            raise InputError(f"{path}: corrupt Parquet data{where()} ({e})") from None
        raise


def row_group_starts(pf: Any) -> list[int]:
    """The byte offset of each row group of a Parquet file, the first counted from 0: a byte
    range of the file holds the row groups that start in it (how Parquet files are sharded)."""
    starts = []
    for i in range(pf.metadata.num_row_groups):
        col = pf.metadata.row_group(i).column(0)
        offsets = [col.data_page_offset, col.dictionary_page_offset]
        starts.append(min(o for o in offsets if o is not None and o > 0))
    return [0, *starts[1:]] if starts else []


#: A row group larger than this (uncompressed) is read in batches of rows, not whole.
_WHOLE_GROUP = 64 << 20


def parquet_batches(pf: Any, column: str, groups: Iterable[int]) -> Iterator[Any]:
    """The column `column` of row groups `groups` of a Parquet file, as Arrow arrays: a row
    group at a time (pyarrow's `iter_batches` over a whole file held 485 MB to read the large
    benchmark corpus's 475 MB of text; a group at a time, 155 MB and faster), large groups in
    batches of rows."""
    for i in groups:
        group = pf.metadata.row_group(i)
        if group.total_byte_size <= _WHOLE_GROUP:
            yield pf.read_row_group(i, columns=[column]).column(0)
            continue
        rows = max(1, group.num_rows * _WHOLE_GROUP // max(group.total_byte_size, 1))
        for batch in pf.iter_batches(batch_size=rows, row_groups=[i], columns=[column]):
            yield batch.column(0)


def gathered(arrays: Iterable[Any], n_bytes: int, where: str) -> Iterator[tuple[int, list[Any]]]:
    """(first row, arrays) of the Arrow string arrays `arrays` in groups that hold about
    `n_bytes` of text, for one core call each (a call per 1,000-row group took 2.8 times as
    long as one per 64 MB); grouped as they are, not joined into one (a copy of every byte)."""
    import pyarrow as pa

    held: list[Any] = []
    size = first = rows = 0
    for array in arrays:
        chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
        for chunk in chunks:
            held.append(_large_strings(chunk, where, rows))
            size += held[-1].nbytes
            rows += len(chunk)
            if size >= n_bytes:
                yield first, held
                held, size, first = [], 0, rows
    if held:
        yield first, held


def _large_strings(array: Any, where: str, first_row: int) -> Any:
    """`array` as an Arrow array of large strings (64-bit offsets), or an error naming what it
    holds instead."""
    import pyarrow as pa

    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_large_string(array.type):
        return array
    if pa.types.is_string(array.type) or pa.types.is_string_view(array.type):
        return array.cast(pa.large_string())  # new offsets; the text is not copied
    raise InputError(f"{where}: rows from {first_row}: the column holds {array.type}, not strings")


def text_column(array: Any, where: str, first_row: int) -> tuple[npt.NDArray[np.int64], Any]:
    """The offsets (int64, one more than rows) and the data bytes (uint8) of an Arrow array of
    large strings, without a Python string per row; a null row is an error naming it."""
    import numpy as np
    import pyarrow.compute as pc

    if array.null_count:
        row = first_row + pc.index(array.is_null(), True).as_py()
        raise InputError(f"{where}: row {row} is null, not a string")
    _, offsets_buf, data_buf = array.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)
    offsets = offsets[array.offset : array.offset + len(array) + 1]
    if data_buf is None:  # every row empty
        return offsets, np.zeros(0, np.uint8)
    return offsets, np.frombuffer(data_buf, dtype=np.uint8)


def arrow_batches(dataset: Any, column: str, batch_rows: int) -> Iterator[Any]:
    """Arrow arrays of the column `column` of a Hugging Face `Dataset`/`IterableDataset`, a
    `pyarrow.Table`, `RecordBatch` or `RecordBatchReader`, or anything with
    `__arrow_c_stream__`, `batch_rows` rows at a time."""
    require("parquet")
    import pyarrow as pa

    if hasattr(dataset, "with_format") and hasattr(dataset, "iter"):  # datasets
        names = list(dataset.column_names or [])
        if names and column not in names:
            raise InputError(_no_column(column, names))
        for table in dataset.with_format("arrow").iter(batch_size=batch_rows):
            yield table.column(column)
        return
    if isinstance(dataset, pa.RecordBatch):
        dataset = pa.Table.from_batches([dataset])
    elif not isinstance(dataset, (pa.Table, pa.RecordBatchReader)):
        if not hasattr(dataset, "__arrow_c_stream__"):
            raise TypeError(
                f"expected a datasets.Dataset, IterableDataset or a pyarrow Table, got "
                f"{type(dataset).__name__} (for an iterable of strings use train_from_iterator)"
            )
        dataset = pa.RecordBatchReader.from_stream(dataset)
    names = dataset.schema.names
    if column not in names:
        raise InputError(_no_column(column, names))
    batches = dataset.to_batches(batch_rows) if isinstance(dataset, pa.Table) else dataset
    for batch in batches:
        yield batch.column(batch.schema.get_field_index(column))


def _no_column(column: str, names: list[str]) -> str:
    return (
        f"the dataset has no column {column!r} (its columns: {', '.join(map(repr, names))}; "
        f"choose one with column=)"
    )
