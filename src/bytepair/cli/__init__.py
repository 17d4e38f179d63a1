"""The `bytepair` command (`main`): one module per command group, `main.py` the entry point. The
console script `bytepair` and `python -m bytepair.cli` both run `main`.
"""

from .main import main

__all__ = ["main"]
