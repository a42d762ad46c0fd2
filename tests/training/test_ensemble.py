"""Choosing and weighing a recipe's members on observed labels (spmlkit.training.ensemble):
the greedy selection and its bagging do what Caruana et al. describe, weights are a
distribution, and a member with NaN scores never gets weight."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.errors import ConfigError
from spmlkit.metrics import observed_positive_map
from spmlkit.training import ensemble as E


def _data(seed=0, n=120, L=6):
    """Single positives Z and three members: a good ranker, a weaker one, pure noise."""
    rng = np.random.default_rng(seed)
    Y = rng.random((n, L)) < 0.3
    Y[np.arange(n), rng.integers(0, L, n)] = True
    Z = np.zeros((n, L), np.int8)
    for i in range(n):
        Z[i, rng.choice(np.flatnonzero(Y[i]))] = 1
    good = np.clip(0.6 * Y + 0.4 * rng.random((n, L)), 0, 1)
    weak = np.clip(0.3 * Y + 0.7 * rng.random((n, L)), 0, 1)
    noise = rng.random((n, L))
    return np.stack([weak, good, noise]), Z


def test_member_scores_are_the_observed_map_and_nan_members_score_minus_inf():
    P, Z = _data()
    P[2, 0, 0] = np.nan
    s = E.member_scores(P, Z)
    assert s[0] == pytest.approx(observed_positive_map(Z, P[0])) and s[1] == pytest.approx(
        observed_positive_map(Z, P[1]))
    assert s[2] == -np.inf


def test_select_and_uniform():
    P, Z = _data()
    assert E.select_best(P, Z).tolist() == [0, 1, 0]
    np.testing.assert_allclose(E.uniform(P, Z), [1 / 3] * 3)
    P[2, 3, 1] = np.inf
    np.testing.assert_allclose(E.uniform(P, Z), [0.5, 0.5, 0])


def test_ensemble_selection_starts_from_the_best_and_adds_what_helps():
    """Step 1 is the best member; each later step adds the member whose addition gives the
    best criterion (recomputed here by brute force); weights are counts / steps."""
    P, Z = _data(1)
    w = E.ensemble_selection(P, Z, steps=5)
    assert w.sum() == pytest.approx(1.0) and (w * 5 == np.round(w * 5)).all()
    counts, total = np.zeros(3), None
    for k in range(5):
        cand = [(observed_positive_map(Z, (P[m] if total is None else (total + P[m]) / (k + 1))), -m)
                for m in range(3)]
        m = -max(cand)[1]
        counts[m] += 1
        total = P[m].copy() if total is None else total + P[m]
    np.testing.assert_allclose(w, counts / 5)
    assert w[1] == max(w)  # the good ranker carries the most weight


def test_bagged_selection_is_a_seeded_distribution_that_concentrates_on_a_clear_winner():
    P, Z = _data(2, n=400)
    w = E.bagged_ensemble_selection(P, Z, rounds=8, steps=4, seed=3)
    assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
    np.testing.assert_array_equal(w, E.bagged_ensemble_selection(P, Z, rounds=8, steps=4, seed=3))
    assert w[1] > 0.7 and w[2] < 0.1  # much data, one clearly better member: most weight on it


def test_bagged_selection_spreads_weight_when_members_are_indistinguishable():
    """Two copies of one member (up to noise too small to rank them apart on average): the
    resamples disagree, so neither gets all the weight."""
    P, Z = _data(3, n=40)
    rng = np.random.default_rng(0)
    twin = np.clip(P[1] + 1e-3 * rng.standard_normal(P[1].shape), 0, 1)
    P2 = np.stack([P[1], twin])
    w = E.bagged_ensemble_selection(P2, Z, rounds=20, steps=3, seed=0)
    assert 0 < w[0] < 1 and 0 < w[1] < 1


@pytest.mark.parametrize("rule", ["ensemble_selection", "mean_probability", "select"])
def test_a_member_with_nan_scores_never_gets_weight(rule):
    P, Z = _data(4)
    P[1] = np.nan  # the best member failed: NaN everywhere
    w = E.weigh(rule, P, Z, rounds=5, steps=4)
    assert w[1] == 0 and w.sum() == pytest.approx(1.0)


def test_a_member_whose_criterion_is_nan_never_wins():
    P, Z = _data(5)

    def criterion(Zr, Pr):  # member 1 (the best) scores NaN
        return float("nan") if np.allclose(Pr, P[1][: len(Pr)]) and len(Pr) == len(P[1]) else \
            observed_positive_map(Zr, Pr)

    assert E.select_best(P, Z, criterion)[1] == 0
    assert E.ensemble_selection(P, Z, criterion, steps=1)[1] == 0


def test_every_member_failed_is_one_clear_error():
    P, Z = _data(6)
    P[:] = np.nan
    for rule in ("ensemble_selection", "mean_probability", "select"):
        with pytest.raises(ConfigError, match="every member failed"):
            E.weigh(rule, P, Z)
    with pytest.raises(ConfigError, match="rule"):
        E.weigh("vote", *_data(6))


def test_combine_probabilities_is_the_weighted_mean_of_the_weighted_members():
    P, _ = _data(7)
    P[2] = np.nan  # weight 0: never read
    np.testing.assert_allclose(E.combine_probabilities(P, [0.25, 0.75, 0]), 0.25 * P[0] + 0.75 * P[1])
    with pytest.raises(ConfigError):
        E.combine_probabilities(P, [0, 0, 0])
