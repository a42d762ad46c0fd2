"""The label-set rules' comparisons and rankings on float32 logits, exactly as on
their probabilities (:mod:`spmlkit.practitioner.labelsets` applies the rules with them).

A model's scores are float32 logits x; its probabilities are expit(float64(x)).  Every
rule compares or ranks probabilities, and the sigmoid is monotone, so each rule can be
applied to the logits themselves: a threshold t on probabilities is the cut
x >= tau with tau the smallest float32 whose probability reaches t (found by binary
search over the float32 values, once per threshold, not per entry), and a ranking of
probabilities is a ranking of logits, except where distinct logits round to one
probability (x above ~25, |x| near 0, x below ~-700): there the rules break ties by the
lower label index, as on probabilities.  The results are exactly those of the rules
on ``expit(float64(x))`` (tested on drawn logits with such ties), without a float64
(N, L) block.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..training.scores import top_k_rows

_KEY_LO, _KEY_HI = 0x00800000, 0xFF7FFFFF  # order keys of -max and +max float32 (finite values only)


def _order_keys(x: np.ndarray) -> np.ndarray:
    """float32 -> int64 keys with the same order (``-0.0`` just below ``+0.0``)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    return np.where(bits >= 0x80000000, (~bits) & 0xFFFFFFFF, bits | 0x80000000)


def _from_keys(keys: np.ndarray) -> np.ndarray:
    keys = np.asarray(keys, dtype=np.int64)
    bits = np.where(keys >= 0x80000000, keys ^ 0x80000000, (~keys) & 0xFFFFFFFF)
    return bits.astype(np.uint32).view(np.float32)


def proba(x) -> np.ndarray:
    """The probabilities of float32 logits, as :meth:`SavedModel.predictproba` computes them."""
    return expit(np.asarray(x, dtype=np.float32).astype(np.float64))


def _first_key(lo: np.ndarray, hi: np.ndarray, reached) -> np.ndarray:
    """Per entry, the smallest order key in ``[lo, hi]`` where ``reached(float32 values)``
    holds (monotone: False then True), or ``hi + 1`` where it never does."""
    lo, top = np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64) + 1
    while True:
        live = lo < top
        if not live.any():
            return lo
        mid = (lo + top) // 2
        ok = np.zeros(lo.shape, dtype=bool)
        ok[live] = reached(_from_keys(mid[live]), live)
        top = np.where(live & ok, mid, top)
        lo = np.where(live & ~ok, mid + 1, lo)


def logit_cut(threshold) -> np.ndarray:
    """float32 cut(s) ``tau`` with ``x >= tau`` exactly when ``expit(float64(x)) >= threshold``
    for every finite float32 logit ``x`` (``+inf`` where no logit reaches it)."""
    t = np.atleast_1d(np.asarray(threshold, dtype=np.float64))
    k = _first_key(np.full(t.shape, _KEY_LO), np.full(t.shape, _KEY_HI),
                   lambda f, live: proba(f) >= t[live])
    tau = np.where(k > _KEY_HI, np.float32(np.inf), _from_keys(np.minimum(k, _KEY_HI)))
    return tau.astype(np.float32).reshape(np.shape(threshold))


def _tie_class(v: np.ndarray, prob=proba) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``: the float32 range of logits whose probability (``prob``) equals that of ``v``."""
    p, kv = prob(v), _order_keys(v)
    lo = _first_key(np.full(kv.shape, _KEY_LO), kv, lambda f, live: prob(f) >= p[live])
    above = _first_key(kv, np.full(kv.shape, _KEY_HI), lambda f, live: prob(f) > p[live])
    return _from_keys(lo), _from_keys(above - 1)


def top_logit_mask(X: np.ndarray, counts: np.ndarray, prob=proba) -> np.ndarray:
    """:func:`spmlkit.practitioner.labelsets._top_mask` of ``prob(X)`` computed on the logits ``X``: each row keeps its
    ``counts[n]`` labels of highest probability, ties by lower label index."""
    N, L = X.shape
    counts = np.clip(np.asarray(counts, dtype=np.int64), 0, L)
    kmax = int(counts.max()) if N else 0
    if kmax == 0:
        return np.zeros((N, L), dtype=bool)
    _, vals = top_k_rows(X, kmax)
    lo, hi = _tie_class(vals[np.arange(N), np.maximum(counts, 1) - 1], prob)
    above = X > hi[:, None]
    tied = (X >= lo[:, None]) & ~above
    need = counts - above.sum(axis=1)
    out = above | (tied & (np.cumsum(tied, axis=1, dtype=np.int32) <= need[:, None]))
    out[counts == 0] = False
    return out


def top_logit_total(X: np.ndarray, total: int) -> np.ndarray:
    """The ``total`` entries of highest probability of the whole matrix (ties: lower flat
    index), on the logits: ``expected_k_sets(per="batch")``'s selection."""
    flat = X.reshape(-1)
    if total <= 0:
        return np.zeros(X.shape, dtype=bool)
    v = np.partition(flat, flat.size - total)[flat.size - total:flat.size - total + 1]
    lo, hi = _tie_class(v)
    above = flat > hi[0]
    tied = (flat >= lo[0]) & ~above
    need = total - int(above.sum())
    return (above | (tied & (np.cumsum(tied, dtype=np.int64) <= need))).reshape(X.shape)
