"""Measure where bytepair's Unicode classes differ from HF tokenizers' (Oniguruma) and from the
Python `regex` package, and fuzz GPT-2's ids against tiktoken and HF tokenizers; the figures of
docs/unicode.md come from here. Not a test: HF's figures are a measurement to report.

    .venv/bin/python tools/unicode_parity.py [N_FUZZ_STRINGS]
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import tiktoken
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import test_unicode

import unicode_diff
from testdata import CS336 as CS336_DATA
from testdata import fill_tiktoken_cache

CONTEXTS = [("L", "a{c}b"), ("N", " {c}1"), ("S", "{c}\n")]


def hf_classes() -> bytes:
    """HF's ByteLevel pre-tokenizer (GPT-2's pattern on Oniguruma): each code point's class,
    read off its pretokens in the contexts that tell the classes apart."""
    pretok = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True).pre_tokenize_str
    out = bytearray(0x110000)
    for c in unicode_diff.ALL_CHARS:
        for code, (_, context) in enumerate(CONTEXTS, 1):
            if len(pretok(context.format(c=c))) == 1:
                out[ord(c)] = code
                break
    return bytes(out)


def hf_gpt2() -> Tokenizer:
    vocab = json.loads((CS336_DATA / "gpt2_vocab.json").read_text(encoding="utf-8"))
    lines = (CS336_DATA / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
    merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    return tok


def summary(name: str, ranges: list[tuple[int, int, str, str]]) -> None:
    n = sum(last - first + 1 for first, last, *_ in ranges)
    kinds: dict[tuple[str, str], int] = {}
    for first, last, theirs, ours in ranges:
        kinds[theirs, ours] = kinds.get((theirs, ours), 0) + last - first + 1
    print(f"{name}: {n:,} code points in {len(ranges)} ranges; (theirs, bytepair): {kinds}")
    for first, last, theirs, ours in ranges[:80]:
        print(f"  {first:04X}..{last:04X} {theirs} -> {ours}")


def fuzz(n: int) -> None:
    os.environ["TIKTOKEN_CACHE_DIR"] = cache = tempfile.mkdtemp(prefix="bytepair-tiktoken-")
    fill_tiktoken_cache(Path(cache))
    enc = tiktoken.get_encoding("gpt2")
    ours = test_unicode._gpt2_tokenizers(CS336_DATA)[0]
    hf = hf_gpt2()
    counts = {"tiktoken": 0, "hf": 0}
    examples: dict[str, list[str]] = {"tiktoken": [], "hf": []}
    start = time.perf_counter()
    for seed in range(0, n, 100_000):
        texts = test_unicode.random_strings(seed, min(100_000, n - seed))
        got = ours.encode_ordinary_batch(texts, num_threads=2)
        expected = {
            "tiktoken": enc.encode_ordinary_batch(texts, num_threads=2),
            "hf": [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)],
        }
        for name, ids in expected.items():
            for text, a, b in zip(texts, got, ids, strict=True):
                if a != b:
                    counts[name] += 1
                    if len(examples[name]) < 5:
                        examples[name].append(text)
    print(f"fuzz: {n:,} strings in {time.perf_counter() - start:.0f} s; differing: {counts}")
    print(f"  examples: {examples}")


if __name__ == "__main__":
    ours = unicode_diff.bytepair_classes()
    summary("Python regex", unicode_diff.diff_ranges(ours, unicode_diff.regex_classes()))
    summary("HF tokenizers", unicode_diff.diff_ranges(ours, hf_classes()))
    fuzz(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
