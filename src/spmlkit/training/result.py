"""The outcome of a training run: :class:`RunResult`, one per member (one lr and seed),
whichever trainer produced it (linear, fine-tuning, a recipe)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunResult:
    """The outcome of one member (one lr and seed) of a run."""

    method: str
    params: dict
    lr: float
    batch_size: int
    seed: int
    best_epoch: int
    val_score: float
    selection: str
    test_map: float | None
    test_ap: list | None
    train_map: float | None  # label recovery (Cole Table 2): mAP on the training set vs full labels
    epochs_run: int
    val_history: list
    seconds: float
    n_empty_test_classes: int = 0
    test_observed: dict | None = None  # observed-label metrics on a test split without full labels
    expected_positives: float | None = None  # k given to the method (config, or Eq. A1 on full labels)
    notes: dict | None = None  # a recipe's choices (spmlkit.training.recipe): members, their lr and score
    test_auc: dict | None = None  # masked per-label AUC-ROC (mean, median, per_label) when the test labels have a mask
    state: dict | None = field(default=None, repr=False)  # best-epoch head weights (+ method state)

    def to_record(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "state"}
        return d

    @classmethod
    def from_record(cls, record: dict) -> "RunResult":
        names = set(cls.__dataclass_fields__) - {"state"}
        return cls(**{k: v for k, v in record.items() if k in names})
