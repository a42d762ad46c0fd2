"""The measures an ecologist reads off a species distribution model, on plain score arrays.

Each function takes the scores of **presences** (records, or surveyed presences) and of
**contrast** sites (random background, or surveyed absences) of one species; higher
scores mean more suitable.  Against background sites the numbers measure how well the
model separates the records from the region as a whole, not from true absences: an AUC
of records against background is bounded below 1 even for a perfect model (Phillips et
al. 2006, *Ecological Modelling* 190:231–259, §"Model evaluation").

* :func:`auc` — the area under the ROC curve (Mann–Whitney: the chance that a random
  presence scores above a random contrast site, ties counting ½).
* :func:`max_tss` — the true skill statistic, sensitivity + specificity − 1, at the
  threshold that maximises it (Allouche, Tsoar & Kadmon 2006, *J. Applied Ecology*
  43:1223–1232, Eq. 3); the same threshold maximises sensitivity + specificity (Liu et al.
  2005, *Ecography* 28:385–393, "max SSS").
* :func:`percentile_threshold` — the "10th percentile training presence" threshold:
  the highest score that keeps at least 90% of the training presences at or above it.
* :func:`boyce_index` — the continuous Boyce index (Hirzel, Le Lay, Helfer, Randin & Guisan
  2006, *Ecological Modelling* 199:142–152, §2.3): a window of width ``w`` (default a tenth
  of the score range) moved over the score range; in each window the predicted-to-expected
  ratio F = (share of presences in the window) / (share of contrast sites in it); the
  index is Spearman's rank correlation between the windows' centres and F (windows with
  no contrast site are left out).  Near 1: more presences than expected where the model
  says suitable; 0: no better than random; negative: inverted.
* :func:`mess` — the multivariate environmental similarity surface (Elith, Kearney &
  Phillips 2010, *Methods in Ecology and Evolution* 1:330–342, Appendix S3): per
  covariate, with f the percentage of reference (training) values below the point's
  value, similarity = 100 (p − min)/(max − min) when f = 0, 2f when 0 < f ≤ 50,
  2(100 − f) when 50 ≤ f < 100, 100 (max − p)/(max − min) when f = 100; the MESS is
  the minimum over the covariates.  Negative values are outside the training range of
  at least one covariate (extrapolation).
"""
from __future__ import annotations

import numpy as np
from scipy.stats import rankdata, spearmanr


def _two(pos, neg) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(pos, dtype=np.float64).ravel()
    n = np.asarray(neg, dtype=np.float64).ravel()
    return p, n


def auc(pos, neg) -> float:
    """AUC of presences ``pos`` against contrast sites ``neg`` (NaN when either is empty).

    >>> auc([3, 2], [1, 2])  # pairs: 3>1, 3>2, 2>1, 2=2 (½) -> 3.5 / 4
    0.875
    """
    p, n = _two(pos, neg)
    if not len(p) or not len(n):
        return float("nan")
    r = rankdata(np.concatenate([p, n]))  # mid-ranks: ties count ½
    return float((r[:len(p)].sum() - len(p) * (len(p) + 1) / 2) / (len(p) * len(n)))


def max_tss(pos, neg) -> tuple[float, float]:
    """``(TSS, threshold)``: the largest sensitivity + specificity − 1 over thresholds
    ``t`` (a site is predicted present when its score ≥ t), and the threshold reaching it
    (the highest such score).  NaN, NaN when either side is empty.

    >>> max_tss([0.9, 0.8, 0.3], [0.7, 0.2, 0.1, 0.05])  # t = 0.3: sens 3/3, spec 3/4 (t = 0.8: 2/3 + 1)
    (0.75, 0.3)
    """
    p, n = _two(pos, neg)
    if not len(p) or not len(n):
        return float("nan"), float("nan")
    ts = np.unique(np.concatenate([p, n]))[::-1]  # candidate thresholds, high to low
    ps, ns = np.sort(p), np.sort(n)
    hits = len(ps) - np.searchsorted(ps, ts, side="left")  # presences >= t
    rejections = np.searchsorted(ns, ts, side="left")  # contrast sites < t
    # TSS times n_p * n_n, in whole numbers: equal TSS values compare equal (no rounding)
    scaled = hits.astype(np.int64) * len(ns) + rejections.astype(np.int64) * len(ps)
    k = int(np.argmax(scaled))  # the first maximum from the top: the highest threshold
    return float(hits[k] / len(ps) + rejections[k] / len(ns) - 1.0), float(ts[k])


def percentile_threshold(train_pos, percent: float = 10.0) -> float:
    """The highest score that keeps at least ``100 − percent`` % of the training presences
    at or above it (``percent`` 10: MaxEnt's "10 percentile training presence").

    >>> percentile_threshold([5, 1, 4, 2, 3, 6, 7, 8, 9, 10])  # 9 of 10 are >= 2
    2.0
    """
    p = np.sort(np.asarray(train_pos, dtype=np.float64).ravel())
    if not len(p):
        return float("nan")
    keep = int(np.ceil((100.0 - percent) / 100.0 * len(p) - 1e-9))
    return float(p[len(p) - max(keep, 1)])


def sensitivity_specificity(pos, neg, threshold: float) -> tuple[float, float]:
    """Share of presences at or above ``threshold`` and of contrast sites below it."""
    p, n = _two(pos, neg)
    return (float((p >= threshold).mean()) if len(p) else float("nan"),
            float((n < threshold).mean()) if len(n) else float("nan"))


def boyce_index(pos, neg, *, window: float | None = None, n_windows: int = 101) -> float:
    """The continuous Boyce index (module docstring): ``n_windows`` window centres evenly
    from ``lo + w/2`` to ``hi − w/2`` over the range ``[lo, hi]`` of all scores, ``w`` =
    ``window`` or a tenth of the range.  NaN when fewer than 3 windows have contrast
    sites, or F is constant.

    >>> # windows [0, .5], [.25, .75], [.5, 1]: F = (1/3)/(2/3), (1/3)/(1/3), (3/3)/(2/3) rises
    >>> boyce_index([1.0, 1.0, 0.5], [0.0, 0.5, 1.0], window=0.5, n_windows=3)
    1.0
    """
    p, n = _two(pos, neg)
    if not len(p) or not len(n):
        return float("nan")
    both = np.concatenate([p, n])
    lo, hi = float(both.min()), float(both.max())
    if hi <= lo:
        return float("nan")
    w = (hi - lo) / 10.0 if window is None else float(window)
    centres = np.linspace(lo + w / 2, hi - w / 2, n_windows) if w < hi - lo else np.array([(lo + hi) / 2])
    ps, ns = np.sort(p), np.sort(n)
    a, b = centres - w / 2, centres + w / 2
    inside_p = np.searchsorted(ps, b, side="right") - np.searchsorted(ps, a, side="left")
    inside_n = np.searchsorted(ns, b, side="right") - np.searchsorted(ns, a, side="left")
    ok = inside_n > 0
    if ok.sum() < 3:
        return float("nan")
    f = (inside_p[ok] / len(p)) / (inside_n[ok] / len(n))
    if np.all(f == f[0]):
        return float("nan")
    return float(spearmanr(centres[ok], f).statistic)


def mess(reference, points) -> np.ndarray:
    """MESS (module docstring) of ``points`` ``(N, C)`` against ``reference`` ``(R, C)``
    (the training rows' covariates in their units): ``(N,)``, ≤ 100; negative outside
    the reference range of at least one covariate.  A covariate constant in the reference
    is left out (Elith et al.'s formula divides by its range, which is 0 there).

    >>> mess(np.array([[0.0], [10.0]]), np.array([[15.0], [5.0], [0.0]])).tolist()
    [-50.0, 100.0, 0.0]
    """
    ref = np.asarray(reference, dtype=np.float64)
    x = np.asarray(points, dtype=np.float64)
    if ref.ndim != 2 or x.ndim != 2 or ref.shape[1] != x.shape[1]:
        raise ValueError(f"mess: reference {ref.shape} and points {x.shape} must be 2-D with the same columns")
    out = np.full(len(x), np.inf)
    for j in range(ref.shape[1]):
        r = np.sort(ref[:, j])
        lo, hi = r[0], r[-1]
        if hi <= lo:
            continue
        p = x[:, j]
        f = 100.0 * np.searchsorted(r, p, side="left") / len(r)  # % of reference values below p
        sim = np.where(f <= 50, 2 * f, 2 * (100 - f))
        sim = np.where(f == 0, 100 * (p - lo) / (hi - lo), sim)
        sim = np.where(f == 100, 100 * (hi - p) / (hi - lo), sim)
        out = np.minimum(out, sim)
    return np.where(np.isinf(out), 100.0, out)
