"""The summary of an inspection as plain tables of strings, so that the terminal (`show.py`) and
the HTML report (`report.py`) show the same figures: vocabulary by kind, compression against the
compared tokenizers, token lengths, the longest tokens, and the tokens that are never used,
cannot be reached or are always absorbed by later merges. It computes nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._spans import spans_words
from ..decoding import visible
from .figures import Inspection

#: Token lengths from 1 to this are counted one by one, longer ones together.
_MAX_LENGTH_ROW = 16


@dataclass
class Table:
    """A titled table; `align` has one letter per column, "l" or "r"."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    align: str
    note: str = ""


def label(raw: bytes) -> str:
    """A token as one line of text, quoted so that spaces show: `' the'`, `'\\n'`, `'\\xe4'`.

    >>> label(b" a\\n\\xe4")
    "' a\\\\n\\\\xe4'"
    """
    return "'" + "".join(p for p, _ in visible(raw)).replace("\n", "\\n") + "'"


def tables(ins: Inspection, top: int = 10) -> list[Table]:
    """Every table of the summary; lists of tokens show at most `top` rows."""
    return [
        _vocabulary(ins),
        _compression(ins),
        _lengths(ins),
        _longest(ins, top),
        _usage(ins),
        _unreachable(ins, top),
        _shadowed(ins, top),
        _unused(ins, top),
    ]


def _n(value: float) -> str:
    return f"{value:,}"


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def kinds(ins: Inspection) -> dict[str, int]:
    """Tokens by kind: single bytes, made by a merge, special, other (neither: a loaded file's
    token that no merge makes)."""
    tok = ins.tok
    n_special = len(tok.special_tokens)
    n_bytes = int(np.count_nonzero(ins.token_lengths == 1)) - sum(
        len(t.encode()) == 1 for t in tok.special_tokens
    )
    n_merges = len(set(ins.merge_ids.tolist()))
    counts = {"bytes": n_bytes, "merges": n_merges, "special": n_special}
    other = n_tokens(ins) - sum(counts.values())
    return counts | ({"other": other} if other else {})


def n_tokens(ins: Inspection) -> int:
    """The tokens of the vocabulary (ids that several special tokens share count once)."""
    return int(np.count_nonzero(ins.present))


def _vocabulary(ins: Inspection) -> Table:
    counts = kinds(ins)
    n = n_tokens(ins)
    rows = [[kind, _n(k), _share(k, n)] for kind, k in counts.items()]
    superwords = sum(spans_words(a + b) for a, b in ins.tok.merges)
    if superwords:  # a superword tokenizer (docs/spec.md §1.9)
        rows.insert(2, ["  spanning words", _n(superwords), _share(superwords, n)])
    rows.append(["total", _n(n), "100.0%"])
    gaps = ins.tok.n_vocab - n
    note = (
        f"ids run from 0 to {ins.tok.n_vocab - 1:,}; {gaps:,} of them name no token" if gaps else ""
    )
    return Table(f"Vocabulary of {ins.name}", ["kind", "tokens", "share"], rows, "lrr", note)


def _compression(ins: Inspection) -> Table:
    base = {r.source: r.n_tokens for r in ins.compression[ins.name]}
    rows = []
    for name, results in ins.compression.items():
        for r in results:
            rows.append(
                [
                    name,
                    r.source,
                    _n(r.n_bytes),
                    _n(r.n_tokens),
                    f"{r.bytes_per_token:.3f}",
                    f"{r.tokens_per_word:.3f}" if r.n_words else "-",
                    f"{r.n_tokens / base[r.source]:.3f}" if base.get(r.source) else "-",
                ]
            )
    columns = ["tokenizer", "input", "bytes", "tokens", "bytes/token", "tokens/word"]
    note = (
        f"bytes and tokens of text, special tokens left out; words: runs of non-whitespace; "
        f"inspected in {ins.seconds:.1f} s. Higher bytes/token and fewer tokens/word compress "
        f"better."
    )
    if ins.n_replaced:
        note += f" Replaced {ins.n_replaced:,} invalid UTF-8 sequences with U+FFFD."
    return Table(
        "Compression on the sample", [*columns, f"tokens vs {ins.name}"], rows, "llrrrrr", note
    )


def length_histogram(ins: Inspection) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(length labels 1..16+, vocabulary tokens of each length, sample tokens of each length);
    special tokens are left out."""
    plain = ins.present.copy()
    plain[list(ins.tok.special_tokens.values())] = False
    bucket = np.minimum(ins.token_lengths, _MAX_LENGTH_ROW)[plain]
    in_vocab = np.bincount(bucket, minlength=_MAX_LENGTH_ROW + 1)[1:]
    in_sample = np.bincount(bucket, weights=ins.counts[plain], minlength=_MAX_LENGTH_ROW + 1)[1:]
    labels = [str(n) for n in range(1, _MAX_LENGTH_ROW)] + [f"{_MAX_LENGTH_ROW}+"]
    return labels, in_vocab, in_sample


def _lengths(ins: Inspection) -> Table:
    labels, in_vocab, in_sample = length_histogram(ins)
    total = in_sample.sum()
    rows = [
        [name, _n(int(v)), _share(s, total)]
        for name, v, s in zip(labels, in_vocab, in_sample, strict=True)
        if v
    ]
    columns = ["bytes", "tokens in vocabulary", "share of sample tokens"]
    return Table("Token lengths", columns, rows, "rrr")


def _token_row(ins: Inspection, token_id: int) -> list[str]:
    raw = ins.tok.id_to_token(token_id)
    return [str(token_id), label(raw), str(len(raw)), _n(int(ins.counts[token_id]))]


def _longest(ins: Inspection, top: int) -> Table:
    special = set(ins.tok.special_tokens.values())
    order = np.argsort(-ins.token_lengths, kind="stable")
    ids = [int(i) for i in order if int(i) not in special and ins.present[i]][:top]
    rows = [_token_row(ins, i) for i in ids]
    return Table("Longest tokens", ["id", "token", "bytes", "uses"], rows, "rlrr")


def unused(ins: Inspection) -> dict[str, list[int]]:
    """Ids never used on the sample, by kind (bytes, merges, special)."""
    zero = (ins.counts == 0) & ins.present
    special = np.zeros(ins.tok.n_vocab, bool)
    special[list(ins.tok.special_tokens.values())] = True
    single = (ins.token_lengths == 1) & ~special
    return {
        "bytes": np.flatnonzero(zero & single).tolist(),
        "merges": [int(i) for i in ins.merge_ids if zero[i]],
        "special": np.flatnonzero(zero & special).tolist(),
    }


def _usage(ins: Inspection) -> Table:
    n = n_tokens(ins)
    never = unused(ins)
    used = int(np.count_nonzero(ins.counts))
    rows = [["used at least once", _n(used), _share(used, n)]]
    rows += [
        [f"never used: {kind}", _n(len(ids)), _share(len(ids), n)] for kind, ids in never.items()
    ]
    rows.append(
        [
            "unreachable (encoding its bytes gives other ids)",
            _n(len(ins.unreachable)),
            _share(len(ins.unreachable), n),
        ]
    )
    shadowed = len(ins.shadowed())
    rows.append(
        ["merges made but always absorbed by later merges", _n(shadowed), _share(shadowed, n)]
    )
    return Table("Token use on the sample", ["", "tokens", "share"], rows, "lrr")


def _unreachable(ins: Inspection, top: int) -> Table:
    rows = []
    for token_id, ids in ins.unreachable[:top]:
        parts = " ".join(label(ins.tok.id_to_token(i)) for i in ids)
        rows.append([str(token_id), label(ins.tok.id_to_token(token_id)), parts])
    note = f"{len(ins.unreachable):,} in all" if len(ins.unreachable) > top else ""
    return Table("Unreachable tokens", ["id", "token", "its bytes encode as"], rows, "rll", note)


def _shadowed(ins: Inspection, top: int) -> Table:
    merges = sorted(ins.shadowed(), key=lambda k: -int(ins.applications[k]))
    rows = []
    for k in merges[:top]:
        token_id, into = int(ins.merge_ids[k]), int(ins.absorbed_into[k])
        rows.append(
            [
                str(token_id),
                label(ins.tok.id_to_token(token_id)),
                _n(int(ins.applications[k])),
                label(ins.tok.id_to_token(into)) if into >= 0 else "-",
            ]
        )
    note = f"{len(merges):,} in all" if len(merges) > top else ""
    columns = ["id", "token", "times made", "mostly absorbed into"]
    return Table("Merges fully shadowed by later merges", columns, rows, "rlrl", note)


def _unused(ins: Inspection, top: int) -> Table:
    ids = unused(ins)["merges"]
    rows = [_token_row(ins, i)[:3] for i in ids[:top]]
    note = f"{len(ids):,} in all; the lowest ids shown" if len(ids) > top else ""
    return Table(
        "Merge tokens never used on the sample", ["id", "token", "bytes"], rows, "rlr", note
    )
