"""Runs bytepair's fuzz targets (tests/fuzz/): each reader of untrusted input gets generated
inputs in child processes; crashes, hangs and contract violations are printed with the input
and the command that reproduces them. Exit status 1 if anything was found.

    python tools/fuzz.py --target all --examples 20000 --jobs 2
    python tools/fuzz.py --target model_file --seed 3 --start 1234 --examples 1   # one input
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz import harness


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        target, seed, start, end, memory_mb = argv[1], *map(int, argv[2:6])
        harness.work(target, seed, start, end, memory_mb, argv[6])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--target",
        action="append",
        required=True,
        help=f"one of {', '.join(harness.PUBLIC)}, or all (repeatable)",
    )
    parser.add_argument("--examples", type=int, default=1000, help="inputs per target")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="index of the first input")
    parser.add_argument("--jobs", type=int, default=1, help="child processes per target")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per input")
    parser.add_argument("--memory-mb", type=int, default=4096, help="address-space limit")
    parser.add_argument("--save", type=Path, help="also write each finding to a file here")
    args = parser.parse_args(argv)
    targets = harness.PUBLIC if "all" in args.target else args.target
    unknown = set(targets) - set(harness.TARGETS)
    if unknown:
        parser.error(f"unknown target(s) {sorted(unknown)}; choose from {harness.PUBLIC}")
    n_found = 0
    for name in targets:
        result = harness.run(
            name,
            args.examples,
            seed=args.seed,
            start=args.start,
            jobs=args.jobs,
            timeout=args.timeout,
            memory_mb=args.memory_mb,
            progress=True,
        )
        outcomes = ", ".join(f"{k} {v:,}" for k, v in result.outcomes.most_common())
        print(
            f"{name}: {result.n_inputs:,} inputs in {result.seconds:.0f} s "
            f"(seed {args.seed}, from {args.start}); {outcomes}; "
            f"{len(result.findings)} findings",
            flush=True,
        )
        for finding in result.findings:
            text = finding.report()
            print(text, flush=True)
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                out = args.save / f"{name}-{finding.seed}-{finding.index}-{finding.kind}.txt"
                out.write_text(text, encoding="utf-8")
        n_found += len(result.findings)
    return 1 if n_found else 0


if __name__ == "__main__":
    sys.exit(main())
