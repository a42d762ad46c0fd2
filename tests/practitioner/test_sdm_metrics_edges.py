"""The continuous Boyce index (spmlkit.practitioner.sdm_metrics.boyce_index) against a
plain window-by-window twin written from Hirzel et al. (2006, §2.3) on drawn scores (ties,
few levels, one presence, windows wider than the range), and a hand case whose F rises
but not linearly: the index is a rank correlation, so it is exactly 1 there."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import spearmanr

from spmlkit.practitioner import sdm_metrics as M
from tests.twins.strategies import TWIN


def plain_boyce(pos, neg, window=None, n_windows=101) -> float:
    """One window at a time: centres evenly from lo + w/2 to hi - w/2, each window
    [c - w/2, c + w/2] (both ends in); F = share of presences / share of contrast sites in
    it; windows without a contrast site left out; Spearman's rho of centres and F."""
    p, n = [float(v) for v in pos], [float(v) for v in neg]
    if not p or not n:
        return math.nan
    lo, hi = min(p + n), max(p + n)
    if hi <= lo:
        return math.nan
    w = (hi - lo) / 10.0 if window is None else float(window)
    centres = list(np.linspace(lo + w / 2, hi - w / 2, n_windows)) if w < hi - lo else [(lo + hi) / 2]
    xs, fs = [], []
    for c in centres:
        a, b = c - w / 2, c + w / 2
        in_p = sum(a <= v <= b for v in p)
        in_n = sum(a <= v <= b for v in n)
        if in_n:
            xs.append(c)
            fs.append((in_p / len(p)) / (in_n / len(n)))
    if len(xs) < 3 or len(set(fs)) == 1:
        return math.nan
    return float(spearmanr(xs, fs).statistic)


def test_a_rising_but_curved_ratio_has_boyce_one():
    # windows [0, .5], [.25, .75], [.5, 1]: presences 1, 1, 6 of 6; contrast 2, 1, 2 of 3 -> F = .5, 1, 3
    assert M.boyce_index([1.0] * 5 + [0.5], [0.0, 0.5, 1.0], window=0.5, n_windows=3) == 1.0
    # falling, curved: F = 3, 1, .5 -> -1
    assert M.boyce_index([0.0] * 5 + [0.5], [0.0, 0.5, 1.0], window=0.5, n_windows=3) == -1.0


@TWIN
@given(seed=st.integers(0, 2 ** 32 - 1), n_p=st.integers(1, 12), n_n=st.integers(1, 20),
       levels=st.sampled_from([2, 3, 5, 0]), window=st.sampled_from([None, 0.05, 0.3, 0.5, 2.0]),
       n_windows=st.sampled_from([3, 4, 11, 101]))
def test_boyce_index_equals_the_window_by_window_twin(seed, n_p, n_n, levels, window, n_windows):
    rng = np.random.default_rng(seed)
    draw = (lambda k: rng.integers(0, levels, k) / levels) if levels else rng.random
    p, n = draw(n_p), draw(n_n)
    got, want = M.boyce_index(p, n, window=window, n_windows=n_windows), plain_boyce(p, n, window, n_windows)
    assert (math.isnan(got) and math.isnan(want)) or abs(got - want) < 1e-12, (got, want)
