"""Bagged ensemble selection and its subsample at their edges (spmlkit.training.ensemble):
every resample is n rows drawn from all n validation rows (the last row too; one row),
and the selection subsample's memory bound counts the labels with a positive among the
rows, not every label."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.sparse_labels import SparseLabels
from spmlkit.training import ensemble as E


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_every_resample_draws_n_rows_from_every_validation_row(monkeypatch, n):
    rng = np.random.default_rng(n)
    Z = np.zeros((n, 2), dtype=np.int8)
    Z[np.arange(n), rng.integers(0, 2, n)] = 1
    P = rng.random((2, n, 2))
    drawn = []
    real = E.ensemble_selection

    def spy(P_, Z_, criterion, rows, steps):
        drawn.append(np.asarray(rows))
        return real(P_, Z_, criterion, rows, steps)

    monkeypatch.setattr(E, "ensemble_selection", spy)
    w = E.bagged_ensemble_selection(P, Z, rounds=30, steps=2, seed=0)
    assert len(drawn) == 30 and all(len(r) == n and r.min() >= 0 and r.max() < n for r in drawn)
    assert set(np.concatenate(drawn).tolist()) == set(range(n))  # 30 resamples: every row drawn, the last too
    assert any(len(set(r.tolist())) < n for r in drawn) or n == 1  # with replacement
    assert w.sum() == pytest.approx(1.0)


def test_the_memory_bound_counts_only_labels_with_a_positive():
    n, L, members = 50, 40, 4
    Z = SparseLabels.single(np.arange(n) % 2, L)  # positives in labels 0 and 1 only
    fits = 4 * 8 * members * n * 2  # four float64 copies of members x rows x the two labels
    assert E.selection_subsample(Z, seed=0, n_members=members, budget_bytes=fits, max_entries=10 ** 9) is None
    rows = E.selection_subsample(Z, seed=0, n_members=members, budget_bytes=fits - 1, max_entries=10 ** 9)
    assert rows is not None and len(rows) == n - 1
