"""The defining property of permutation importance (practitioner/explain.py): a covariate
is permuted as a whole — a categorical covariate's one-hot columns move together, with
one permutation of the rows, so every permuted row is still one-hot with the level of
some other row, and the other covariates' columns are untouched.  Checked on every
matrix the model is asked to score, not through a seeded number."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.practitioner.explain import permutation_importance

GROUPS = [("rain", [0]), ("soil", [1, 2, 3]), ("temp", [4])]


class _Encoding:
    def groups(self):
        return list(GROUPS)


class _RecordingModel:
    """Scores ``X @ w`` and keeps every matrix it is given."""

    label_names = ["a", "b"]
    encoding = _Encoding()

    def __init__(self):
        self.seen: list[np.ndarray] = []

    def predict_proba(self, X):
        X = np.asarray(X, dtype=np.float64)
        self.seen.append(X.copy())
        logit = X @ np.array([[0.3, -0.2], [1.0, -1.0], [0.0, 0.5], [-1.0, 1.0], [0.7, 0.1]])
        return 1 / (1 + np.exp(-logit))


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    soil = np.eye(3)[rng.integers(0, 3, n)]
    X = np.c_[rng.normal(size=n), soil, rng.normal(size=n)]
    pos = np.c_[X[:, 1] > 0, X[:, 3] > 0]
    return X, pos, ~pos


@pytest.mark.parametrize("seed", [0, 1])
def test_a_categorical_covariate_is_permuted_as_one_one_hot_block(seed):
    X, pos, neg = _data(seed=seed)
    model = _RecordingModel()
    rows = permutation_importance(model, X, pos, neg, repeats=3, seed=seed)
    assert len(rows) == len(GROUPS) * 2
    base, *permuted = model.seen
    assert np.array_equal(base, X)
    assert len(permuted) == 3 * len(GROUPS)
    moved = {c: 0 for c, _ in GROUPS}
    for i, Xp in enumerate(permuted):
        c, cols = GROUPS[i // 3]
        others = [j for j in range(X.shape[1]) if j not in cols]
        assert np.array_equal(Xp[:, others], X[:, others]), c  # only the covariate's own columns move
        block, orig = Xp[:, cols], X[:, cols]
        if len(cols) > 1:
            assert set(block.sum(1).tolist()) == {1.0}, "a permuted row is no longer one-hot"
            assert np.array_equal(np.sort(block.argmax(1)), np.sort(orig.argmax(1)))  # each level kept as often
        else:
            assert np.array_equal(np.sort(block[:, 0]), np.sort(orig[:, 0]))  # a permutation of the column
        moved[c] += int((block != orig).any())
    assert all(v > 0 for v in moved.values())  # every covariate is really permuted
