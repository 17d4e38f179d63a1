"""Pattern presets: bytepair's training, counting (training's pretokenize + count stage) and
encoding speed with each preset (gpt2, cl100k, o200k), and each one's time relative to gpt2's.
bytepair only.

Stage by stage, `--reps` rounds each, presets interleaved so that load drifts hit all alike, the
fastest round of each kept: `train` on the corpus (`--vocab-size`, `<|endoftext|>`), `count_file`
of the corpus, and `encode_to_numpy` of its first `--mb` MB (one string, caches warm) with the
trained tokenizer.

  python benchmarks/presets.py [--corpus small.txt] [--mb 20] [--reps 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CORPUS_DIR, EOT, MB, Timer, bytepair_import_error, describe_env, print_table

PRESETS = ["gpt2", "cl100k", "o200k"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(CORPUS_DIR / "small.txt"))
    ap.add_argument("--mb", type=float, default=25.0, help="MB of the corpus to encode")
    ap.add_argument("--vocab-size", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--presets", default=",".join(PRESETS))
    args = ap.parse_args()
    if err := bytepair_import_error():
        print(f"cannot import bytepair: {err}", file=sys.stderr)
        return 1
    import bytepair
    from bytepair import _core
    from bytepair.patterns import PRESETS as PATTERNS

    presets = args.presets.split(",")
    print(describe_env())
    size = os.path.getsize(args.corpus)
    with open(args.corpus, "rb") as f:
        text = f.read(int(args.mb * MB)).decode("utf-8", "ignore")  # a cut character dropped
    n_text = len(text.encode("utf-8"))
    print(
        f"corpus {args.corpus} ({size / MB:.1f} MB), encoding its first {n_text / MB:.1f} MB, "
        f"vocab {args.vocab_size:,}, {args.threads} thread(s), best of {args.reps}"
    )

    def train(p: str) -> None:
        toks[p] = bytepair.train(
            args.corpus, args.vocab_size, [EOT], pattern=p, num_threads=args.threads, progress=False
        )

    def count(p: str) -> None:
        _core.count_file(
            _core.WordCounts(),
            args.corpus,
            start=0,
            end=size,
            special_tokens=[EOT],
            pattern=PATTERNS[p],
            strict=False,
            chunk_size=4 << 20,
            num_threads=args.threads,
        )

    print(", ".join(f"{p}: {_core.pretokenizer_kind(PATTERNS[p])} pretokenizer" for p in presets))
    toks: dict[str, bytepair.Tokenizer] = {}
    stages = {"train": train, "count": count, "encode": lambda p: toks[p].encode_to_numpy(text)}
    best = {(p, stage): float("inf") for p in presets for stage in stages}
    others = []
    for stage, run in stages.items():
        for _ in range(args.reps):
            for p in presets:
                with Timer() as t:
                    run(p)
                best[p, stage] = min(best[p, stage], t.s)
                others.append(t.others_pct)
        if stage == "train":
            for tok in toks.values():
                tok.encode_to_numpy(text)  # warms the encoders' caches
    rows = []
    for p in presets:
        row = [p]
        for stage, n_bytes in (("train", size), ("count", size), ("encode", n_text)):
            base = best.get(("gpt2", stage))
            row += [n_bytes / MB / best[p, stage], best[p, stage] / base if base else None]
        rows.append(row)
    print_table(
        [
            "preset",
            "train MB/s",
            "time/gpt2",
            "count MB/s",
            "time/gpt2",
            "encode MB/s",
            "time/gpt2",
        ],
        rows,
    )
    print(
        f"others' CPU during the runs: median {sorted(others)[len(others) // 2]:.0f} %, "
        f"max {max(others):.0f} % (above ~5 %, distrust the figures)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
