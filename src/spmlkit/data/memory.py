"""A bundle held in memory: the part of :class:`~spmlkit.data.Bundle` that training reads.

:func:`spmlkit.training.train_linear` reads a bundle only through ``features``,
``labels``, ``observations``, ``size``, ``n_labels``, ``label_names`` and
``has_full_labels``.  :class:`ArrayBundle` provides exactly these over numpy arrays,
so the scikit-learn estimator (:class:`spmlkit.SPMLClassifier`) trains with the very
same code as ``spml train`` without writing anything to disk.

Training labels are always observations ``Z`` (``has_full_labels`` is False and the
regime is ``"observed"``, like a bundle prepared with ``--observed``).  Validation may
have full labels ``Y_val`` (then model selection uses mAP) or observations ``Z_val``;
a missing validation or test split has size 0.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError, SpmlError
from ..labels import as_full_labels, as_observations, full_observations
from ..sparse_labels import as_sparse
from .bundle import OBSERVED_ONLY, SPLITS


class ArrayBundle:
    def __init__(self, X_train, Z_train, *, X_val=None, Z_val=None, Y_val=None, X_test=None, Z_test=None,
                 Y_test=None, label_names=None, name: str = "arrays", feature_names=None):
        Z_train = as_sparse(as_observations(Z_train, source="training observations"), dtype=np.int8)
        self._X = {"train": np.asarray(X_train, dtype=np.float32)}
        self._Y: dict = {"train": None}
        self._Z: dict = {"train": Z_train}
        for split, X, Z, Y in (("val", X_val, Z_val, Y_val), ("test", X_test, Z_test, Y_test)):
            if X is None:
                continue
            self._X[split] = np.asarray(X, dtype=np.float32)
            # stored sparse, as a prepared bundle's (the trainers read every BundleLike the same way)
            self._Y[split] = None if Y is None else as_sparse(as_full_labels(Y, source=f"{split} labels"), dtype=bool)
            self._Z[split] = None if Z is None else as_sparse(as_observations(Z, source=f"{split} observations"),
                                                              dtype=np.int8)
            if Y is None and Z is None:
                raise ConfigError(f"{split} features given without labels or observations")
        L = Z_train.shape[1]
        for split, X in self._X.items():
            lab = self._Y.get(split) if self._Y.get(split) is not None else self._Z.get(split)
            if len(lab) != len(X) or lab.shape[1] != L:
                raise ConfigError(f"{split}: {len(X)} inputs but labels of shape {lab.shape} (expected (N, {L}))")
        self.label_names = list(label_names) if label_names is not None else [str(i) for i in range(L)]
        self.name = name
        self.path = None
        self.kind = "features"
        self.regime = OBSERVED_ONLY
        self.has_full_labels = False
        self.meta = {"name": name, "kind": "features", "label_names": self.label_names, "has_full_labels": False,
                     "regime": OBSERVED_ONLY, "feature_names": feature_names,
                     "sizes": {s: self.size(s) for s in SPLITS}}

    @property
    def n_labels(self) -> int:
        return len(self.label_names)

    def size(self, split: str) -> int:
        return len(self._X[split]) if split in self._X else 0

    def feature_sets(self) -> list[str]:
        return []

    def features(self, split: str, feature_set: str | None = None, *, mmap: bool = True) -> np.ndarray:
        if feature_set is not None:
            raise ConfigError("in-memory data has no named feature sets")
        if split not in self._X:
            raise SpmlError(f"no {split} split")
        return self._X[split]

    def labels(self, split: str):
        return self._Y.get(split)

    def selection_observations(self, split: str = "val", regime: str | None = None) -> np.ndarray:
        """The user's observations of ``split`` (their full labels as observations when they
        gave full labels): in-memory data is never re-observed (``regime`` is not used)."""
        return self.observations(split)

    def observations(self, split: str = "train", regime: str | None = None) -> np.ndarray:
        if split == "train":
            if regime not in (None, OBSERVED_ONLY):
                raise SpmlError(f"in-memory observations cannot be re-observed under regime {regime!r}")
            return self._Z["train"]
        if self._Z.get(split) is not None:
            return self._Z[split]
        if self._Y.get(split) is not None:
            return full_observations(self._Y[split])
        raise SpmlError(f"no {split} split")
