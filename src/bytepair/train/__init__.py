"""Training, one package that imports downward only: `api.py` (the public functions) runs the
stages (`stages.py`: the merge loop, superword training's two stages, the report) on a run's
`Plan` (`plan.py`: where it starts, how ids are laid out), whose options are `shaping.py`'s and
`superword.py`'s; `sizes.py` cuts a smaller tokenizer from a result (`--save-at`). Counting is
`count.py`'s, below this package.
"""

from .api import (
    ContinueFrom,
    train,
    train_bpe,
    train_from_counts,
    train_from_counts_with_report,
    train_from_dataset,
    train_from_iterator,
    train_with_report,
)
from .plan import MAX_VOCAB_SIZE
from .stages import TrainReport, after_counting, merge_stage

__all__ = [
    "MAX_VOCAB_SIZE",
    "ContinueFrom",
    "TrainReport",
    "after_counting",
    "merge_stage",
    "train",
    "train_bpe",
    "train_from_counts",
    "train_from_counts_with_report",
    "train_from_dataset",
    "train_from_iterator",
    "train_with_report",
]
