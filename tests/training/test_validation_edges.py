"""The validation subsample at its edges (spmlkit.training.validation): distinct rows,
ascending, inside the split, as many as it says — drawn without replacement — for the
size rule and for ``--val-rows N``, from one row to the whole split."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.training import validation as V


@pytest.mark.parametrize("n_val, want", [(40, 1), (40, 39), (40, 20), (7, 6), (1000, 999)])
def test_a_user_subsample_is_distinct_sorted_rows_of_the_split(n_val, want):
    for seed in range(3):
        v = V.validation_rows(n_val, 3, TrainConfig(method="an", val_rows=want, seed=seed))
        assert v.subsampled and v.n_scored == want
        assert np.unique(v.rows).size == want and (np.diff(v.rows) > 0).all()
        assert v.rows.min() >= 0 and v.rows.max() < n_val
    assert not V.validation_rows(n_val, 3, TrainConfig(method="an", val_rows=n_val)).subsampled


def test_the_size_rule_draws_distinct_rows(monkeypatch):
    monkeypatch.setattr(V, "VAL_ENTRIES", 200)  # 100 x 3 above it: max(200 // 3, 90) rows
    monkeypatch.setattr(V, "MIN_VAL_ROWS", 90)
    v = V.validation_rows(100, 3, TrainConfig(method="an", seed=5))
    assert v.subsampled and v.n_scored == 90
    assert v.rows is not None and np.unique(v.rows).size == v.rows.size == 90
