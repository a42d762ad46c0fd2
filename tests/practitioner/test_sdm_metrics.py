"""The SDM measures (spmlkit.practitioner.sdm_metrics) against hand-computed cases and
brute-force twins on drawn inputs (ties, one presence, constant scores)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from spmlkit.practitioner import sdm_metrics as M


def brute_auc(p, n):
    return np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a in p for b in n])


def brute_tss(p, n):
    best = (-2.0, None)
    for t in sorted(set(p) | set(n), reverse=True):
        v = np.mean(np.asarray(p) >= t) + np.mean(np.asarray(n) < t) - 1
        if v > best[0] + 1e-12:
            best = (v, t)
    return best


def test_auc_hand_cases():
    assert M.auc([3, 2], [1, 2]) == 0.875
    assert M.auc([1, 1], [1]) == 0.5  # all ties
    assert M.auc([0.9], [0.1, 0.2]) == 1.0 and M.auc([0.1], [0.5, 0.9]) == 0.0
    assert math.isnan(M.auc([], [1.0]))


def test_tss_hand_case():
    # t = 0.3: every presence above, 3 of 4 background below -> 1 + 3/4 - 1
    assert M.max_tss([0.9, 0.8, 0.3], [0.7, 0.2, 0.1, 0.05]) == (0.75, 0.3)
    # perfect separation: TSS 1 at the lowest presence score
    assert M.max_tss([0.6, 0.7], [0.1, 0.5]) == (1.0, 0.6)
    assert M.sensitivity_specificity([0.9, 0.8, 0.3], [0.7, 0.2, 0.1, 0.05], 0.8) == (2 / 3, 1.0)


@pytest.mark.parametrize("seed", range(12))
def test_auc_and_tss_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_p, n_n = rng.integers(1, 9), rng.integers(1, 12)
    levels = rng.integers(2, 6)  # few levels: many ties
    p, n = rng.integers(0, levels, n_p) / levels, rng.integers(0, levels, n_n) / levels
    assert M.auc(p, n) == pytest.approx(brute_auc(p, n))
    tss, t = M.max_tss(p, n)
    bt, bthr = brute_tss(p, n)
    assert tss == pytest.approx(bt) and t == pytest.approx(bthr)


def test_percentile_threshold():
    assert M.percentile_threshold(list(range(1, 11))) == 2.0  # 9 of 10 at or above 2
    assert M.percentile_threshold([5.0]) == 5.0
    s = np.arange(116.0)
    t = M.percentile_threshold(s)
    assert (s >= t).sum() >= 0.9 * 116 and (s > t).sum() < 0.9 * 116  # the highest such score
    assert M.percentile_threshold([1, 2, 3, 4], percent=50) == 3.0


def test_boyce_hand_cases():
    # windows [0, .5], [.25, .75], [.5, 1]: F = 0.5, 1, 1.5 rises with the score -> 1
    assert M.boyce_index([1.0, 1.0, 0.5], [0.0, 0.5, 1.0], window=0.5, n_windows=3) == 1.0
    # presences at the low end: F falls -> -1
    assert M.boyce_index([0.0, 0.0, 0.5], [0.0, 0.5, 1.0], window=0.5, n_windows=3) == -1.0
    # presences drawn like the background: no trend to speak of
    rng = np.random.default_rng(0)
    assert abs(M.boyce_index(rng.random(2000), rng.random(2000))) < 0.5
    assert math.isnan(M.boyce_index([0.5], [0.5]))  # constant scores


def test_mess_known_answers():
    ref = np.array([[0.0, 0.0], [10.0, 100.0], [5.0, 50.0], [2.0, 20.0]])
    pts = np.array([[15.0, 50.0],   # x above the range: 100 (10 - 15) / 10 = -50
                    [5.0, 50.0],    # f = 50 on both: 100
                    [0.0, 200.0],   # x at the minimum (0); y far above: 100 (100 - 200) / 100 = -100
                    [3.0, 30.0]])   # f = 50% below on both -> 2 * 50 = 100
    assert M.mess(ref, pts).tolist() == [-50.0, 100.0, -100.0, 100.0]
    assert M.mess(np.array([[1.0, 0.0], [1.0, 10.0]]), np.array([[7.0, 5.0]])).tolist() == [100.0]  # constant left out
    with pytest.raises(ValueError, match="same columns"):
        M.mess(ref, np.zeros((2, 3)))
