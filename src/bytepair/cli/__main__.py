"""`python -m bytepair.cli`: the `bytepair` command run by the interpreter (tests and
environments without the console script use it); the command itself is `main.py`'s.
"""

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main())
