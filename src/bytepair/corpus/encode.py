"""Corpus encoding (`encode_files`): whole corpora into token files in bounded memory, surviving
kill -9. A producer thread reads each input a block ahead (`inputs.py`) and encodes it up to its
last safe cut on all threads (`blocks.py`); this thread finds the document ends, appends the ids
(`tokens.py`) and journals where the inputs stand, so `resume=True` continues to a
byte-identical file (every cut is safe and depends only on the input).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._atomic import write_atomic
from .._background import in_background
from .._checks import check_num_threads
from .._progress import Bar, show_progress
from ..encoding import Tokenizer
from ..sources import Source, expand_inputs, os_error
from .blocks import DEFAULT_BLOCK_SIZE, BlockEncoder, ReadOptions
from .inputs import ResumePoint, Unit, read_source, small_files, small_text_units
from .tokens import TokenWriter, choose_dtype

if TYPE_CHECKING:
    from .blocks import Ids

EOT = "<|endoftext|>"
_JOURNAL_VERSION = 1
#: The journal is saved at most this often: a save costs a few
#: ms, and a resumed run redoes at most this much work.
_SAVE_EVERY_S = 0.25


@dataclass
class CorpusReport:
    """What `encode_files` did, for the closing summary (and the sidecar's counts)."""

    n_inputs: int = 0
    #: Bytes of text read (of records, their texts, not the JSON or Parquet around them).
    n_bytes: int = 0
    n_documents: int = 0
    n_tokens: int = 0
    #: Special tokens among the tokens (those of the text and the EOTs appended), and the bytes
    #: of the text's: bytes/token is of the rest, so a corpus as text and as records agree.
    n_special: int = 0
    n_special_bytes: int = 0
    n_replaced: int = 0
    seconds: float = 0.0
    resumed_at: int = 0  # tokens kept from an interrupted run
    outputs: list[str] = field(default_factory=list)
    dtype: str = ""

    def summary(self) -> str:
        """One line: inputs, bytes, documents, tokens, bytes/token, time."""
        rate = self.n_bytes / 1e6 / self.seconds if self.seconds else 0.0
        line = (
            f"encoded {self.n_inputs:,} input(s): {self.n_bytes:,} bytes of text, "
            f"{self.n_documents:,} documents, {self.n_tokens:,} tokens "
            f"({self.bytes_per_token:.2f} bytes/token, {self.dtype}) in {self.seconds:.2f} s "
            f"({rate:.1f} MB/s)"
        )
        if self.resumed_at:
            line += f"; resumed after {self.resumed_at:,} tokens"
        if self.n_replaced:
            line += f"; replaced {self.n_replaced:,} invalid UTF-8 sequences with U+FFFD"
        return line

    @property
    def bytes_per_token(self) -> float:
        """Bytes of text per token, special tokens and their text left out."""
        return (self.n_bytes - self.n_special_bytes) / max(self.n_tokens - self.n_special, 1)


def tokenizer_hash(tok: Tokenizer) -> str:
    """sha256 of what decides the ids: vocabulary, merges, special tokens and pattern."""
    h = hashlib.sha256()
    h.update(json.dumps([tok.pattern, list(tok.special_tokens.items())]).encode())
    for i, b in sorted(tok.vocab.items()):
        h.update(i.to_bytes(4, "little") + len(b).to_bytes(4, "little") + b)
    for a, b in tok.merges:
        h.update(len(a).to_bytes(4, "little") + a + len(b).to_bytes(4, "little") + b)
    return "sha256:" + h.hexdigest()


def encode_files(
    tokenizer: Tokenizer,
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    format: str | None = None,
    dtype: npt.DTypeLike | None = None,
    jsonl_field: str = "text",
    column: str = "text",
    append_eot: bool = False,
    eot: str = EOT,
    errors: str = "replace",
    num_threads: int | None = None,
    resume: bool = False,
    progress: bool | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> CorpusReport:
    """Encodes text files (globs, folders; `.gz`, `.zst`; `.jsonl` records by `jsonl_field`,
    `.parquet` rows by `column`) into one token file: `format` "bin" (flat little-endian ids,
    the default), "npy", or "megatron" (`.bin` + `.idx`), with a JSON sidecar. Plain text keeps
    special tokens as special and ends a document after each; a record is one document, its
    special-token text plain text. `append_eot` adds `eot`'s id after each record or file.

    >>> encode_files(tok, "data/*.txt", "train.bin")  # doctest: +SKIP
    """
    start = time.perf_counter()
    fmt = format or ("npy" if str(output).endswith(".npy") else "bin")
    out_dtype = choose_dtype(tokenizer.n_vocab, fmt, dtype)
    sources = expand_inputs(inputs)
    opts = ReadOptions(jsonl_field, column, errors, block_size)
    eot_id = check_eot(tokenizer, eot) if append_eot else None
    config: dict[str, object] = {
        "version": _JOURNAL_VERSION,
        "tokenizer": tokenizer_hash(tokenizer),
        "inputs": [s.key() for s in sources],
        "options": [fmt, out_dtype.name, jsonl_field, column, eot_id, errors, block_size],
    }
    writer = TokenWriter(output, fmt, out_dtype)
    journal = writer.path.with_name(writer.path.name + ".partial.json")
    state = _load_journal(journal, config) if resume else None
    run = _Run(tokenizer, writer, journal, config, eot_id, check_num_threads(num_threads), state)
    try:
        run.encode(sources, opts, show_progress(progress))
        run.report.seconds, run.report.n_tokens = time.perf_counter() - start, run.n_tokens
        run.report.outputs = [str(p) for p in writer.finish(run.n_tokens, run.sidecar(fmt))]
    finally:
        writer.close()
    journal.unlink(missing_ok=True)
    return run.report


def check_eot(tok: Tokenizer, eot: str) -> int:
    """The id of the end-of-text special token `eot`, or an error naming the tokenizer's."""
    if eot in tok.special_tokens:
        return tok.special_tokens[eot]
    raise ValueError(
        f"append_eot: {eot!r} is not a special token of this tokenizer (its special tokens: "
        f"{sorted(tok.special_tokens) or 'none'}); name one with --eot TOKEN / eot="
    )


def _load_journal(path: Path, config: dict[str, object]) -> dict[str, Any] | None:
    """The saved state if `path` belongs to a run with the same inputs and options."""
    if not path.is_file():
        print(
            f"bytepair: note: nothing to resume ({path} not found); starting from the beginning",
            file=sys.stderr,
        )
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        same = saved["config"] == config
    except (ValueError, KeyError, TypeError):
        raise ValueError(
            f"cannot resume: {path} is not a readable journal; rerun without --resume to start over"
        ) from None
    if not same:
        raise ValueError(
            f"cannot resume: {path} was written for other inputs, options or tokenizer (an "
            f"input changed size or time?); rerun without --resume to start over"
        )
    state: dict[str, Any] = saved["state"]  # as `_Run._save` wrote it
    return state


class _Run:
    """The state of one encoding run: counts, the open document, the journal."""

    def __init__(
        self,
        tok: Tokenizer,
        writer: TokenWriter,
        journal: Path,
        config: dict[str, object],
        eot_id: int | None,
        num_threads: int,
        state: dict[str, Any] | None,
    ):
        self.tok, self.writer, self.journal, self.config = tok, writer, journal, config
        self.eot_id, self.num_threads = eot_id, num_threads
        self.next_save = 0.0
        # in the ids' own dtype, so that looking for them does not widen each block's ids first
        # (ids too large for it cannot be in the output: encoding refuses them)
        top = np.iinfo(writer.dtype).max
        specials = sorted(i for i in set(tok.special_tokens.values()) if i <= top)
        self.special_ids = np.array(specials, dtype=writer.dtype)
        self.special_bytes = np.array([len(tok.id_to_token(i)) for i in specials], np.int64)
        self.small = writer.dtype.itemsize == 2
        self.report = CorpusReport(dtype=writer.dtype.name)
        state = state or {"where": {"input": 0}, "finished": [], "counts": {}}
        self.where: ResumePoint = state["where"]
        self.finished: list[dict[str, str | int]] = state["finished"]
        counts: dict[str, int] = state["counts"]
        self.n_tokens, self.open_len = counts.get("tokens", 0), counts.get("open", 0)
        self.report.n_documents = counts.get("documents", 0)
        self.report.n_bytes = counts.get("bytes", 0)
        self.report.n_special = counts.get("special", 0)
        self.report.n_special_bytes = counts.get("special_bytes", 0)
        self.report.n_replaced = counts.get("replaced", 0)
        self.report.resumed_at = self.n_tokens
        if not counts:
            journal.unlink(missing_ok=True)  # a journal of an earlier run no longer applies
        writer.open(self.n_tokens, self.report.n_documents if counts else None)

    def encode(self, sources: list[Source], opts: ReadOptions, show: bool) -> None:
        """Reads and encodes on one thread (the encoder on all), writes here, in order."""
        self.report.n_inputs = len(sources)
        done = sum(s.size for s in sources[: self.where["input"]]) + self.where.get("pos", 0)
        total = sum(s.size for s in sources)
        bar = Bar(show, total, "encoding", initial=min(done, total))  # resumed: where it stands
        encoder = BlockEncoder(self.tok, opts, self.num_threads, self.small)
        start, tokens0 = time.perf_counter(), self.n_tokens
        try:
            for unit in in_background(_units(sources, opts, encoder, self.where), 2):
                self._write(unit)
                rate = (self.n_tokens - tokens0) / max(time.perf_counter() - start, 1e-9)
                bar.to(unit.disk_done, f"{rate / 1e6:.2f}M tok/s")
        finally:
            bar.close()

    def _write(self, unit: Unit) -> None:
        """Adds the EOTs, finds the document ends, appends, then saves the journal."""
        ids, doc_ends = unit.ids, np.asarray(unit.doc_ends, dtype=np.int64)
        n_eot = 0
        if self.eot_id is not None and len(doc_ends):
            ids = np.insert(ids, doc_ends, np.asarray(self.eot_id, dtype=ids.dtype))
            doc_ends = doc_ends + np.arange(1, len(doc_ends) + 1)
            n_eot = len(doc_ends)
        self.report.n_special += n_eot
        if unit.plain and len(self.special_ids):
            is_special = (
                ids == self.special_ids[0]
                if len(self.special_ids) == 1
                else np.isin(ids, self.special_ids)
            )
            specials = np.flatnonzero(is_special) + 1
            if len(specials):
                doc_ends = np.union1d(doc_ends, specials) if len(doc_ends) else specials
                self._count_specials(ids[specials - 1], n_eot)
        starts = np.concatenate(([-self.open_len], doc_ends[:-1]))
        lengths = (doc_ends - starts)[doc_ends > starts]
        self.open_len = len(ids) - int(doc_ends[-1]) if len(doc_ends) else self.open_len + len(ids)
        try:
            self.writer.append(ids, lengths)
        except OSError as e:
            raise self._write_error(e) from None
        self.n_tokens += len(ids)
        self.report.n_documents += len(lengths)
        self.report.n_bytes += unit.n_bytes
        self.report.n_replaced += unit.n_replaced
        self.finished += unit.finished
        if unit.state is not None and time.monotonic() >= self.next_save:
            try:
                self.writer.flush()  # what the journal counts is in the file first
                self._save(unit.state)
            except OSError as e:
                raise self._write_error(e) from None
            self.next_save = time.monotonic() + _SAVE_EVERY_S

    def _count_specials(self, found: Ids, n_eot: int) -> None:
        """Counts the special tokens the text held (`found`: all of a unit's, the `n_eot`
        appended EOTs among them)."""
        n_bytes = int(self.special_bytes[np.searchsorted(self.special_ids, found)].sum())
        if n_eot and self.eot_id is not None:
            n_bytes -= n_eot * len(self.tok.id_to_token(self.eot_id))
        self.report.n_special += len(found) - n_eot
        self.report.n_special_bytes += n_bytes

    def _write_error(self, e: OSError) -> OSError:
        return os_error(
            e,
            f"cannot write {self.writer.partial}: {e.strerror or e}; what was written before "
            f"is kept: free space and rerun with --resume / resume=True",
        )

    def _save(self, where: ResumePoint) -> None:
        counts = {
            "tokens": self.n_tokens,
            "open": self.open_len,
            "bytes": self.report.n_bytes,
            "special": self.report.n_special,
            "special_bytes": self.report.n_special_bytes,
            "documents": self.report.n_documents,
            "replaced": self.report.n_replaced,
        }
        state = {"where": where, "finished": self.finished, "counts": counts}
        write_atomic(self.journal, json.dumps({"config": self.config, "state": state}), sync=False)

    def sidecar(self, fmt: str) -> dict[str, object]:
        if self.open_len:  # cannot happen: every input ends a document
            raise RuntimeError("internal error: the last document was not closed")
        return {
            "format": fmt,
            "dtype": self.writer.dtype.name,
            "byteorder": "little",
            "n_tokens": self.n_tokens,
            "n_documents": self.report.n_documents,
            "n_bytes": self.report.n_bytes,
            "tokenizer": {
                "hash": self.config["tokenizer"],
                "n_vocab": self.tok.n_vocab,
                "special_tokens": self.tok.special_tokens,
            },
            "eot_id": self.eot_id,
            "inputs": self.finished,
        }


def _units(
    sources: list[Source], opts: ReadOptions, encoder: BlockEncoder, where: ResumePoint
) -> Iterator[Unit]:
    """Every encoded unit from the resume point `where` on, in order; runs of small files are
    encoded together."""
    i = where["input"]
    while i < len(sources):
        base = sum(s.size for s in sources[:i])
        inside = where if where["input"] == i and len(where) > 1 else None  # resuming in it
        n_small = 0 if inside else small_files(sources, i, opts)
        units: Iterable[Unit]
        if n_small:
            units = [small_text_units(i, sources[i : i + n_small], opts, encoder)]
        else:
            units = read_source(i, sources[i], opts, encoder, inside)
        for unit in units:
            unit.disk_done += base
            yield unit
        i += max(n_small, 1)
