"""bytepair: exact, fast, memory-bounded byte-level BPE (CS336 semantics) with a Rust core.
The public names only. The stages, in the order data flows: `count.py`, `train/`,
`encoding.py` (the Tokenizer), `loading.py` (its files through `formats/`), `decoding.py`,
`corpus/`, `distributed/`, `inspection/`, `cli/` (docs/development.md has the map and the layers).
"""

from ._core import UNICODE_VERSION
from ._core import __version__ as __version__
from .count import WordCounts, count_files, count_texts
from .encoding import Tokenizer
from .loading import load, save
from .patterns import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN
from .train import train, train_bpe, train_from_counts, train_from_dataset, train_from_iterator

__all__ = [
    "CL100K_PATTERN",
    "GPT2_PATTERN",
    "O200K_PATTERN",
    "UNICODE_VERSION",
    "Tokenizer",
    "WordCounts",
    "count_files",
    "count_texts",
    "encode_files",
    "load",
    "load_tokens",
    "save",
    "train",
    "train_bpe",
    "train_from_counts",
    "train_from_dataset",
    "train_from_iterator",
]


def __getattr__(name: str) -> object:
    """Token files need numpy: their functions load on first use, not on `import bytepair`."""
    if name == "encode_files":
        from .corpus.encode import encode_files

        return encode_files
    if name == "load_tokens":
        from .corpus.tokens import load_tokens

        return load_tokens
    raise AttributeError(f"module 'bytepair' has no attribute {name!r}")
