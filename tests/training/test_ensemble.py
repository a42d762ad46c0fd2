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


def _split_winners(n=40, L=4, seed=0):
    """Two members, each the perfect ranker on its own half of the rows and noise on the
    other: which wins depends on the rows drawn."""
    rng = np.random.default_rng(seed)
    Z = np.zeros((n, L), np.int8)
    Z[np.arange(n), rng.integers(0, L, n)] = 1
    A, B = rng.random((n, L)) * 0.5, rng.random((n, L)) * 0.5
    half = np.arange(n) < n // 2
    A[half] += Z[half]
    B[~half] += Z[~half]
    return np.stack([A, B]), Z


def test_bagging_gives_weight_to_members_that_win_different_resamples():
    """The defining property of bagged ensemble selection (Caruana et al. 2006): each round
    selects on a bootstrap resample (rows drawn with replacement), so two members that win
    different resamples both get weight.  Selection on a permutation of the rows (the same
    set every round) would put every round's weight on one member."""
    P, Z = _split_winners()
    w = E.bagged_ensemble_selection(P, Z, rounds=20, steps=1, seed=0)
    assert w[0] > 0.1 and w[1] > 0.1, w
    whole = E.ensemble_selection(P, Z, steps=1)  # every row once: one member only
    assert sorted(whole.tolist()) == [0.0, 1.0]


@pytest.mark.parametrize("seed", range(4))
def test_the_positive_counted_observed_maps_equal_the_sorted_columns(seed):
    """The twin: every candidate's observed mAP from its positives equals, bit for bit, the
    observed mAP read off a sort of every column (ties, empty columns, one row, one label,
    a column holding every positive)."""
    rng = np.random.default_rng(seed)
    for _ in range(150):
        n, L, C = int(rng.integers(1, 30)), int(rng.integers(1, 9)), int(rng.integers(1, 4))
        Z = (rng.random((n, L)) < rng.random() * 0.7).astype(np.int8)
        if rng.random() < 0.2:
            Z[:] = 0
            Z[:, int(rng.integers(L))] = 1  # one label holds every positive
        levels = int(rng.integers(2, 6))
        P = rng.integers(0, levels, (C, n, L)) / levels if rng.random() < 0.5 else rng.random((C, n, L))
        ap = E.column_average_precision(np.tile(Z == 1, (1, C)), P.transpose(1, 0, 2).reshape(n, C * L))
        ap = ap.reshape(C, L)
        with np.errstate(invalid="ignore"):
            plain = np.nanmean(np.where(np.isfinite(ap), ap, np.nan), 1) * 100 if np.isfinite(ap).any() else \
                np.full(C, np.nan)
        np.testing.assert_array_equal(E._observed_maps(Z, P), np.where(np.isfinite(plain), plain, -np.inf))


def test_the_selection_subsample_is_seeded_fixed_and_sized_to_its_bounds():
    from spmlkit.sparse_labels import SparseLabels

    rng = np.random.default_rng(0)
    n, L = 500, 40
    Z = SparseLabels.single(rng.integers(0, L, n), L)
    assert E.selection_subsample(Z, seed=0, n_members=4, budget_bytes=2 ** 40, max_entries=n * n) is None
    rows = E.selection_subsample(Z, seed=3, n_members=4, budget_bytes=2 ** 40, max_entries=10_000)
    assert rows.tolist() == sorted(set(rows.tolist())) and len(rows) == 100  # 100 rows x 100 positives
    np.testing.assert_array_equal(rows, E.selection_subsample(Z, seed=3, n_members=4, budget_bytes=2 ** 40,
                                                              max_entries=10_000))
    assert set(rows.tolist()) != set(E.selection_subsample(Z, seed=4, n_members=4, budget_bytes=2 ** 40,
                                                           max_entries=10_000).tolist())
    # the memory bound: 4 float64 copies of members x rows x labels with a positive among them
    small = E.selection_subsample(Z, seed=3, n_members=4, budget_bytes=4 * 8 * 4 * 50 * L, max_entries=10 ** 9)
    labels = np.unique(np.asarray(Z)[small].nonzero()[1]).size
    assert 4 * 8 * 4 * len(small) * labels <= 4 * 8 * 4 * 50 * L and len(small) >= 50
    # other criteria count every label; at least one row, however small the bounds
    assert len(E.selection_subsample(Z, seed=0, n_members=4, budget_bytes=2 ** 40, observed=False,
                                     max_entries=L * 7)) == 7
    assert len(E.selection_subsample(Z, seed=0, n_members=4, budget_bytes=0, max_entries=0)) == 1


def test_selection_on_a_subsample_is_close_to_selection_on_the_whole_set():
    """A clear winner on the whole set keeps most of the weight on a seeded half of it, and
    the subsample that is the whole set gives the whole set's weights."""
    P, Z = _data(2, n=400)
    whole = E.bagged_ensemble_selection(P, Z, rounds=8, steps=4, seed=3)
    rows = E.selection_subsample(Z, seed=1, n_members=3, budget_bytes=2 ** 40, max_entries=200 * 200 * 2)
    assert 100 < len(rows) < 400
    sub = E.bagged_ensemble_selection(P[:, rows], Z[rows], rounds=8, steps=4, seed=3)
    assert np.argmax(sub) == np.argmax(whole) == 1 and sub[1] > 0.6
    every = np.arange(400)
    np.testing.assert_array_equal(E.bagged_ensemble_selection(P[:, every], Z[every], rounds=8, steps=4, seed=3),
                                  whole)


# ------------------------------------------ mutation survivors (issue 44): messages, defaults, chunking
def test_the_refusals_are_whole_lines():
    P, Z = _data(3)

    def message(fn, *a, **kw):
        with pytest.raises(ConfigError) as e:
            fn(*a, **kw)
        return str(e.value)

    assert message(E.member_scores, P[:, :5], Z) == ("member scores must be (members, rows, labels) matching the "
                                                     "observations (120, 6), got (3, 5, 6)")
    assert message(E.member_scores, P[0], Z) == ("member scores must be (members, rows, labels) matching the "
                                                 "observations (120, 6), got (120, 6)")
    bad = np.full_like(P, np.nan)
    assert message(E.member_scores, bad, Z) == ("no member of the recipe has finite validation scores (every member "
                                                "failed)")
    never = lambda z, p: float("nan")  # noqa: E731 - a criterion no member scores on
    for fn in (E.select_best, E.uniform, E.ensemble_selection):
        assert message(fn, P, Z, never) == "no member of the recipe has a finite validation score"
    assert message(E.combine_probabilities, P, [0, 0, 0]) == "no member has a positive weight"
    assert message(E.weigh, "vote", P, Z) == ("unknown combination rule 'vote' (ensemble_selection, mean_probability, "
                                              "select)")


def test_weigh_passes_its_settings_and_the_defaults_are_twenty_resamples_of_ten_steps():
    P, Z = _data(4, n=60)
    np.testing.assert_array_equal(E.weigh("ensemble_selection", P, Z, rounds=3, steps=4, seed=7),
                                  E.bagged_ensemble_selection(P, Z, rounds=3, steps=4, seed=7))
    assert not np.array_equal(E.weigh("ensemble_selection", P, Z, rounds=3, steps=4, seed=7),
                              E.weigh("ensemble_selection", P, Z, rounds=3, steps=4, seed=8))
    default = E.weigh("ensemble_selection", P, Z)
    np.testing.assert_array_equal(default, E.bagged_ensemble_selection(P, Z, rounds=20, steps=10, seed=0))
    np.testing.assert_array_equal(E.bagged_ensemble_selection(P, Z), default)
    w = E.ensemble_selection(P, Z)  # ten steps: multiples of 1/10
    assert np.allclose(w * 10, np.round(w * 10)) and w.sum() == pytest.approx(1.0)
    assert E.DEFAULT_ROUNDS == 20 and E.DEFAULT_STEPS == 10
    np.testing.assert_array_equal(E.weigh("select", P, Z), E.select_best(P, Z))
    np.testing.assert_array_equal(E.weigh("mean_probability", P, Z), E.uniform(P, Z))
    crit = lambda z, p: -float(np.abs(p - 0.5).sum())  # noqa: E731 - another criterion, passed through
    np.testing.assert_array_equal(E.weigh("select", P, Z, crit), E.select_best(P, Z, crit))


@pytest.mark.parametrize("gather", [1, 2, 7, 10 ** 9])
def test_the_observed_maps_are_the_same_gathered_in_any_block(gather, monkeypatch):
    P, Z = _data(5, n=30)
    whole = E._observed_maps(Z, P)
    monkeypatch.setattr(E, "_GATHER_ENTRIES", gather)
    np.testing.assert_array_equal(E._observed_maps(Z, P), whole)


def _brier(z, p):
    """A criterion that is not rank-based: it sees the scale of the mean probability."""
    return -float(((np.asarray(p) - (np.asarray(z) == 1)) ** 2).mean())


def _greedy(P, Z, criterion, steps, rows=None):
    """Caruana et al. 2004 written plainly: the best member, then steps - 1 additions."""
    r = np.arange(P.shape[1]) if rows is None else np.asarray(rows)
    P, Z = P[:, r], Z[r]
    counts = np.zeros(len(P))
    first = int(np.argmax([criterion(Z, P[m]) for m in range(len(P))]))
    counts[first], total = 1, P[first].copy()
    for k in range(1, steps):
        m = int(np.argmax([criterion(Z, (total + P[m]) / (k + 1)) for m in range(len(P))]))
        counts[m] += 1
        total = total + P[m]
    return counts / steps


@pytest.mark.parametrize("seed", range(3))
def test_selection_with_any_criterion_and_its_bagging_equal_their_plain_twins(seed):
    P, Z = _data(seed, n=40)
    P = P * np.array([0.3, 0.9, 0.6])[:, None, None]  # different scales: a calibration criterion tells
    for steps in (1, 2, 5):
        np.testing.assert_array_equal(E.ensemble_selection(P, Z, _brier, steps=steps), _greedy(P, Z, _brier, steps))
        np.testing.assert_array_equal(E.ensemble_selection(P, Z, steps=steps), _greedy(P, Z, E.observed_map, steps))
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, 40, 40) for _ in range(4)]
    plain = np.mean([_greedy(P, Z, _brier, 3, rows=r) for r in draws], axis=0)
    np.testing.assert_array_equal(E.bagged_ensemble_selection(P, Z, _brier, rounds=4, steps=3, seed=seed), plain)
    np.testing.assert_array_equal(E.weigh("ensemble_selection", P, Z, _brier, rounds=4, steps=3, seed=seed), plain)


def test_scores_are_read_in_float64_on_the_rows_asked_and_no_rows_is_no_failure():
    P, Z = _data(8, n=30)
    seen = []

    def crit(z, p):
        seen.append(p.dtype)
        return _brier(z, p)

    E.ensemble_selection(P.astype(np.float32), Z, crit, steps=2)
    assert set(seen) == {np.dtype(np.float64)}
    rows = [0, 3, 7, 7]
    np.testing.assert_array_equal(E.member_scores(P, Z, _brier, rows=rows), E.member_scores(P[:, rows], Z[rows], _brier))
    np.testing.assert_array_equal(E.member_scores(np.zeros((2, 0, 3)), np.zeros((0, 3)), lambda z, p: 1.0), [1.0, 1.0])
    bad = P.copy()
    bad[0, 0, 0] = np.nan  # a failed member gets no weight under mean_probability with any criterion
    np.testing.assert_array_equal(E.weigh("mean_probability", bad, Z, _brier), [0, 0.5, 0.5])
    no_second = lambda z, p: np.nan if p[0, 0] == P[1, 0, 0] else 0.0  # noqa: E731 - member 1's criterion fails
    np.testing.assert_array_equal(E.weigh("mean_probability", P, Z, no_second), [0.5, 0, 0.5])
    out = E.combine_probabilities(P.astype(np.float32), [1, 3, 0])
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, 0.25 * P[0] + 0.75 * P[1], rtol=1e-6)


def _plain_subsample(Zd, seed, n_members, budget_bytes, observed, max_entries):
    """selection_subsample written plainly: grow the prefix of the seeded permutation while it fits."""
    n, L = Zd.shape
    perm = np.random.default_rng(seed).permutation(n)

    def fits(k):
        rows = Zd[perm[:k]]
        if observed:
            cost = k * int((rows == 1).sum())
            mem = 4 * 8 * n_members * k * int((rows == 1).any(0).sum())
        else:
            cost, mem = k * L, 4 * 8 * n_members * k * L
        return cost <= max_entries and mem <= budget_bytes

    if fits(n):
        return None
    size = next((k for k in range(1, n + 1) if not fits(k)), n)
    return np.sort(perm[:max(1, size - 1)])


def test_the_selection_subsample_equals_its_plain_twin_at_the_bounds():
    from spmlkit.sparse_labels import SparseLabels

    rng = np.random.default_rng(11)
    for _ in range(60):
        n, L, M = int(rng.integers(1, 25)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
        Zd = (rng.random((n, L)) < rng.random() * 0.6).astype(np.int8)
        Zd[rng.random(n) < 0.3] = 0  # rows without a positive, labels without one
        observed = bool(rng.integers(2))
        k = int(rng.integers(1, n + 1))  # a bound met exactly by some prefix
        rows = Zd[np.random.default_rng(3).permutation(n)[:k]]
        pos, lab = int((rows == 1).sum()), int((rows == 1).any(0).sum())
        entries = k * (pos if observed else L) + int(rng.integers(0, 2))
        budget = 4 * 8 * M * k * (lab if observed else L) + int(rng.integers(0, 2))
        for e, b in ((entries, 10 ** 12), (10 ** 12, budget), (entries, budget)):
            got = E.selection_subsample(SparseLabels.from_dense(Zd), seed=3, n_members=M, budget_bytes=b,
                                        observed=observed, max_entries=e)
            want = _plain_subsample(Zd, 3, M, b, observed, e)
            assert (got is None and want is None) or np.array_equal(got, want), (n, L, M, observed, e, b)


def test_labels_without_positives_give_nan_quietly():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from 0/0 or a mean of nothing
        ap = E.column_average_precision([[1, 0], [0, 0]], [[0.5, 0.2], [0.1, 0.9]])
        assert ap[0] == 1.0 and np.isnan(ap[1])
        empty = E.column_average_precision(np.zeros((0, 3)), np.zeros((0, 3)))
        assert empty.dtype == np.float64 and empty.shape == (3,) and np.isnan(empty).all()
        assert np.isnan(E.observed_map(np.zeros((4, 2)), np.random.default_rng(0).random((4, 2))))


def test_the_bootstrap_draws_every_row_including_the_first():
    """Two rows, two members each perfect on one of them: resamples drawn from both rows
    give both members weight (a draw that never takes row 0 would give member 0 none)."""
    Z = np.array([[1, 0], [0, 1]], np.int8)
    A = np.array([[0.9, 0.1], [0.9, 0.1]])  # ranks row 0's label first: right on row 0 only
    B = np.array([[0.1, 0.9], [0.1, 0.9]])
    w = E.bagged_ensemble_selection(np.stack([A, B]), Z, _brier, rounds=40, steps=1, seed=0)
    assert w[0] > 0 and w[1] > 0 and w.sum() == pytest.approx(1.0)
