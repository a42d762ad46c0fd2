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


def plain_percentile_threshold(scores, percent=10.0) -> float:
    """The highest training-presence score t with at least (100 - percent)% of the
    presences at or above it, by trying every score."""
    s = [float(v) for v in scores]
    if not s:
        return math.nan
    ok = [t for t in s if sum(v >= t for v in s) >= (100.0 - percent) / 100.0 * len(s) - 1e-9]
    return max(ok)


@TWIN
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(1, 40), levels=st.sampled_from([2, 4, 0]),
       percent=st.sampled_from([0.0, 5.0, 10.0, 25.0, 50.0, 90.0]))
def test_percentile_threshold_equals_trying_every_score(seed, n, levels, percent):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, levels, n) / levels if levels else rng.random(n)
    assert M.percentile_threshold(s, percent) == plain_percentile_threshold(s, percent)


def plain_mess(reference, points) -> np.ndarray:
    """Elith et al. (2010), Appendix S3, one point and one covariate at a time."""
    ref, x = np.asarray(reference, float), np.asarray(points, float)
    out = []
    for p in x:
        sims = []
        for j in range(ref.shape[1]):
            r = ref[:, j]
            lo, hi = r.min(), r.max()
            if hi <= lo:
                continue  # a constant covariate is left out
            f = 100.0 * (r < p[j]).sum() / len(r)
            if f == 0:
                sims.append(100 * (p[j] - lo) / (hi - lo))
            elif f <= 50:
                sims.append(2 * f)
            elif f < 100:
                sims.append(2 * (100 - f))
            else:
                sims.append(100 * (hi - p[j]) / (hi - lo))
        out.append(min(sims) if sims else 100.0)
    return np.array(out)


@TWIN
@given(seed=st.integers(0, 2 ** 32 - 1), R=st.integers(1, 12), N=st.integers(1, 10), C=st.integers(1, 3),
       levels=st.sampled_from([3, 0]))
def test_mess_equals_the_point_by_point_formula(seed, R, N, C, levels):
    rng = np.random.default_rng(seed)
    draw = (lambda *s: rng.integers(0, levels, s).astype(float)) if levels else (lambda *s: rng.normal(size=s))
    ref = draw(R, C)
    if C > 1 and rng.random() < 0.3:
        ref[:, 0] = ref[0, 0]  # a constant covariate
    pts = np.concatenate([draw(N, C) * 1.5, ref[:2]])  # beyond the range, and at reference values
    np.testing.assert_allclose(M.mess(ref, pts), plain_mess(ref, pts), rtol=1e-12, atol=1e-9)
