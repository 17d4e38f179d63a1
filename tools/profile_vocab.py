"""Writes the vocabulary file that `rust/examples/encode_profile.rs` reads, so that the encoder
can be timed and profiled without Python on any encoding: a named one (gpt2, cl100k, o200k,
read from tiktoken's files) or a saved tokenizer folder. The pattern goes with it.

    python tools/profile_vocab.py o200k -o /tmp/o200k.bin
    cd rust && cargo run --profile profiling --example encode_profile -- /tmp/o200k.bin TEXT cold
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import bytepair


def pack(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tokenizer", help="gpt2, cl100k or o200k, or a saved tokenizer's folder")
    ap.add_argument("-o", "--output", required=True, type=Path)
    args = ap.parse_args(argv)
    tok = bytepair.load(args.tokenizer)
    specials = set(tok.special_tokens.values())  # the profile encodes ordinary text
    vocab = [(i, t) for i, t in sorted(tok.vocab.items()) if i not in specials]
    parts = [struct.pack("<I", len(vocab))]
    parts += [struct.pack("<I", i) + pack(t) for i, t in vocab]
    parts.append(struct.pack("<I", len(tok.merges)))
    parts += [pack(a) + pack(b) for a, b in tok.merges]
    parts.append(pack(tok.pattern.encode("utf-8")))
    tmp = args.output.with_name(args.output.name + ".tmp")
    tmp.write_bytes(b"".join(parts))
    tmp.replace(args.output)
    print(f"{args.output}: {len(vocab)} tokens, {len(tok.merges)} merges", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
