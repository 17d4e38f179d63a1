"""Input generators for the fuzz targets: text, raw bytes, special-token lists, regexes, and
mutations of valid files. Plain `random.Random` (not hypothesis): an input is a pure function of
its seed, and a million of them cost seconds rather than hours.
"""

from __future__ import annotations

import random
import re

#: Fragments that exercise the pretokenizer: each class of the GPT-2 pattern, contractions,
#: line ends, control and format characters, scripts without spaces, and special-token look-alikes.
FRAGMENTS = [
    *"abcxyzAZ019 .,!?-_'\"\t\n",
    " ",
    "  ",
    "\r\n",
    "\r",
    "\x00",
    "\x0b",
    "\x0c",
    "'s",
    "'ll",
    "'re",
    " 's",
    "hello",
    " world",
    "1234",
    " 42",
    "é",
    "ü",
    "ß",
    "e\u0301",
    "你好",
    "世界",
    "🙃",
    "👨\u200d👩\u200d👧",
    "\u3000",
    "\u00a0",
    "\u2028",
    "\x85",
    "\ufeff",
    "٣",
    "²",
    "ไทย",
    "مرحبا",
    "Привет",
    "<|",
    "|>",
    "<|endoftext|>",
    "<pad>",
    "\U0010ffff",
]

#: Byte sequences that are not valid UTF-8: lone continuation and lead bytes, truncated
#: sequences, UTF-8-encoded surrogates, overlong forms, code points past U+10FFFF.
BAD_UTF8 = [
    b"\x80",
    b"\xbf",
    b"\xff",
    b"\xfe",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x99",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xc0\xaf",
    b"\xe0\x80\xaf",
    b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80",
]

SPECIAL_POOL = [
    "<|endoftext|>",
    "<|end",
    "<|",
    "|>",
    "<pad>",
    "<pad><pad>",
    " ",
    "\n",
    "\r\n",
    "a",
    "aa",
    "ab",
    "é",
    "🙃",
    "'s",
    " world",
    "\x00",
    "<|endoftext|>x",
]


def text(rng: random.Random, max_parts: int = 40) -> str:
    """Random text from `FRAGMENTS`, now and then with a long run of one character."""
    parts = [rng.choice(FRAGMENTS) for _ in range(rng.randrange(max_parts + 1))]
    if rng.random() < 0.1:
        run = rng.choice(["a", " ", "\n", "é", "1", "!", "你"]) * rng.randrange(1, 3000)
        parts.insert(rng.randrange(len(parts) + 1), run)
    if rng.random() < 0.1:
        parts.append("".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(20))))
    return "".join(parts)


def raw_bytes(rng: random.Random) -> bytes:
    """UTF-8 text with invalid sequences and random bytes spliced in (or not)."""
    data = bytearray(text(rng).encode("utf-8"))
    for _ in range(rng.choice([0, 0, 1, 3])):
        pos = rng.randrange(len(data) + 1)
        bad = rng.choice(BAD_UTF8) if rng.random() < 0.7 else rng.randbytes(rng.randrange(1, 4))
        data[pos:pos] = bad
    return bytes(data)


class OneShot(list):
    """Items the check hands over as a one-shot iterator (a list here, for a stable repr)."""


def special_tokens(rng: random.Random) -> list[str]:
    """A valid list of special tokens: distinct, non-empty, often overlapping one another."""
    pool = SPECIAL_POOL + [text(rng, 3) for _ in range(2)]
    tokens = [t for t in dict.fromkeys(rng.sample(pool, rng.randrange(4))) if t]
    return [t.encode("utf-8", "replace").decode("utf-8") for t in tokens]


def bad_special_tokens(rng: random.Random) -> object:
    """A special-token argument that may be invalid: wrong types, empty, repeated, surrogates."""
    tokens: list[object] = list(special_tokens(rng))
    for _ in range(rng.randrange(1, 3)):
        choice = rng.randrange(8)
        if choice == 0:
            tokens.append("")
        elif choice == 1 and tokens:
            tokens.append(rng.choice(tokens))
        elif choice == 2:
            tokens.append(rng.choice([5, None, b"<pad>", 1.5, ["<|"], ("a",)]))
        elif choice == 3:
            tokens.append(rng.choice(["\ud800", "a\udfff", "<|\ud83d|>"]))
        elif choice == 4:
            return rng.choice(["<|endoftext|>", b"<pad>", 7, {"a": 1}, None, ()])
        elif choice == 5:
            return OneShot(tokens)
        elif choice == 6:
            return {t for t in tokens if isinstance(t, str)}
    return tokens


_ATOMS = [
    "a",
    "b",
    "c",
    "aa",
    " ",
    "'",
    ".",
    r"\s",
    r"\S",
    r"\w",
    r"\W",
    r"\d",
    r"\D",
    r"\p{L}",
    r"\p{N}",
    r"\P{L}",
    r"[^\s\p{L}\p{N}]",
    "[a-z]",
    "[^a]",
    r"\b",
    "^",
    "$",
    r"\n",
    r"\x00",
    r"\u00e9",
    "é",
    "你",
    r"\1",
    "(?i)a",
    r"[\p{L}--a]",
    r"\X",
    r"\pL",
    r"[[:alpha:]]",
]
_QUANTIFIERS = ["", "", "*", "+", "?", "*?", "+?", "{2}", "{1,3}", "{0,}", "{2,1}", "{1000}"]
#: Patterns known to make backtracking engines blow up; each must end (result or error) in time.
CATASTROPHIC = [
    r"(a|aa)+(?=c)",
    r"(a+)+$",
    r"(a*)*b",
    r"(x+x+)+y",
    r"(a|a)+(?!x)",
    r"(\w+\s?)+(?=!)",
    r"(?=(a+))+b",
    r"(a|aa)+(?=c)|\S+|\s+",
    r"((a+)+)+(?<=b)",
    r"(.*)*\1x",
]


def regex(rng: random.Random, depth: int = 0) -> str:
    """A regex from a small grammar: atoms, groups, lookarounds, alternation, quantifiers."""
    parts = []
    for _ in range(rng.randrange(1, 4)):
        if depth < 3 and rng.random() < 0.3:
            inner = regex(rng, depth + 1)
            group = rng.choice(
                ["({})", "(?:{})", "(?={})", "(?!{})", "(?<={})", "(?<!{})", "(?>{})"]
            )
            atom = group.format(inner)
        else:
            atom = rng.choice(_ATOMS)
        parts.append(atom + rng.choice(_QUANTIFIERS))
    pattern = "".join(parts)
    if rng.random() < 0.3:
        pattern += "|" + regex(rng, depth + 1)
    return pattern


def any_pattern(rng: random.Random) -> str:
    """A grammar regex, a catastrophic one, raw random syntax, or a known-good one."""
    choice = rng.random()
    if choice < 0.5:
        return regex(rng)
    if choice < 0.65:
        return rng.choice(CATASTROPHIC)
    if choice < 0.9:
        alphabet = "()[]{}*+?|\\^$.-,:=!<>a1 sSpPLN&~#'"
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 15)))
    return rng.choice(["gpt2", r"\S+|\s+", r"\p{L}+|\p{N}+|[^\p{L}\p{N}]+", ".", r"\X"])


def mutate(rng: random.Random, data: bytes) -> bytes:
    """1-3 random edits of a file: bytes flipped, cut, inserted or repeated; lines swapped,
    dropped or repeated; numbers made huge or negative; a BOM, CRLF line ends, invalid UTF-8."""
    for _ in range(rng.randrange(1, 4)):
        data = rng.choice(_MUTATIONS)(rng, data)
    return data


def _flip(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]


def _cut(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + data[i + rng.randrange(1, 40) :] if rng.random() < 0.5 else data[:i]


def _insert(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    choices = [
        rng.randbytes(rng.randrange(1, 8)),
        rng.choice(BAD_UTF8),
        b" ",
        b"\n",
        b"\r",
        b"\x00",
        b'"',
        b"\\",
        b"{",
        b"[",
        b"=",
        b"-1",
        b"\xe2\x80\xa8",
        b"\xc2\x85",
    ]
    return data[:i] + rng.choice(choices) + data[i:]


def _repeat(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    j = min(len(data), i + rng.randrange(1, 200))
    return data[:j] + data[i:j] * rng.randrange(1, 4) + data[j:]


def _lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(3)
    if op == 0:
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 1:
        del lines[i]
    else:
        lines.insert(j, lines[i])
    return b"\n".join(lines)


def _number(rng: random.Random, data: bytes) -> bytes:
    numbers = list(re.finditer(rb"\d+", data))
    if not numbers:
        return data
    m = rng.choice(numbers)
    new = rng.choice(
        [
            b"0",
            b"-1",
            b"255",
            b"256",
            b"4294967296",
            b"2147483648",
            b"1e3",
            b"1.0",
            b"99999999999999999999",
            b"9" * 5000,
            b"\xd9\xa3",
            b"\xc2\xb2",
        ]
    )
    return data[: m.start()] + new + data[m.end() :]


def _whole(rng: random.Random, data: bytes) -> bytes:
    op = rng.randrange(5)
    if op == 0:
        return b"\xef\xbb\xbf" + data
    if op == 1:
        return data.replace(b"\n", b"\r\n")
    if op == 2:
        return b""
    if op == 3:
        return data.rstrip(b"\n")
    return data + rng.choice([b"\n", b"\n\n", b"x", b"#end\n"])


def _json_type(rng: random.Random, data: bytes) -> bytes:
    """Swaps a JSON value for one of another type (a GPT-2 vocab.json, a model file's strings)."""
    values = list(re.finditer(rb': ?(-?\d+)|"(?:[^"\\]|\\.)*"', data))
    if not values:
        return data
    m = rng.choice(values)
    start, end = m.span(1) if m.group(1) else m.span()
    new = rng.choice(
        [
            b"null",
            b"true",
            b"[]",
            b"{}",
            b"1.5",
            b'"x"',
            b"[" * 5000,
            b'"\\ud800"',
            b'": 1, "',
            b"-0",
            b"1e400",
            b'"\\u0000"',
        ]
    )
    return data[:start] + new + data[end:]


_MUTATIONS = [_flip, _cut, _insert, _repeat, _lines, _number, _whole, _json_type]
