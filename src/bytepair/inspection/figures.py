"""The figures of `bytepair inspect`: what a tokenizer's vocabulary holds and how it does on
sample text, read as corpus encoding reads it (blocks encoded on all threads: memory does not
grow with the sample). Kept: per-id counts, and bytes, words and tokens per input file, for the
tokenizer and each one compared. Plain data: `summary.py` makes the tables that `show.py` and
`report.py` draw.
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .._checks import check_num_threads
from .._progress import Bar, show_progress
from ..corpus.blocks import DEFAULT_BLOCK_SIZE, BlockEncoder, ReadOptions
from ..corpus.inputs import read_source
from ..encoding import Tokenizer
from ..sources import Source, expand_inputs

if TYPE_CHECKING:
    from ..corpus.blocks import Ids, Positions

#: Bytes of the first input whose tokens the HTML report shows one by one.
DEFAULT_EXCERPT_BYTES = 50_000
#: bytes.split()'s whitespace: words are runs of anything else.
_SPACE = np.zeros(256, bool)
_SPACE[list(b" \t\n\r\x0b\x0c")] = True


@dataclass
class Compression:
    """One tokenizer on one input file (or on all of them: `source` "all")."""

    source: str
    n_bytes: int = 0
    n_words: int = 0
    n_tokens: int = 0

    @property
    def bytes_per_token(self) -> float:
        return self.n_bytes / self.n_tokens if self.n_tokens else 0.0

    @property
    def tokens_per_word(self) -> float:
        return self.n_tokens / self.n_words if self.n_words else 0.0


@dataclass
class Inspection:
    """Everything `inspect` found. Merge k made token `merge_ids[k]`, was applied
    `applications[k]` times on the sample, and its token went into `absorbed_into[k]` (the
    later token that took it most often; -1 for none)."""

    name: str
    tok: Tokenizer
    compression: dict[str, list[Compression]]  # tokenizer name → per input, then "all" if several
    counts: npt.NDArray[np.int64]  # uses of each id in the sample's encoding
    merge_ids: npt.NDArray[np.int64]
    applications: npt.NDArray[np.int64]
    absorbed_into: npt.NDArray[np.int64]
    unreachable: list[tuple[int, list[int]]]  # id, and the ids that encoding its bytes gives
    excerpt: list[int]  # the first tokens of the first input (DEFAULT_EXCERPT_BYTES)
    token_lengths: npt.NDArray[np.int64]  # bytes of each id (0 for an id the vocabulary skips)
    seconds: float = 0.0
    n_replaced: int = 0  # invalid UTF-8 sequences of the sample replaced with U+FFFD

    @functools.cached_property
    def present(self) -> npt.NDArray[np.bool_]:
        """Which ids of 0..n_vocab - 1 are tokens: OpenAI's vocabularies skip some (cl100k has
        no token 100256), and every figure counts tokens, not ids."""
        out = np.zeros(self.tok.n_vocab, bool)
        out[list(self.tok.vocab)] = True
        return out

    def shadowed(self) -> list[int]:
        """Merge indices whose token was made on the sample but never kept: later merges
        always absorbed it."""
        kept = self.counts[self.merge_ids] > 0
        shadowed: list[int] = np.flatnonzero((self.applications > 0) & ~kept).tolist()
        return shadowed


def inspect(
    tok: Tokenizer,
    samples: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    name: str = "tokenizer",
    compare: dict[str, Tokenizer] | None = None,
    errors: str = "replace",
    num_threads: int | None = None,
    progress: bool | None = None,
    excerpt_bytes: int = DEFAULT_EXCERPT_BYTES,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> Inspection:
    """Encodes the samples (files, globs, folders; text, `.jsonl`, `.parquet`, `.gz`, `.zst`,
    read as `encode_files` reads them) with `tok` and each tokenizer of `compare`, and studies
    the vocabulary. Progress bars on a terminal (`progress=None`), one per tokenizer.

    >>> ins = inspect(tok, "held_out.txt", compare={"gpt2": load("gpt2")})  # doctest: +SKIP
    >>> ins.compression["gpt2"][0].bytes_per_token  # doctest: +SKIP
    4.41
    """
    start = time.perf_counter()
    if isinstance(excerpt_bytes, bool) or not isinstance(excerpt_bytes, int) or excerpt_bytes < 0:
        raise ValueError(f"excerpt_bytes must be an integer >= 0, got {excerpt_bytes!r}")
    sources = expand_inputs(samples)
    run = _Run(
        sources,
        ReadOptions(errors=errors, block_size=block_size),
        check_num_threads(num_threads),
        show_progress(progress),
    )
    counts = np.zeros(tok.n_vocab, np.int64)
    excerpt: list[int] = []
    lengths = token_lengths(tok)
    compression = {name: run.encode(tok, name, lengths, counts, excerpt, excerpt_bytes)}
    n_replaced = run.n_replaced
    for other, other_tok in (compare or {}).items():
        compression[other] = run.encode(other_tok, other, token_lengths(other_tok))
    merge_ids, applications, absorbed = merge_usage(tok, counts)
    unreachable = unreachable_tokens(tok)
    return Inspection(
        name,
        tok,
        compression,
        counts,
        merge_ids,
        applications,
        absorbed,
        unreachable,
        excerpt,
        lengths,
        time.perf_counter() - start,
        n_replaced,
    )


def token_lengths(tok: Tokenizer) -> npt.NDArray[np.int64]:
    """The number of bytes of each id, 0 where the vocabulary has no token of that id."""
    out = np.zeros(tok.n_vocab, np.int64)
    for i, raw in tok.vocab.items():
        out[i] = len(raw)
    return out


class _Counting(BlockEncoder):
    """Corpus encoding's block encoder that also counts the bytes and words of text it encodes;
    a word cut by a block boundary is counted once. Special tokens' text is left out, and ends a
    word: a corpus as text with `<|endoftext|>` between documents, and as records, count alike."""

    def __init__(self, tok: Tokenizer, opts: ReadOptions, num_threads: int, small: bool) -> None:
        super().__init__(tok, opts, num_threads, small)
        self.n_bytes = self.n_words = 0
        self._in_word = False
        longest_first = sorted(tok.special_tokens, key=len, reverse=True)
        alternation = b"|".join(re.escape(t.encode("utf-8")) for t in longest_first)
        self._specials = re.compile(alternation) if longest_first else None

    def block(
        self, data: bytes, last: bool, where: str, offset: int
    ) -> tuple[Ids, Positions, int, int, bytes]:
        out = super().block(data, last, where, offset)
        used, encoded = out[2], out[4]
        self._count_plain(encoded[:used])
        return out

    def texts(self, texts: list[str], *, plain: bool = False) -> tuple[Ids, Positions]:
        for text in texts:
            self._in_word = False  # a record is a document of its own
            data = text.encode("utf-8", errors="surrogatepass")
            if plain:
                self._count_plain(data)
            else:
                self._count(data)
        return super().texts(texts, plain=plain)

    def _count_plain(self, data: bytes) -> None:
        """Counts text in which special tokens are matched (and so left out)."""
        pieces = self._specials.split(data) if self._specials else [data]
        for k, piece in enumerate(pieces):
            if k:
                self._in_word = False
            self._count(piece)

    def _count(self, data: bytes) -> None:
        if not data:
            return
        space = _SPACE[np.frombuffer(data, np.uint8)]
        starts = np.count_nonzero(space[:-1] & ~space[1:]) + int(not space[0] and not self._in_word)
        self.n_bytes += len(data)
        self.n_words += int(starts)
        self._in_word = not space[-1]


def _names(sources: list[Source]) -> list[str]:
    """How inputs are named in tables: file names, or whole paths where two names are alike."""
    names = [s.path.name for s in sources]
    return names if len(set(names)) == len(names) else [str(s.path) for s in sources]


@dataclass
class _Run:
    sources: list[Source]
    opts: ReadOptions
    num_threads: int
    show: bool
    n_replaced: int = 0  # by the last pass

    def encode(
        self,
        tok: Tokenizer,
        name: str,
        lengths: npt.NDArray[np.int64],
        counts: npt.NDArray[np.int64] | None = None,
        excerpt: list[int] | None = None,
        excerpt_bytes: int = 0,
    ) -> list[Compression]:
        """Compression per input (and "all"); adds each id's uses to `counts` and the first
        `excerpt_bytes` of tokens to `excerpt` when given (`lengths`: bytes per id)."""
        small = tok.n_vocab <= 1 << 16
        special_ids = np.array(sorted(set(tok.special_tokens.values())), np.int64)
        self.n_replaced = 0
        bar = Bar(self.show, sum(s.size for s in self.sources), name, divisor=1024)
        rows, done, names = [], 0, _names(self.sources)
        try:
            for index, src in enumerate(self.sources):
                enc = _Counting(tok, self.opts, self.num_threads, small)
                n_tokens = 0
                for unit in read_source(index, src, self.opts, enc, None):
                    ids = unit.ids
                    n_tokens += len(ids) - int(np.count_nonzero(np.isin(ids, special_ids)))
                    self.n_replaced += unit.n_replaced
                    if counts is not None and len(ids):
                        counts += np.bincount(ids, minlength=len(counts))
                    if excerpt is not None and len(ids):
                        _extend_excerpt(excerpt, ids, lengths, excerpt_bytes)
                    bar.to(done + unit.disk_done)
                done += src.size
                rows.append(Compression(names[index], enc.n_bytes, enc.n_words, n_tokens))
        finally:
            bar.close()
        if len(rows) > 1:
            fields = ("n_bytes", "n_words", "n_tokens")
            rows.append(Compression("all", *(sum(getattr(r, f) for r in rows) for f in fields)))
        return rows


def _extend_excerpt(
    excerpt: list[int], ids: Ids, lengths: npt.NDArray[np.int64], limit: int
) -> None:
    have = int(lengths[excerpt].sum()) if excerpt else 0
    if have >= limit:
        return
    ends = np.cumsum(lengths[ids])  # token k ends `ends[k]` bytes into this unit
    n = int(np.searchsorted(ends, limit - have)) + 1  # up to the first token reaching the limit
    excerpt.extend(ids[:n].tolist())


def merge_usage(
    tok: Tokenizer, counts: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(id each merge makes, times each merge was applied, the id that most often absorbed
    each merge's token or -1). A token in the output was made by its merge and, inside it,
    by its parts' merges: so a merge's applications are the uses of its token plus the
    applications of every later merge that took it as a part (walked from the last merge)."""
    merges = tok.merges
    made = [tok.token_to_id(a + b) for a, b in merges]
    parts = [(tok.token_to_id(a), tok.token_to_id(b)) for a, b in merges]
    made_by = {token_id: k for k, token_id in enumerate(made)}
    total = counts.tolist()
    best = [0] * len(merges)
    absorbed = [-1] * len(merges)
    for k in range(len(merges) - 1, -1, -1):
        n = total[made[k]]
        if not n:
            continue
        for part in parts[k]:
            total[part] += n
            j = made_by.get(part)
            if j is not None and n > best[j]:
                best[j], absorbed[j] = n, made[k]
    made_arr = np.array(made, np.int64)
    return made_arr, np.array(total, np.int64)[made_arr], np.array(absorbed, np.int64)


def unreachable_tokens(tok: Tokenizer) -> list[tuple[int, list[int]]]:
    """(id, ids that encoding its bytes gives) for every multi-byte, non-special token that
    encoding its own bytes does not give: it can never appear in an encoding, and its embedding
    row is wasted. Text is encoded as `encode_ordinary`; bytes that are not valid UTF-8 (part of
    a character), which no text is, get the merges alone (see `_bpe`)."""
    specials = set(tok.special_tokens.values())
    texts: dict[int, str] = {}
    partial: dict[int, bytes] = {}
    for i, raw in sorted(tok.vocab.items()):
        if len(raw) < 2 or i in specials:
            continue
        try:
            texts[i] = raw.decode("utf-8")
        except UnicodeDecodeError:
            partial[i] = raw
    found = dict(zip(texts, tok.encode_ordinary_batch(list(texts.values())), strict=True))
    ranks = {pair: k for k, pair in reversed(list(enumerate(tok.merges)))}
    for i, raw in partial.items():
        found[i] = [tok.token_to_id(part) for part in _bpe(raw, ranks)]
    return sorted((i, ids) for i, ids in found.items() if ids != [i])


def _bpe(raw: bytes, ranks: dict[tuple[bytes, bytes], int]) -> list[bytes]:
    """BPE of `raw` as the core's encoder does it: merge the adjacent pair of lowest merge rank.
    (The `.tiktoken` reader's BPE ranks the joined bytes instead, which merges pairs that are no
    merge when two splits make the same bytes.) Only for the few byte strings that are not text."""
    parts = [raw[i : i + 1] for i in range(len(raw))]
    while len(parts) > 1:
        rank, k = min((ranks.get(pair, len(ranks)), k) for k, pair in enumerate(pairwise(parts)))
        if rank == len(ranks):
            break
        parts[k : k + 2] = [parts[k] + parts[k + 1]]
    return parts
