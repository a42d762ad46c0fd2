"""Cross-validation folds at their edges (spmlkit.practitioner.sdm_cv.cv_folds): random
folds follow the run's seed (the same seed the same folds, another seed others), cover
the training and validation rows, and the fold count is checked at its bounds."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.data.memory import ArrayBundle
from spmlkit.errors import ConfigError
from spmlkit.practitioner.sdm_cv import cv_folds


def _bundle(n_train=30, n_val=10, L=3):
    rng = np.random.default_rng(0)
    Z = np.zeros((n_train + n_val, L), dtype=np.int8)
    Z[np.arange(0, n_train + n_val, 2), rng.integers(0, L, (n_train + n_val + 1) // 2)] = 1  # odd rows: background
    X = rng.normal(size=(n_train + n_val, 2)).astype(np.float32)
    return ArrayBundle(X[:n_train], Z[:n_train], X_val=X[n_train:], Z_val=Z[n_train:])


@pytest.mark.parametrize("k", [3, 5])
def test_random_folds_follow_the_seed(k):
    b = _bundle()
    folds = {s: cv_folds(b, k, seed=s)[0] for s in range(4)}
    assert all(len(f) == 40 and set(f.tolist()) <= set(range(k)) for f in folds.values())
    np.testing.assert_array_equal(folds[2], cv_folds(b, k, seed=2)[0])
    assert len({f.tobytes() for f in folds.values()}) == 4  # every seed its own folds
    assert "seed 3" in cv_folds(b, k, seed=3)[1]


def test_the_fold_count_at_its_bounds():
    b = _bundle(n_train=3, n_val=1)
    assert len(cv_folds(b, 4, seed=0)[0]) == 4
    for k in (2, 5):
        with pytest.raises(ConfigError, match="at least 3 folds"):
            cv_folds(b, k)


@pytest.mark.parametrize("k", [3, 4])
def test_each_fold_tests_once_the_next_validates_and_the_rest_trains(k):
    """For fold i: test = fold i, validation = fold i+1 (wrapping around), training =
    every other row, each in its order; background rows counted on the training rows."""
    from spmlkit.practitioner.sdm_cv import _fold_bundle
    from spmlkit.sparse_labels import SparseLabels

    b = _bundle()
    X = np.concatenate([b.features("train"), b.features("val")])
    Z = SparseLabels.vstack([b.observations("train"), b.observations("val")])
    fold, _ = cv_folds(b, k, seed=1)
    Zd = np.asarray(Z.dense())
    tested = np.zeros(len(X), dtype=int)
    for i in range(k):
        d = _fold_bundle(X, Z, fold, i, k, ["a", "b", "c"])
        for split, rows in (("test", fold == i), ("val", fold == (i + 1) % k),
                            ("train", (fold != i) & (fold != (i + 1) % k))):
            np.testing.assert_array_equal(d.features(split), X[rows])
            np.testing.assert_array_equal(np.asarray(d.observations(split).dense()), Zd[rows])
        tested[fold == i] += 1
        train = (fold != i) & (fold != (i + 1) % k)
        assert d.meta["background_rows"] == int((Zd[train] == 0).all(1).sum())
    assert (tested == 1).all()
