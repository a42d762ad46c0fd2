"""What the trainers need from data: the :class:`BundleLike` protocol.

Three classes provide it — :class:`spmlkit.data.Bundle` (a prepared folder),
:class:`spmlkit.data.memory.ArrayBundle` (``SPMLClassifier``'s in-memory arrays) and
the bench's ``TrainSubset`` (a bundle whose training split is a subsample) — and the
linear trainers (:func:`spmlkit.training.train_linear` and the ``auto`` recipe) use
nothing else, so a new data source that implements these members trains with every
method of the linear setting.  Fine-tuning also reads image paths (``paths(split)``).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class BundleLike(Protocol):
    """Splits ``train`` / ``val`` / ``test`` of features and labels or observations."""

    name: str
    kind: str  # "features" or "images"
    has_full_labels: bool
    label_names: list

    @property
    def n_labels(self) -> int: ...

    def size(self, split: str) -> int:
        """Rows of ``split`` (0 when the data has no such split)."""

    def features(self, split: str, feature_set: str | None = None, *, mmap: bool = True) -> np.ndarray:
        """``(N, D)`` float features of ``split`` (``feature_set``: a cached backbone's)."""

    def labels(self, split: str) -> np.ndarray | None:
        """``(N, L)`` full labels of ``split``, or None when only observations exist."""

    def observations(self, split: str = "train", regime: str | None = None) -> np.ndarray:
        """``(N, L)`` int8 observations in {−1, 0, +1}; for ``train`` under ``regime``."""

    def selection_observations(self, split: str = "val", regime: str = "single_positive") -> np.ndarray:
        """What a user would have to select models with, without full labels
        (:meth:`spmlkit.data.Bundle.selection_observations`)."""
