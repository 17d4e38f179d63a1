"""bytepair: exact, fast, memory-bounded byte-level BPE (CS336 semantics) with a Rust core."""

from ._core import UNICODE_VERSION
from .encoding import Tokenizer
from .formats import load, save
from .patterns import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN
from .pretokenize import WordCounts, count_files, count_texts
from .train import train, train_bpe, train_from_counts, train_from_iterator

__all__ = [
    "CL100K_PATTERN",
    "GPT2_PATTERN",
    "O200K_PATTERN",
    "UNICODE_VERSION",
    "Tokenizer",
    "WordCounts",
    "count_files",
    "count_texts",
    "load",
    "save",
    "train",
    "train_bpe",
    "train_from_counts",
    "train_from_iterator",
]
__version__ = "0.1.0"
