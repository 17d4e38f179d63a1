"""A tokenizer of a smaller size cut from a run's result (`--save-at`): its first merges, as a
separate run at that size would give, since merges are a prefix sequence (each choice depends only
on the ones before); and the reserved tokens of padding taken off and put back around the cut.
"""

from __future__ import annotations

from .._checks import MAX_TOKEN_ID
from ..encoding import Tokenizer
from .plan import check_vocab_size
from .shaping import reserved_tokens


def _merge_ids(tok: Tokenizer) -> list[int]:
    """The id each merge makes, in merge order (where tokens share bytes, the first free one)."""
    ids_of: dict[bytes, list[int]] = {}
    for i, b in sorted(tok.vocab.items(), reverse=True):
        ids_of.setdefault(b, []).append(i)
    special_ids = set(tok.special_tokens.values())
    out = []
    for a, b in tok.merges:
        ids = [i for i in ids_of.get(a + b, []) if i not in special_ids]
        if not ids:
            raise ValueError(f"merge {(a, b)!r} makes no token of the vocabulary")
        out.append(ids.pop())
        ids_of[a + b] = ids
    return out


def shrink(tok: Tokenizer, vocab_size: int) -> Tokenizer:
    """The tokenizer of `vocab_size` cut from a trained one: its first merges, every other token
    (bytes, special tokens) kept, those after the cut renumbered to follow the last merge kept.
    Equal to a fresh run at that size, since merges are a prefix sequence.

    >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"},
    ...                 [(b"a", b"b"), (b"ab", b"c")], ["<s>"])
    >>> shrink(tok, 258).vocab[257], shrink(tok, 258).special_tokens
    (b'<s>', {'<s>': 257})
    """
    check_vocab_size(vocab_size)
    n_other = len(tok.vocab) - len(tok.merges)
    k = vocab_size - n_other
    if not 0 <= k <= len(tok.merges):
        raise ValueError(
            f"cannot cut a tokenizer of {vocab_size} tokens from one of {len(tok.vocab)} with "
            f"{n_other} tokens that are not merges: choose a size in {n_other}..{len(tok.vocab)}"
        )
    made = _merge_ids(tok)
    cut = made[k] if k < len(made) else MAX_TOKEN_ID + 1
    dropped = set(made[k:])
    vocab = {i: b for i, b in tok.vocab.items() if i < cut and i not in dropped}
    next_id = max(vocab) + 1
    for i, b in sorted(tok.vocab.items()):
        if i >= cut and i not in dropped:
            vocab[next_id] = b
            next_id += 1
    return Tokenizer(vocab, tok.merges[:k], list(tok.special_tokens), pattern=tok.pattern)


def padded(tok: Tokenizer, multiple: int | None) -> Tokenizer:
    """`tok` with reserved special tokens after its last id, to a multiple of `multiple` (its
    roles and other ids kept)."""
    names = reserved_tokens(len(tok.vocab), list(tok.special_tokens), multiple)
    return tok.with_special_tokens(names) if names else tok


def unpadded(tok: Tokenizer, n_reserved: int) -> Tokenizer:
    """`tok` without the `n_reserved` reserved tokens that padding added (its last ids)."""
    if not n_reserved:
        return tok
    dropped = set(sorted(tok.vocab)[-n_reserved:])
    vocab = {i: b for i, b in tok.vocab.items() if i not in dropped}
    specials = [t for t, i in tok.special_tokens.items() if i not in dropped]
    roles = {r: t for r, t in tok.special_token_roles.items() if t in specials}
    return Tokenizer(
        vocab,
        tok.merges,
        specials,
        pattern=tok.pattern,
        special_token_roles=roles,
        model_max_length=tok.model_max_length,
    )


def cut(tok: Tokenizer, size: int, n_reserved: int, multiple: int | None) -> Tokenizer:
    """The tokenizer a separate run at `size` would give (`--save-at`): `tok` without its
    padding, cut to `size` (`shrink`), padded again."""
    base = unpadded(tok, n_reserved)
    return padded(shrink(base, min(size, len(base.vocab))), multiple)
