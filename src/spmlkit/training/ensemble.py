"""Choosing and weighing the members of a recipe from **observed** validation labels only.

A recipe (:mod:`spmlkit.training.recipe`) has, for every member ``m``, its validation
probabilities ``P_m`` (``N × L``) and the validation split's observations ``Z`` (single
positives: ``+1`` observed, everything else unknown).  The rules here turn those into
member weights ``w`` (``w_m ≥ 0``, ``Σ w_m = 1``); the recipe predicts
``p̂(x) = Σ_m w_m σ(f_m(x))``.  Nothing here takes a full label: a criterion is a function
``criterion(Z_rows, P_rows) -> float`` (higher is better) of observations and scores,
e.g. the observed-label mAP (:func:`spmlkit.metrics.observed_positive_map`) or, on
presence-only data, the target-group AUC (:func:`spmlkit.metrics.presence_target_group_auc`).

:func:`bagged_ensemble_selection` is ensemble selection (Caruana et al. 2004, "Ensemble
selection from libraries of models", ICML: greedy forward selection with replacement,
started from the best model; the ensemble method of auto-sklearn, Feurer et al. 2015)
**bagged** over bootstrap resamples of the validation rows (Caruana et al. 2006, "Getting
the most out of ensemble selection", ICDM: averaging the selections made on resamples is
what stops the greedy search over-fitting a small hill-climbing set).  On a large
validation split the resamples agree and the weights concentrate on what is clearly best;
on a small one they disagree and spread over the members that win some resamples.

A member whose validation scores are not all finite (a failed or diverged run), or whose
criterion is not finite, gets weight 0 under every rule and never wins.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..errors import ConfigError
from ..sparse_labels import as_sparse

Criterion = Callable[[np.ndarray, np.ndarray], float]

#: Caruana et al. 2006 bag the library; we bag the validation rows: resamples per choice
DEFAULT_ROUNDS = 20
#: greedy steps per resample (with replacement): weights in multiples of 1 / (rounds · steps)
DEFAULT_STEPS = 10


def column_average_precision(Y, S) -> np.ndarray:
    """Per-column average precision of scores ``S`` against binary ``Y`` (both ``N × L``),
    all columns at once (no loop over labels): the same quantity as
    :func:`spmlkit.metrics.average_precision` (precision at the end of each positive's tie
    group, averaged over the positives; ``nan`` for a column without positives), which
    the recipe's greedy search evaluates thousands of times.

    >>> column_average_precision([[1, 1], [0, 0], [1, 0]], [[0.9, 0.5], [0.9, 0.5], [0.1, 0.2]]).round(4).tolist()
    [0.5833, 0.5]
    """
    Y = np.asarray(Y) == 1
    S = np.asarray(S, dtype=np.float64)
    n, L = S.shape
    if n == 0:
        return np.full(L, np.nan)
    order = np.argsort(-S, axis=0, kind="stable")
    s = np.take_along_axis(S, order, 0)
    y = np.take_along_axis(Y, order, 0)
    tp = np.cumsum(y, 0)
    last = np.ones((n, L), bool)
    last[:-1] = s[:-1] != s[1:]  # the last row of its tie group
    rows = np.arange(n)[:, None]
    end = np.where(last, rows, n)
    end = np.minimum.accumulate(end[::-1], 0)[::-1]  # the end of each row's tie group
    prec = np.take_along_axis(tp, end, 0) / (end + 1.0)
    npos = y.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(npos > 0, (prec * y).sum(0) / npos, np.nan)


def observed_map(Z, P) -> float:
    """The observed-label mAP ×100 (observed positives against everything else; labels
    without an observed positive left out): :func:`spmlkit.metrics.observed_positive_map`
    computed by :func:`column_average_precision`."""
    ap = column_average_precision(np.asarray(Z) == 1, P)
    return float(np.nanmean(ap) * 100) if np.isfinite(ap).any() else math.nan


def _observed_maps(Z, P) -> np.ndarray:
    """:func:`observed_map` of each of the ``C`` score matrices ``P`` (``C × N × L``) at once
    (``-inf`` where it is not finite)."""
    obs = np.asarray(Z) == 1
    rows, cols = np.nonzero(obs)
    labels = np.unique(cols)
    St = np.ascontiguousarray(np.asarray(P)[:, :, labels].transpose(0, 2, 1))
    return _observed_maps_at(rows, np.searchsorted(labels, cols), St, labels, obs.shape[1])


#: score entries gathered at a time when counting the rows above each positive
_GATHER_ENTRIES = 2 ** 22


def _observed_maps_at(rows, cidx, S, labels, n_labels: int) -> np.ndarray:
    """:func:`_observed_maps` from the observed positives alone: ``S`` (``C × Lc × N``, one
    contiguous row per label) are the scores of the ``Lc`` columns ``labels`` that hold a
    positive, positive ``e`` sits at
    row ``rows[e]`` of column ``cidx[e]`` (an index into ``labels``).  For each positive,
    the rows and the positives of its column scoring at least as high give the precision at
    the end of its tie group — what :func:`column_average_precision` reads off a sort of
    every column — so a call costs ``C × N × E`` comparisons (``E`` positives) instead of
    sorting ``C × N × L`` entries.  Bit for bit the same numbers: each column's precisions
    are summed in the order of the sort (descending score) from zero, and the columns'
    mean is taken over all ``n_labels`` with the same NaN rule."""
    C, Lc, n = S.shape
    E = rows.size
    if E == 0:
        return np.full(C, -np.inf)
    if C * n_labels == 1:  # (one sorted column: numpy sums it pairwise, zeros included, as the sort does)
        ap = column_average_precision(np.isin(np.arange(n), rows)[:, None], S[0].T)
        return np.where(np.isfinite(ap), ap * 100, -np.inf)
    s = S[:, cidx, rows]  # (C, E) each positive's own score
    n_ge = np.empty((C, E), dtype=np.int64)  # rows of its column scoring >= it
    step = max(1, _GATHER_ENTRIES // max(C * n, 1))
    for a in range(0, E, step):
        b = slice(a, a + step)
        n_ge[:, b] = (S[:, cidx[b]] >= s[:, b, None]).sum(2)
    npos = np.bincount(cidx, minlength=Lc)
    ap = np.full((C, n_labels), np.nan)
    idx = np.arange(E)
    for c in range(C):
        order = np.lexsort((-s[c], cidx))  # by column, then descending score
        col, sc = cidx[order], s[c][order]
        start = np.searchsorted(col, col, side="left")  # the first position of each one's column
        last = np.ones(E, bool)
        last[:-1] = (col[:-1] != col[1:]) | (sc[:-1] != sc[1:])  # the last of its tie group
        end = np.minimum.accumulate(np.where(last, idx, E)[::-1])[::-1]
        prec = (end - start + 1) / (n_ge[c][order] + 0.0)  # positives above / rows above
        # row k: the k-th positive of each column by score; summed row by row (numpy sums a
        # reduced axis of two or more columns in order; one column pairwise: a spare column)
        table = np.zeros((int(npos.max()), Lc + 1))
        table[idx - start, col] = prec
        with np.errstate(invalid="ignore", divide="ignore"):
            ap[c, labels] = table.sum(0)[:Lc] / npos
    with np.errstate(invalid="ignore"):
        out = np.nanmean(np.where(np.isfinite(ap), ap, np.nan), 1) * 100 if np.isfinite(ap).any() else \
            np.full(C, np.nan)
    return np.where(np.isfinite(out), out, -np.inf)


def _finite(v) -> float:
    v = float(v)
    return v if math.isfinite(v) else -math.inf


def _checked(P, Z) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    P = np.asarray(P, dtype=np.float64)
    Z = np.asarray(Z)
    if P.ndim != 3 or P.shape[1:] != Z.shape:
        raise ConfigError(f"member scores must be (members, rows, labels) matching the observations {Z.shape}, "
                          f"got {P.shape}")
    ok = np.isfinite(P.reshape(P.shape[0], -1)).all(1) if P.shape[1] else np.ones(P.shape[0], bool)
    if not ok.any():
        raise ConfigError("no member of the recipe has finite validation scores (every member failed)")
    return P, Z, ok


def member_scores(P, Z, criterion: Criterion = observed_map, rows=None) -> np.ndarray:
    """``(M,)`` criterion of each member on the validation ``rows`` (all: None); ``-inf``
    for a member with non-finite scores or criterion."""
    P, Z, ok = _checked(P, Z)
    r = slice(None) if rows is None else rows
    return np.array([_finite(criterion(Z[r], P[m][r])) if ok[m] else -math.inf for m in range(len(P))])


def _one_hot(i: int, M: int) -> np.ndarray:
    w = np.zeros(M)
    w[i] = 1.0
    return w


def select_best(P, Z, criterion: Criterion = observed_map) -> np.ndarray:
    """One-hot weights on the member with the best criterion (the first on a tie)."""
    s = member_scores(P, Z, criterion)
    if not np.isfinite(s).any():
        raise ConfigError("no member of the recipe has a finite validation score")
    return _one_hot(int(np.argmax(s)), len(s))


def uniform(P, Z, criterion: Criterion = observed_map) -> np.ndarray:
    """Equal weights on every member with finite scores and criterion."""
    s = member_scores(P, Z, criterion)
    ok = np.isfinite(s)
    if not ok.any():
        raise ConfigError("no member of the recipe has a finite validation score")
    return ok / ok.sum()


def ensemble_selection(P, Z, criterion: Criterion = observed_map, rows=None,
                       steps: int = DEFAULT_STEPS) -> np.ndarray:
    """Caruana et al. 2004 on the validation ``rows``: start from the best member, then
    ``steps − 1`` times add (with replacement) the member whose addition gives the mean
    probability the best criterion; returns the counts / ``steps``."""
    P, Z, ok = _checked(P, Z)
    r = np.arange(P.shape[1]) if rows is None else np.asarray(rows)
    Pr, Zr = P[:, r], Z[r]
    s = member_scores(Pr, Zr, criterion)
    if not np.isfinite(s).any():
        raise ConfigError("no member of the recipe has a finite validation score")
    cand = np.flatnonzero(np.isfinite(s))
    counts = np.zeros(len(P))
    first = int(np.argmax(s))
    counts[first] = 1
    if criterion is observed_map:  # every candidate in one call, on the labels with a positive (the same numbers)
        pos_rows, pos_cols = np.nonzero(np.asarray(Zr) == 1)
        labels = np.unique(pos_cols)
        pos_cidx = np.searchsorted(labels, pos_cols)
        Pr = np.ascontiguousarray(Pr[:, :, labels].transpose(0, 2, 1))  # (members, labels, rows)
    total = Pr[first].copy()
    for k in range(1, steps):
        if criterion is observed_map:
            gains = _observed_maps_at(pos_rows, pos_cidx, (total[None] + Pr[cand]) / (k + 1), labels, Zr.shape[1])
        else:
            gains = [_finite(criterion(Zr, (total + Pr[m]) / (k + 1))) for m in cand]
        m = int(cand[int(np.argmax(gains))])
        counts[m] += 1
        total += Pr[m]
    return counts / counts.sum()


def bagged_ensemble_selection(P, Z, criterion: Criterion = observed_map, *, rounds: int = DEFAULT_ROUNDS,
                              steps: int = DEFAULT_STEPS, seed: int = 0) -> np.ndarray:
    """Member weights: the mean over ``rounds`` bootstrap resamples of the validation rows
    (drawn with replacement, seeded by ``seed``) of :func:`ensemble_selection` on that
    resample (Caruana et al. 2006)."""
    P, Z, ok = _checked(P, Z)
    rng = np.random.default_rng(seed)
    n = P.shape[1]
    return np.mean([ensemble_selection(P, Z, criterion, rng.integers(0, n, n), steps) for _ in range(rounds)],
                   axis=0)


#: the most ``rows × positives`` (observed-label criterion; ``rows × labels`` for any
#: other) that ensemble selection weighs on: every greedy step of every resample compares
#: each candidate's scores of that many entries (:func:`_observed_maps_at`), so this bounds
#: its time; a larger validation split is weighed on a seeded subsample of its rows
SELECTION_ENTRIES = 2 ** 22


def selection_subsample(Z, *, seed: int, n_members: int, budget_bytes: int, observed: bool = True,
                        max_entries: int = SELECTION_ENTRIES) -> np.ndarray | None:
    """The validation rows the members are weighed on: None (every row) when the whole
    split is within ``max_entries`` (rows × observed positives, or rows × labels when
    ``observed`` is False) and its members' float64 scores (four copies of ``n_members`` ×
    rows × labels with a positive) fit ``budget_bytes``; else the longest prefix of a
    permutation seeded by ``seed`` that is, sorted — fixed rows, the same for every call
    with the same seed (at least one row).  ``Z``: the validation observations (sparse)."""
    Z = as_sparse(Z, dtype=np.int8)
    n, L = Z.shape
    perm = np.random.default_rng(seed).permutation(n)
    k = np.arange(1, n + 1, dtype=np.float64)  # prefix lengths
    if observed:
        is_pos = Z.listed_values == 1
        rank = np.empty(n, dtype=np.int64)
        rank[perm] = np.arange(n)
        at = rank[Z.row_of_entries()[is_pos]]  # each positive's place in the permutation
        positives = np.cumsum(np.bincount(at, minlength=n))
        first = np.full(L, n)
        np.minimum.at(first, Z.indices[is_pos], at)
        labels = np.cumsum(np.bincount(first[first < n], minlength=n))
        cost, mem = k * positives, 4 * 8 * n_members * k * labels
    else:
        cost, mem = k * L, 4 * 8 * n_members * k * L
    fits = (cost <= max_entries) & (mem <= budget_bytes)
    if fits[-1]:
        return None
    size = max(1, int(np.argmin(fits)))  # (both grow with the prefix: the first that does not fit)
    return np.sort(perm[:size])


def combine_probabilities(P, weights) -> np.ndarray:
    """``Σ_m w_m P_m / Σ w`` over the members with positive weight."""
    P = np.asarray(P, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    keep = w > 0
    if not keep.any():
        raise ConfigError("no member has a positive weight")
    return np.tensordot(w[keep] / w[keep].sum(), P[keep], axes=1)


def weigh(rule: str, P, Z, criterion: Criterion = observed_map, *, rounds: int = DEFAULT_ROUNDS,
          steps: int = DEFAULT_STEPS, seed: int = 0) -> np.ndarray:
    """The member weights of ``rule``: ``ensemble_selection`` (bagged), ``mean_probability``
    (equal) or ``select`` (the best one)."""
    if rule == "ensemble_selection":
        return bagged_ensemble_selection(P, Z, criterion, rounds=rounds, steps=steps, seed=seed)
    if rule == "mean_probability":
        return uniform(P, Z, criterion)
    if rule == "select":
        return select_best(P, Z, criterion)
    raise ConfigError(f"unknown combination rule {rule!r} (ensemble_selection, mean_probability, select)")
