"""k* and the bootstrap intervals of Cole et al. (2021) Table A2, library and CLI."""
import itertools

import numpy as np
import pytest

from spmlkit.errors import ConfigError, SpmlError
from spmlkit.practitioner.estimate_k import bootstrap_k_intervals, sample_without_replacement


def test_draws_are_without_replacement_and_uniform():
    rng = np.random.default_rng(0)
    S = sample_without_replacement(5, 2, 60_000, rng)
    assert S.shape == (60_000, 2) and (S[:, 0] != S[:, 1]).all() and S.min() >= 0 and S.max() <= 4
    # every one of the C(5, 2) = 10 subsets has probability 1/10
    keys = np.sort(S, axis=1) @ np.array([5, 1])
    freq = np.bincount(keys, minlength=25)[[a * 5 + b for a, b in itertools.combinations(range(5), 2)]] / 60_000
    assert np.allclose(freq, 0.1, atol=0.006)
    S = sample_without_replacement(50, 25, 2000, rng)
    assert all(len(set(row)) == 25 for row in S)
    with pytest.raises(ConfigError, match="without replacement"):
        sample_without_replacement(3, 4, 10, rng)


def test_hand_example_and_k_star():
    Y = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 0]], dtype=bool)  # counts 1, 2, 3, 1 -> k* = 7/4
    est = bootstrap_k_intervals(Y, (4, 1), rng=np.random.default_rng(0), trials=500)
    assert est.k_star == 1.75 and est.n == 4 and est.n_labels == 3
    m4, m1 = est.intervals
    assert m4.low == m4.high == 1.75  # M = N: every draw is the whole set
    assert (m1.low, m1.high) == (1.0, 3.0)  # one example: its count; 5th pct 1, 95th pct 3 (P(3) = 1/4)


def test_intervals_shrink_with_m_and_contain_k_star():
    rng = np.random.default_rng(1)
    Y = rng.random((3000, 20)) < rng.uniform(0.02, 0.3, 20)  # k* ≈ 3.2
    est = bootstrap_k_intervals(Y, (5, 10, 25), rng=np.random.default_rng(0), trials=100_000)
    widths = [i.high - i.low for i in est.intervals]
    assert widths[0] > widths[1] > widths[2] > 0
    for i in est.intervals:
        assert i.low <= est.k_star <= i.high and i.mean == pytest.approx(est.k_star, abs=0.02)
    # I_M ≈ k* ± 1.645·σ/√M (finite population); σ of the counts
    sd = Y.sum(1).std()
    assert widths[2] == pytest.approx(2 * 1.645 * sd / np.sqrt(25), rel=0.1)
    again = bootstrap_k_intervals(Y, (5, 10, 25), rng=np.random.default_rng(0), trials=100_000)
    assert again.intervals == est.intervals  # the generator makes it reproducible


def test_bad_input():
    with pytest.raises(ConfigError):
        bootstrap_k_intervals(np.zeros((0, 3)), rng=np.random.default_rng(0))
    with pytest.raises(ConfigError):
        bootstrap_k_intervals(np.ones((4, 3)), (2,), rng=np.random.default_rng(0), trials=0)


def test_training_labels(trained):
    from spmlkit.practitioner.estimate_k import training_labels

    Y, name = training_labels(str(trained.full.path))
    assert np.array_equal(Y, trained.full.labels("train"))
    assert name == f"toy (bundle {trained.full.path}, training split)"
    Y, name = training_labels("yeast")
    assert Y.shape == (1500, 14) and name == "yeast (training split)"
    with pytest.raises(SpmlError, match="has no full training labels; k needs fully labelled examples"):
        training_labels(str(trained.own.path))
