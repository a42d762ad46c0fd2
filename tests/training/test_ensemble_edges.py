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


def plain_subsample(Z, seed, n_members, budget_bytes, observed, max_entries):
    """Prefix by prefix of the seeded permutation: the rows x positives (or x labels) and
    four float64 copies of members x rows x labels with a positive among them (or every
    label), counted by hand; the longest prefix within both (at least one row), None when
    the whole split is."""
    D = np.asarray(Z)
    n, L = D.shape
    perm = np.random.default_rng(seed).permutation(n)
    fits = []
    for k in range(1, n + 1):
        rows = D[perm[:k]]
        if observed:
            cost, labels = k * int((rows == 1).sum()), int((rows == 1).any(0).sum())
        else:
            cost, labels = k * L, L
        fits.append(cost <= max_entries and 4 * 8 * n_members * k * labels <= budget_bytes)
    if fits[-1]:
        return None
    size = max(1, next(k for k in range(n) if not fits[k]))
    return np.sort(perm[:size])


@pytest.mark.parametrize("seed", range(6))
def test_the_selection_subsample_equals_counting_every_prefix(seed):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        n, L = int(rng.integers(1, 25)), int(rng.integers(1, 6))
        D = (rng.random((n, L)) < rng.random() * 0.6).astype(np.int8)
        if rng.random() < 0.3:
            D[rng.random((n, L)) < 0.2] = -1  # observed negatives count for nothing
        Z = SparseLabels.from_dense(D)
        observed, members = bool(rng.random() < 0.7), int(rng.integers(1, 4))
        max_entries = int(rng.integers(0, n * max(L, int((D == 1).sum())) + 2))
        budget = int(rng.integers(0, 4 * 8 * members * n * L + 2))
        got = E.selection_subsample(Z, seed=seed, n_members=members, budget_bytes=budget, observed=observed,
                                    max_entries=max_entries)
        want = plain_subsample(D, seed, members, budget, observed, max_entries)
        assert (got is None and want is None) or np.array_equal(got, want), (got, want)
