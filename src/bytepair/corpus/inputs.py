"""The inputs of corpus encoding: files, globs and folders of plain text, `.jsonl` (a record a
line) and `.parquet` (a record a row), plain, `.gz` or `.zst`, read in blocks (`streams.py`),
handed to the encoder given (plain text up to its last safe cut, records whole) and turned into
`Unit`s: ids, document ends, resume points. Errors name the file and line or byte offset.
Document boundaries and writing are `encode.py`'s; a new kind is a reader in `read_source`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from .._background import in_background
from ..sources import InputError, Source, open_parquet, parquet_errors
from .blocks import BlockEncoder, ReadOptions
from .streams import Stream, decode

if TYPE_CHECKING:
    from .blocks import Ids, Positions

#: A resume point holds the bytes after the last cut; past this size, no resume point is made.
_MAX_CARRY = 1 << 20


class ResumePoint(TypedDict, total=False):
    """Where a run stands (JSON in the journal): input `input`, and within it (none: at its
    start) the stream offset `pos` and the bytes after the last cut, `carry` (hex), of plain
    text; the offset `pos` and line `line` of JSON lines; the row `row` of Parquet."""

    input: int
    pos: int
    carry: str
    line: int
    row: int


@dataclass
class Unit:
    """Encoded ids of a stretch of input, in order, and where documents end among them."""

    ids: Ids
    doc_ends: Positions  # positions in `ids` where a record or a file ends (a document)
    plain: bool  # plain text: special tokens also end documents
    n_bytes: int  # bytes of text these ids came from (decompressed; of records, their texts)
    disk_done: int  # bytes of the input's file read so far, for progress
    state: ResumePoint | None  # where to resume after this unit, or None
    n_replaced: int = 0
    # inputs done: their size and hash
    finished: list[dict[str, str | int]] = field(default_factory=list)


def read_source(
    index: int, src: Source, opts: ReadOptions, encoder: BlockEncoder, state: ResumePoint | None
) -> Iterator[Unit]:
    """The encoded units of one input, from the resume point `state` (None: the start);
    `encoder` has `block(data, last)` and `texts(texts)` (see `blocks.BlockEncoder`)."""
    reader = {"text": _text_units, "jsonl": _jsonl_units, "parquet": _parquet_units}[src.kind]
    return reader(index, src, opts, encoder, state or {})


def _blocks(stream: Stream, size: int) -> Iterator[tuple[bytes, int, int, bool]]:
    """(block, stream offset after it, file bytes read, whether it is the last): the block
    after each is read first, so that the last one is known without another encoder call."""
    chunk = stream.read(size)
    while True:
        following = stream.read(size) if chunk else b""
        yield chunk, stream.pos - len(following), stream.raw.n, not following
        if not following:
            return
        chunk = following


def _text_units(
    index: int, src: Source, opts: ReadOptions, encoder: BlockEncoder, state: ResumePoint
) -> Iterator[Unit]:
    """Plain text: blocks encoded up to their last safe cut; the bytes after it go in front
    of the next block. The file's end ends a document."""
    stream = Stream(src, state.get("pos", 0))
    carry = bytes.fromhex(state.get("carry", ""))
    wait_for = 0  # no cut in the carry yet: read until it has doubled
    blocks = _blocks(stream, opts.block_size)
    if src.size > opts.block_size:  # read ahead: reading, hashing, decompressing overlap encoding
        blocks = in_background(blocks, 1)
    for chunk, pos, disk, last in blocks:
        data = carry + chunk
        if not last and len(data) < wait_for:
            carry = data
            yield Unit(encoder.empty_ids, encoder.empty_ends, True, len(chunk), disk, None)
            continue
        ids, offsets, used, n_replaced, data = encoder.block(
            data, last, str(src.path), pos - len(data)
        )
        carry = data[used:]
        wait_for = 0 if used else 2 * len(data)
        if last:
            finished = stream.close()
            yield Unit(
                ids,
                offsets[-1:],
                True,
                len(chunk),
                src.size,
                {"input": index + 1},
                n_replaced,
                [finished],
            )
            return
        resume: ResumePoint | None = None
        if used and len(carry) <= _MAX_CARRY:
            resume = {"input": index, "pos": pos, "carry": carry.hex()}
        yield Unit(ids, offsets[:0], True, len(chunk), disk, resume, n_replaced)


def small_files(sources: list[Source], i: int, opts: ReadOptions) -> int:
    """How many plain, uncompressed text files from `i` on are small enough to be read whole
    and encoded in one call (a call per small file left the threads idle: 1 MB/s on 2 KB files)."""
    n, total = 0, 0
    for src in sources[i:]:
        total += src.size
        if (
            src.kind != "text"
            or src.compression
            or 4 * src.size > opts.block_size
            or (total > opts.block_size)
        ):
            break
        n += 1
    return n


def small_text_units(
    first: int, srcs: list[Source], opts: ReadOptions, encoder: BlockEncoder
) -> Unit:
    """Small text files, each read whole and one text of one encoder call; each file's end
    ends a document (special tokens too)."""
    texts: list[str] = []
    finished: list[dict[str, str | int]] = []
    n_replaced = 0
    for src in srcs:
        stream = Stream(src, 0)
        text, replaced = decode(stream.read(-1), opts.errors, str(src.path), 0)
        texts.append(text)
        finished.append(stream.close())
        n_replaced += replaced
    ids, offsets = encoder.texts(texts, plain=True)
    n_bytes = sum(s.size for s in srcs)
    return Unit(
        ids, offsets[1:], True, n_bytes, n_bytes, {"input": first + len(srcs)}, n_replaced, finished
    )


def _jsonl_units(
    index: int, src: Source, opts: ReadOptions, encoder: BlockEncoder, state: ResumePoint
) -> Iterator[Unit]:
    """JSON lines: each record's field is a document (blank lines are skipped). Lines are
    parsed one block ahead on another thread, as plain text is read."""
    stream = Stream(src, state.get("pos", 0))
    blocks = _jsonl_blocks(stream, src, opts, state.get("line", 0))
    if src.size > opts.block_size:
        blocks = in_background(blocks, 1)
    for texts, n_bytes, n_replaced, pos, line_no, disk in blocks:
        ids, offsets = encoder.texts(texts)
        resume: ResumePoint = {"input": index, "pos": pos, "line": line_no}
        yield Unit(ids, offsets[1:], False, n_bytes, disk, resume, n_replaced)
    yield _done(index, src, encoder, stream.close())


def _jsonl_blocks(
    stream: Stream, src: Source, opts: ReadOptions, line_no: int
) -> Iterator[tuple[list[str], int, int, int, int, int]]:
    """(texts, their bytes, invalid sequences replaced, offset and line after, file bytes read)
    for each block of lines: the bytes are the texts' UTF-8, not the JSON's."""
    while lines := stream.readlines(opts.block_size):
        texts: list[str] = []
        n_replaced = 0
        offset = stream.pos - sum(map(len, lines))
        for raw in lines:
            line_no += 1
            where = f"{src.path}:{line_no}"
            line, replaced = decode(raw, opts.errors, where, offset)
            offset += len(raw)
            n_replaced += replaced
            if line.strip():
                texts.append(_field(line, opts.jsonl_field, where))
        yield texts, text_bytes(texts), n_replaced, stream.pos, line_no, stream.raw.n


def text_bytes(texts: list[str]) -> int:
    r"""The UTF-8 bytes of `texts` (a lone surrogate counts 3, as U+FFFD, which the encoder makes
    of it); an ASCII text's are its length, with no copy.

    >>> text_bytes(["ab", "é", "\ud800"])
    7
    """
    return sum(len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass")) for t in texts)


def _field(line: str, name: str, where: str) -> str:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise InputError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(record, dict) or name not in record:
        fields = ", ".join(map(repr, list(record)[:10])) if isinstance(record, dict) else "none"
        raise InputError(
            f"{where}: the record has no field {name!r} (its fields: {fields}; "
            f"choose one with --jsonl-field / jsonl_field=)"
        )
    value = record[name]
    if not isinstance(value, str):
        raise InputError(f"{where}: field {name!r} is {type(value).__name__}, not a string")
    return value


def _parquet_units(
    index: int, src: Source, opts: ReadOptions, encoder: BlockEncoder, state: ResumePoint
) -> Iterator[Unit]:
    """Parquet: each row's column is a document; resumes by skipping rows."""
    pf = open_parquet(src.path, opts.column)
    n_rows, row = pf.metadata.num_rows, 0
    skip = state.get("row", 0)
    with parquet_errors(src.path, lambda: f" near row {row}"):
        for batch in pf.iter_batches(batch_size=1024, columns=[opts.column]):
            values = batch.column(0).to_pylist()
            first, row = row, row + len(values)
            if row <= skip:
                continue
            texts = values[max(0, skip - first) :]
            for k, value in enumerate(texts, start=max(first, skip)):
                if not isinstance(value, str):
                    raise InputError(
                        f"{src.path}: row {k}: column {opts.column!r} is {value!r}, not a string"
                    )
            ids, offsets = encoder.texts(texts)
            disk = src.size * row // max(n_rows, 1)
            n_bytes = text_bytes(texts)
            yield Unit(ids, offsets[1:], False, n_bytes, disk, {"input": index, "row": row})
    yield _done(index, src, encoder, Stream(src, 0).close())


def _done(index: int, src: Source, encoder: BlockEncoder, finished: dict[str, str | int]) -> Unit:
    """The last unit of a record input: no ids, the input's size and hash."""
    e = encoder
    return Unit(e.empty_ids, e.empty_ends, False, 0, src.size, {"input": index + 1}, 0, [finished])
