"""Fuzz targets for every reader of untrusted input, and the harness that runs them.

Each target generates one input from a seeded `random.Random` (so input `i` of seed `s` can be
rebuilt anywhere) and checks the contract of docs/spec.md §4: a valid result, or a documented
exception whose message says what is wrong and where. The harness runs inputs in a child process, so
an abort, a segfault or a hang is caught and reported with the input that caused it.

    python tools/fuzz.py --target all --examples 10000      # `--help` for the options
"""
