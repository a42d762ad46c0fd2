"""How well can k be estimated from a few fully labelled examples? (Cole et al. 2021, appendix B)

EPR and ROLE need k, the expected number of positives per example.  With ``M`` fully
labelled examples it is estimated as ``k̂_M = 1/M Σ_n Σ_i y_ni`` (Eq. A1).  Table A2
gives approximate 95% intervals ``I_M`` for ``k̂_M``: draw ``T = 10⁵`` sets of ``M``
training examples uniformly **without replacement**, compute ``k̂_M`` on each, and take
the 5th and 95th percentiles.  ``k*`` is Eq. A1 over the whole training set (Table A3).

Sampling is vectorised over the trials with Floyd's algorithm (for ``j = N−M … N−1``:
draw ``t ∈ [0, j]``, keep ``t`` unless already chosen, else take ``j``), which gives
every ``M``-subset the same probability in ``M`` vectorised steps of ``O(T·M)`` — 10⁵
trials for M ∈ {5, 10, 25} take well under a second.  Only the per-example label counts
enter, so the labels are never copied per trial.

>>> import numpy as np
>>> Y = np.array([[1, 0], [1, 1], [0, 1], [1, 1]], dtype=bool)   # counts 1, 2, 1, 2 -> k* = 1.5
>>> est = bootstrap_k_intervals(Y, ms=(2,), rng=np.random.default_rng(0), trials=1000)
>>> est.k_star, est.intervals[0].m, est.intervals[0].low, est.intervals[0].high
(1.5, 2, 1.0, 2.0)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..data import Bundle, load_any
from ..errors import ConfigError, SpmlError
from ..labels import expected_positives

DEFAULT_MS = (5, 10, 25)
DEFAULT_TRIALS = 100_000


@dataclass(frozen=True)
class KInterval:
    """``I_M``: percentiles of ``k̂_M`` over ``trials`` draws of ``M`` examples."""

    m: int
    low: float
    high: float
    mean: float
    trials: int


@dataclass(frozen=True)
class KEstimate:
    k_star: float  # Eq. A1 over all n examples (Cole Table A3's "Avg.")
    n: int
    n_labels: int
    percentiles: tuple[float, float]
    intervals: list[KInterval] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"k_star": self.k_star, "n": self.n, "n_labels": self.n_labels, "percentiles": list(self.percentiles),
                "intervals": [vars(i).copy() for i in self.intervals]}


def sample_without_replacement(n: int, m: int, trials: int, rng: np.random.Generator) -> np.ndarray:
    """``(trials, m)`` row indices, each row a uniformly random ``m``-subset of ``range(n)``
    (Floyd's algorithm, vectorised over the trials; the order within a row is not uniform)."""
    if not 1 <= m <= n:
        raise ConfigError(f"cannot draw M={m} examples without replacement from {n}")
    out = np.empty((trials, m), dtype=np.int64)
    for col, j in enumerate(range(n - m, n)):
        t = rng.integers(0, j + 1, size=trials)
        taken = (out[:, :col] == t[:, None]).any(axis=1) if col else np.zeros(trials, dtype=bool)
        out[:, col] = np.where(taken, j, t)
    return out


def bootstrap_k_intervals(Y: np.ndarray, ms=DEFAULT_MS, *, rng: np.random.Generator, trials: int = DEFAULT_TRIALS,
                          percentiles: tuple[float, float] = (5.0, 95.0)) -> KEstimate:
    """k* and the intervals ``I_M`` of Cole Table A2 for each ``M`` in ``ms``.

    ``Y`` — full labels ``(N, L)`` (bool or 0/1) of the training set; ``rng`` — a
    ``numpy.random.Generator`` (pass a seeded one for reproducible intervals)."""
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[0] == 0:
        raise ConfigError(f"expected full labels of shape (N, L) with N >= 1, got shape {Y.shape}")
    trials = int(trials)
    if trials < 1:
        raise ConfigError(f"trials must be >= 1, got {trials}")
    lo_p, hi_p = (float(p) for p in percentiles)
    if not 0 <= lo_p <= hi_p <= 100:
        raise ConfigError(f"percentiles must satisfy 0 <= low <= high <= 100, got {percentiles}")
    counts = np.asarray(Y, dtype=bool).sum(axis=1).astype(np.float64)
    n = counts.size
    intervals = []
    for m in ms:
        m = int(m)
        idx = sample_without_replacement(n, m, trials, rng)
        k_hat = counts[idx].mean(axis=1)
        lo, hi = np.percentile(k_hat, [lo_p, hi_p])
        intervals.append(KInterval(m=m, low=float(lo), high=float(hi), mean=float(k_hat.mean()), trials=trials))
    return KEstimate(k_star=expected_positives(Y), n=n, n_labels=int(Y.shape[1]), percentiles=(lo_p, hi_p),
                     intervals=intervals)


def training_labels(source, *, data_root=None) -> tuple[np.ndarray, str]:
    """The full training labels of ``source`` (a prepared bundle folder, a dataset name or
    a data file/folder) and a name saying where they come from; a one-line
    :class:`~spmlkit.errors.SpmlError` when it has none (k needs fully labelled examples)."""
    if (Path(source) / "meta.json").exists():
        bundle = Bundle(source)
        Y, name = bundle.labels("train"), f"{bundle.name} (bundle {source}, training split)"
    else:
        ds = load_any(source, data_root=data_root)
        Y, name = ds.splits["train"].Y, f"{ds.name} (training split)"
    if Y is None:
        raise SpmlError(f"{source} has no full training labels; k needs fully labelled examples")
    return Y, name


def format_k_estimate(est: KEstimate, name: str = "") -> str:
    """The printed report of ``spml estimate-k``."""
    lo, hi = est.percentiles
    lines = [f"{name + ': ' if name else ''}{est.n} training examples, {est.n_labels} labels",
             f"k* = {est.k_star:.3f}  (mean positives per example over all of them; Cole Eq. A1, Table A3)",
             f"{'M':>5}  {'I_M':>16}  {'mean of k_M':>12}   ({lo:g}th / {hi:g}th percentiles of k_M over "
             f"{est.intervals[0].trials if est.intervals else 0} draws of M examples without replacement)"]
    for i in est.intervals:
        lines.append(f"{i.m:>5}  {f'({i.low:.2f}, {i.high:.2f})':>16}  {i.mean:>12.3f}")
    return "\n".join(lines)
