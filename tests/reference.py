"""Slow, plain pure-Python byte-level BPE: the test oracle for docs/spec.md §1 (with superword
training, §1.9) and §2.

Every step is written the naive way (full pair recount per merge, GPT-2's original `bpe()` loop per
pretoken) so that it can be checked by reading. It is test-only: never import it from `src/`, and
never optimise it; a faster oracle would be a second implementation that can drift.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable

import regex

GPT2_PATTERN: str = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
#: One regex, or steps in turn: regexes and (regex, behavior, invert) splits (HF's `Split`).
Pattern = str | tuple[str | tuple[str, str, bool], ...]
# The second stage of superword training (docs/spec.md §1.9), after GPT-2's and GPT-4's patterns.
GPT2_SUPERWORD_PATTERN: str = r" ?\p{N}+|(?:(?! ?\p{N})[^\n])+\n?|\n"
GPT4_SUPERWORD_PATTERN: str = r"\p{N}{1,3}|[^\n\p{N}]+\n?|\n"


def _check_special_tokens(special_tokens: list[str]) -> None:
    for token in special_tokens:
        if not isinstance(token, str) or token == "":
            raise ValueError(f"special tokens must be non-empty strings, got {token!r}")
    duplicates = sorted(t for t, n in Counter(special_tokens).items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate special tokens {duplicates!r}: list each one once")


def split_on_specials(text: str, special_tokens: list[str]) -> list[tuple[str, bool]]:
    """Cut `text` at every special token: leftmost match first, longest special at one position.

    >>> split_on_specials("a<|x|>b", ["<|x|>"])
    [('a', False), ('<|x|>', True), ('b', False)]
    """
    if any(token == "" for token in special_tokens):
        raise ValueError("an empty string cannot be a special token")
    pieces: list[tuple[str, bool]] = []
    start = 0
    pos = 0
    while pos < len(text):
        matches = [token for token in special_tokens if text.startswith(token, pos)]
        if not matches:
            pos += 1
            continue
        longest = max(matches, key=len)
        if start < pos:
            pieces.append((text[start:pos], False))
        pieces.append((longest, True))
        pos += len(longest)
        start = pos
    if start < len(text):
        pieces.append((text[start:], False))
    return pieces


def pretokenize(text: str, pattern: Pattern = GPT2_PATTERN) -> list[str]:
    """The pieces of `text` (docs/spec.md §1.2): a regex's matches and, as pieces of their own,
    the runs of text between them (HF's `Split`, `Isolated`); steps in turn split each piece of
    the step before.

    >>> pretokenize("Hello, world!")
    ['Hello', ',', ' world', '!']
    >>> pretokenize("ab 12", r"[a-z]+")
    ['ab', ' 12']
    """
    pieces = [text] if text else []
    for step in (pattern,) if isinstance(pattern, str) else pattern:
        if isinstance(step, str):
            pieces = [p for piece in pieces for p in _isolated(piece, step)]
        else:
            pieces = [p for piece in pieces for p in _split(piece, *step)]
    return pieces


def _isolated(text: str, pattern: str) -> list[str]:
    """`_split(text, pattern, "Isolated", False)`, the common case, in fewer steps."""
    pieces = []
    last = 0
    for match in regex.finditer(pattern, text):
        if last < match.start():
            pieces.append(text[last : match.start()])
        if match.start() < match.end():
            pieces.append(match.group())
        last = match.end()
    if last < len(text):
        pieces.append(text[last:])
    return pieces


def _split(text: str, pattern: str, behavior: str, invert: bool) -> list[str]:
    """One HF `Split` on one piece: its matches and the gaps between, flagged (`invert` swaps
    the flags); the behaviour makes pieces of them; empty pieces are dropped."""
    ranges: list[tuple[int, int, bool]] = []
    last = 0
    for match in regex.finditer(pattern, text):
        if last < match.start():
            ranges.append((last, match.start(), invert))
        ranges.append((match.start(), match.end(), not invert))
        last = match.end()
    if last < len(text):
        ranges.append((last, len(text), invert))
    out: list[list[int]] = []
    if behavior == "MergedWithNext":  # the mirror of MergedWithPrevious
        ranges = [(-e, -s, m) for s, e, m in reversed(ranges)]
    previous: bool | None = None
    for s, e, is_match in ranges:
        if behavior == "Removed" and is_match:
            continue
        joins = {
            "MergedWithPrevious": is_match and previous is False,
            "MergedWithNext": is_match and previous is False,
            "Contiguous": previous == is_match,
        }.get(behavior, False)
        if joins and out:
            out[-1][1] = e
        else:
            out.append([s, e])
        previous = is_match
    if behavior == "MergedWithNext":
        out = [[-e, -s] for s, e in reversed(out)]
    return [text[s:e] for s, e in out if s < e]


def count_words(
    text: str, special_tokens: list[str], pattern: str = GPT2_PATTERN
) -> Counter[bytes]:
    """Count the UTF-8 bytes of each pretoken; special-token text is a boundary, never counted.

    >>> count_words("a a<|s|>a", ["<|s|>"])
    Counter({b'a': 2, b' a': 1})
    """
    counts: Counter[bytes] = Counter()
    for piece, is_special in split_on_specials(text, special_tokens):
        if is_special:
            continue
        for pretoken in pretokenize(piece, pattern):
            counts[pretoken.encode("utf-8")] += 1
    return counts


def _merge_pair(tokens: tuple[bytes, ...], pair: tuple[bytes, bytes]) -> tuple[bytes, ...]:
    """Replace the occurrences of `pair` in `tokens`, left to right, non-overlapping."""
    merged: list[bytes] = []
    i = 0
    while i < len(tokens):
        if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) == pair:
            merged.append(tokens[i] + tokens[i + 1])
            i += 2
        else:
            merged.append(tokens[i])
            i += 1
    return tuple(merged)


def _check_vocab_size(vocab_size: int, special_tokens: list[str]) -> int:
    """The number of merges `vocab_size` asks for (docs/spec.md §1.4)."""
    minimum = 256 + len(special_tokens)
    if vocab_size < minimum:
        raise ValueError(
            f"vocab_size={vocab_size} is too small: the minimum is {minimum} "
            f"(256 bytes + {len(special_tokens)} special tokens)"
        )
    return vocab_size - minimum


def _merge_loop(
    words: list[tuple[tuple[bytes, ...], int]],
    merges: list[tuple[bytes, bytes]],
    num_merges: int,
    *,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    allowed: Callable[[tuple[bytes, bytes], list[tuple[bytes, bytes]]], bool] | None = None,
) -> list[tuple[bytes, bytes]]:
    """docs/spec.md §1, rules 5 and 8: merge on `words` (token sequences with counts) after
    `merges`, until there are `num_merges` in all. `allowed(pair, merges so far)`, when given,
    leaves out the pairs it rejects, as `max_token_length` does. Returns all the merges."""
    merges = list(merges)
    while len(merges) < num_merges:
        pair_counts: Counter[tuple[bytes, bytes]] = Counter()
        for tokens, count in words:
            for pair in itertools.pairwise(tokens):
                pair_counts[pair] += count
        if max_token_length is not None:
            pair_counts = Counter(
                {p: n for p, n in pair_counts.items() if len(p[0]) + len(p[1]) <= max_token_length}
            )
        if allowed is not None:
            pair_counts = Counter({p: n for p, n in pair_counts.items() if allowed(p, merges)})
        if not pair_counts:
            break
        # Highest count; ties go to the greater (bytes_a, bytes_b) tuple.
        best = max(pair_counts, key=lambda pair: (pair_counts[pair], pair))
        if pair_counts[best] < min_frequency:
            break
        merges.append(best)
        words = [(_merge_pair(tokens, best), count) for tokens, count in words]
    return merges


def _layout(
    merges: list[tuple[bytes, bytes]],
    special_tokens: list[str],
    pad_vocab_to_multiple: int | None = None,
) -> dict[int, bytes]:
    """docs/spec.md §1.6 and §1.8: bytes, merges, special tokens, then reserved tokens."""
    vocab = {i: bytes([i]) for i in range(256)}
    for i, (left, right) in enumerate(merges):
        vocab[256 + i] = left + right
    for token in special_tokens:
        vocab[len(vocab)] = token.encode("utf-8")
    i = 0
    while pad_vocab_to_multiple is not None and len(vocab) % pad_vocab_to_multiple:
        name = f"<|reserved_{i}|>"
        if name not in special_tokens:
            vocab[len(vocab)] = name.encode("utf-8")
        i += 1
    return vocab


def train_from_counts(
    word_counts: dict[bytes, int],
    vocab_size: int,
    special_tokens: list[str],
    *,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """docs/spec.md §1, rules 4-6 and 8, on a table word bytes -> count.

    Stops early, silently, when no pair is left (or none that rule 8 allows); `len(merges)` then
    tells how many were made. Reserved tokens that pad the vocabulary are in the returned vocab.

    >>> vocab, merges = train_from_counts({b"aaa": 2, b"ab": 1}, 258, [])
    >>> merges
    [(b'a', b'a'), (b'aa', b'a')]
    """
    _check_special_tokens(special_tokens)
    num_merges = _check_vocab_size(vocab_size, special_tokens)

    # Each word is kept as its current token sequence, a tuple of byte strings.
    words: list[tuple[tuple[bytes, ...], int]] = []
    for word, count in word_counts.items():
        if count < 0:
            raise ValueError(f"word {word!r} has a negative count {count}")
        if count > 0:
            words.append((tuple(bytes([b]) for b in word), count))

    merges = _merge_loop(
        words,
        [],
        num_merges,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
    )
    return _layout(merges, special_tokens, pad_vocab_to_multiple), merges


def train(
    text: str,
    vocab_size: int,
    special_tokens: list[str],
    pattern: str = GPT2_PATTERN,
    *,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train byte-level BPE on `text` (docs/spec.md §1, rule 8 options as `train_from_counts`).

    >>> vocab, merges = train("ab ab ab", 257, [], pattern=r"\\S+")
    >>> merges, vocab[256]
    ([(b'a', b'b')], b'ab')
    """
    _check_special_tokens(special_tokens)
    counts = count_words(text, special_tokens, pattern)
    return train_from_counts(
        counts,
        vocab_size,
        special_tokens,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        pad_vocab_to_multiple=pad_vocab_to_multiple,
    )


def superword_allows(
    token: bytes,
    merges: list[tuple[bytes, bytes]],
    max_words: int | None = 4,
    colon_space: bool = False,
) -> bool:
    """Whether superword training's second stage may make `token` after `merges` (docs/spec.md
    §1.9): at most `max_words` words (the non-empty parts of `token.split(b" ")`; None: any), no
    `b": "` unless `colon_space`, and not the bytes of a byte or of an earlier merge's token.

    >>> superword_allows(b" of the", [])
    True
    >>> superword_allows(b"a b c d e", []), superword_allows(b"a: b", [])
    (False, False)
    >>> superword_allows(b"ab", [(b"a", b"b")]), superword_allows(b"x", [])
    (False, False)
    """
    if max_words is not None and len([w for w in token.split(b" ") if w]) > max_words:
        return False
    if not colon_space and b": " in token:
        return False
    return len(token) != 1 and all(left + right != token for left, right in merges)


def train_superword(
    texts: str | list[str],
    vocab_size: int,
    special_tokens: list[str],
    superword_from: int,
    pattern: str = GPT2_PATTERN,
    *,
    superword_pattern: str | None = None,
    max_words: int | None = 4,
    colon_space: bool = False,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    pad_vocab_to_multiple: int | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], str]:
    """Superword training (docs/spec.md §1.9) on a text or a list of texts (each a document):
    at most `superword_from` merges as `train` makes them; then, unless that is all the merges
    asked for, the words of `superword_pattern` (GPT-2's second pattern by default after GPT-2's),
    each encoded with those merges as `encode` does, merged on under `superword_allows`. Returns
    the vocabulary, the merges and the tokenizer's pattern (the one whose words were merged last).

    >>> vocab, merges, pattern = train_superword("of the\\nof the\\n", 263, [], 2)
    >>> merges[2:], pattern == GPT2_SUPERWORD_PATTERN
    ([(b'the', b'\\n'), (b'o', b'f'), (b'of', b' '), (b'of ', b'the\\n')], True)
    >>> train_superword("of the\\nof the\\n", 263, [], 2, max_words=1)[1][5:]
    []
    """
    _check_special_tokens(special_tokens)
    num_merges = _check_vocab_size(vocab_size, special_tokens)
    if superword_from < 0:
        raise ValueError(f"superword_from must be at least 0, got {superword_from}")
    if max_words is not None and max_words < 1:
        raise ValueError(f"max_words must be at least 1, got {max_words}")
    if superword_pattern is None:
        if pattern != GPT2_PATTERN:
            raise ValueError("pass superword_pattern: the default follows GPT-2's pattern only")
        superword_pattern = GPT2_SUPERWORD_PATTERN
    documents = [texts] if isinstance(texts, str) else list(texts)

    def words_of(regex: str) -> Counter[bytes]:
        counts: Counter[bytes] = Counter()
        for text in documents:
            counts.update(count_words(text, special_tokens, regex))
        return counts

    shaping = {"min_frequency": min_frequency, "max_token_length": max_token_length}
    # Stage 1: ordinary training, for at most `superword_from` merges.
    words = [(tuple(bytes([b]) for b in word), n) for word, n in words_of(pattern).items()]
    merges = _merge_loop(words, [], min(superword_from, num_merges), **shaping)
    if superword_from >= num_merges:
        return _layout(merges, special_tokens, pad_vocab_to_multiple), merges, pattern

    # Stage 2: the second pattern's words, each encoded with the first merges, merged on.
    ranks: dict[tuple[bytes, bytes], int] = {}
    for rank, pair in enumerate(merges):
        ranks.setdefault(pair, rank)
    words = [(tuple(_bpe(word, ranks)), n) for word, n in words_of(superword_pattern).items()]

    def allowed(pair: tuple[bytes, bytes], made: list[tuple[bytes, bytes]]) -> bool:
        return superword_allows(pair[0] + pair[1], made, max_words, colon_space)

    merges = _merge_loop(words, merges, num_merges, allowed=allowed, **shaping)
    return _layout(merges, special_tokens, pad_vocab_to_multiple), merges, superword_pattern


def build_vocab_with_specials(
    vocab: dict[int, bytes], special_tokens: Iterable[str]
) -> dict[int, bytes]:
    """A copy of `vocab` where each special token missing from it gets the next free id, in order.

    >>> build_vocab_with_specials({0: b"a"}, ["<s>", "a"])
    {0: b'a', 1: b'<s>'}
    """
    extended = dict(vocab)
    known = set(extended.values())
    for token in special_tokens:
        token_bytes = token.encode("utf-8")
        if token_bytes not in known:
            extended[max(extended, default=-1) + 1] = token_bytes
            known.add(token_bytes)
    return extended


def _bpe(pretoken: bytes, ranks: dict[tuple[bytes, bytes], int]) -> list[bytes]:
    """GPT-2's original `bpe()` loop: merge every occurrence of the lowest-ranked pair, repeat."""
    tokens = tuple(bytes([b]) for b in pretoken)
    while len(tokens) > 1:
        pairs = set(itertools.pairwise(tokens))
        best = min(pairs, key=lambda pair: ranks.get(pair, float("inf")))
        if best not in ranks:
            break
        tokens = _merge_pair(tokens, best)
    return list(tokens)


def encode(
    text: str,
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    special_tokens: list[str] | None = None,
    pattern: str = GPT2_PATTERN,
) -> list[int]:
    """Encode `text` to ids (docs/spec.md §2); every special token in `special_tokens` is
    allowed.

    Where several ids share the same bytes, the lowest id is used.

    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    >>> encode("ab<s>b", vocab, [(b"a", b"b")], ["<s>"])
    [256, 257, 98]
    """
    special_tokens = list(special_tokens or [])
    _check_special_tokens(special_tokens)
    full_vocab = build_vocab_with_specials(vocab, special_tokens)
    id_of: dict[bytes, int] = {}
    for token_id in sorted(full_vocab):
        id_of.setdefault(full_vocab[token_id], token_id)
    ranks: dict[tuple[bytes, bytes], int] = {}
    for rank, pair in enumerate(merges):
        ranks.setdefault(pair, rank)

    ids: list[int] = []
    for piece, is_special in split_on_specials(text, special_tokens):
        if is_special:
            ids.append(id_of[piece.encode("utf-8")])
            continue
        for pretoken in pretokenize(piece, pattern):
            for token in _bpe(pretoken.encode("utf-8"), ranks):
                if token not in id_of:
                    raise KeyError(f"token {token!r} made by the merges is not in the vocabulary")
                ids.append(id_of[token])
    return ids


def decode(ids: Iterable[int], vocab: dict[int, bytes]) -> str:
    """Concatenate the tokens' bytes and decode UTF-8, malformed bytes becoming U+FFFD.

    >>> decode([104, 105], {104: b"h", 105: b"i"})
    'hi'
    """
    parts: list[bytes] = []
    for token_id in ids:
        if token_id not in vocab:
            raise KeyError(f"token id {token_id!r} is not in the vocabulary")
        parts.append(vocab[token_id])
    return b"".join(parts).decode("utf-8", errors="replace")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (the 188 printable bytes map to themselves).

    >>> bytes_to_unicode()[ord(" ")]
    'Ġ'
    """
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    table = {b: chr(b) for b in printable}
    n = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    return table


def unicode_to_bytes() -> dict[str, int]:
    """The inverse of `bytes_to_unicode`.

    >>> unicode_to_bytes()["Ġ"]
    32
    """
    return {char: b for b, char in bytes_to_unicode().items()}
