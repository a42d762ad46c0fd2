"""The one label encoding used everywhere, and the observation regimes.

Encoding
--------
``Y`` — full (true) labels, shape ``(N, L)``, dtype ``bool``: ``Y[n, i]`` is True when label
``i`` applies to example ``n``.

``Z`` — observations, shape ``(N, L)``, dtype ``int8``:

====  =========================================
 +1   observed positive
 -1   observed negative
  0   unobserved (could be positive or negative)
====  =========================================

This is Cole et al. (2021) §3's ``z ∈ {1, 0, ∅}`` with ``∅ → 0`` and ``0 → -1``, the same
codes the authors' code uses for observed labels.  Full labels are never stored as
``{0, 1}`` integers next to observations, which is the confusion behind the IUN bug
(the authors' code, elijahcole/single-positive-multi-label) and elijahcole/single-positive-multi-label#12.

Observation regimes
-------------------
A regime turns ``Y`` into ``Z`` (seeded, deterministic). All single-positive regimes
share the same kept positive for a given seed, so "1 P & all N", "1 P & 1 N" and
"1 P & 0 N" differ only in the negatives they add (as in the authors'
``generate_observed_labels.py``, which draws positives first and negatives after).

============================== ====================================================
``full``                       every positive and every negative observed
``single_positive``            one positive per example, uniform among its true
                               positives; nothing else (Cole Eq. 4, "1 P & 0 N")
``single_positive_all_negatives`` one positive + every true negative ("1 P & all N")
``single_positive_one_negative``  one positive + one true negative ("1 P & 1 N")
``partial``                    every label hidden independently with probability
                               ``hide_prob`` (Zhou et al. Fig. 5c, Durand et al.)
``single_positive_most_frequent``  one positive per example: its label that is the most
                               frequent in the training set (biased, "realistic")
``single_positive_least_frequent`` one positive per example: its rarest label
``single_positive_largest``    one positive per example: the label of its largest
                               object (needs per-label instance areas, e.g. COCO)
============================== ====================================================

Biased single positives
-----------------------
The papers keep a uniformly drawn positive.  Real single-positive data is biased
(Cole et al. §7 name it as the open problem; Arroyo et al. 2023): an annotator names
the most salient object, a web query the most common concept.  The three biased
regimes keep, per example, the true positive that is the most frequent label of the
training set (frequency = number of training examples that have it, computed on the
``Y`` passed in), the least frequent one, or the one whose largest instance covers the
largest area (``areas``: ``(N, L)`` float, the area of the largest instance of each
present label, 0 or NaN where absent; recorded by the COCO reader).  Ties are broken
uniformly at random by the positive stream's generator, so the draw is seeded like the
uniform one.  The biased regimes add no negatives.

Examples without any true positive cannot receive a single positive; callers drop
them from the training set (:func:`has_positive`) and report how many.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import ConfigError, DataFormatError, UnknownNameError
from .sparse_labels import SparseLabels, block_rows

POSITIVE: int = 1
NEGATIVE: int = -1
UNOBSERVED: int = 0


def as_full_labels(Y, *, source: str | None = None):
    """Validate full labels: a :class:`~spmlkit.sparse_labels.SparseLabels` (checked to be
    bool) is returned as it is; anything else is converted to a bool ``(N, L)`` array.

    Accepts bool arrays or numeric arrays whose values are exactly 0 or 1.  Any other
    value (2, -1, 0.5, NaN) raises :class:`DataFormatError` naming the first bad row.
    """
    if isinstance(Y, SparseLabels):
        if Y.dtype != bool:
            if Y.fill != 0 or (Y.values is not None and Y.values.size and not bool((Y.values == 1).all())):
                raise DataFormatError(source, "full labels must be 0 or 1; these hold -1 (observations?)")
            return SparseLabels(Y.indptr, Y.indices, None, n_labels=Y.n_labels, dtype=bool, check=False)
        return Y
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise DataFormatError(source, f"labels must be a 2-D (examples x labels) array, got shape {Y.shape}")
    if Y.dtype == bool:
        return Y
    if Y.dtype.kind in "iu" and (Y.size == 0 or (int(Y.min()) >= 0 and int(Y.max()) <= 1)):
        return Y.astype(bool)
    bad = ~np.isin(Y, (0, 1))
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise DataFormatError(
            source,
            f"label value {Y[row, col].item()!r} at row {row + 1}, label column {col + 1}; expected 0 or 1",
        )
    return Y.astype(bool)


def as_observations(Z, *, source: str | None = None):
    """Validate observations: a :class:`~spmlkit.sparse_labels.SparseLabels` of observations
    is returned as it is; anything else becomes an int8 ``(N, L)`` array in {-1, 0, 1}."""
    if isinstance(Z, SparseLabels):
        if Z.dtype != np.int8:
            return SparseLabels(Z.indptr, Z.indices, Z.values, n_labels=Z.n_labels, fill=Z.fill, dtype=np.int8,
                                check=False)
        return Z
    Z = np.asarray(Z)
    if Z.ndim != 2:
        raise DataFormatError(source, f"observations must be a 2-D array, got shape {Z.shape}")
    if Z.dtype == bool:
        return Z.astype(np.int8)
    if Z.dtype.kind in "iu" and (Z.size == 0 or (int(Z.min()) >= -1 and int(Z.max()) <= 1)):
        return Z.astype(np.int8)  # the common case in two passes (np.isin made wide label sets slow)
    bad = ~np.isin(Z, (-1, 0, 1))
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise DataFormatError(
            source,
            f"observation value {Z[row, col].item()!r} at row {row + 1}, label column {col + 1}; "
            "expected +1 (observed positive), -1 (observed negative) or 0 (unobserved)",
        )
    return Z.astype(np.int8)


def has_positive(Y) -> np.ndarray:
    """Boolean mask of examples with at least one true positive."""
    if isinstance(Y, SparseLabels):
        return Y.row_counts(POSITIVE) > 0
    return np.asarray(Y, dtype=bool).any(axis=1)


def positives_per_row(Y) -> np.ndarray:
    """``(N,)`` number of positives (+1 / True) in every row, dense or sparse."""
    if isinstance(Y, SparseLabels):
        return Y.row_counts(POSITIVE)
    return (np.asarray(Y) == 1).sum(axis=1)


def full_observations(Y):
    """``Z`` with every label observed: +1 where ``Y`` is True, -1 elsewhere (sparse for
    sparse ``Y``: its positives listed, everything else −1)."""
    if isinstance(Y, SparseLabels):
        return SparseLabels(Y.indptr, Y.indices, None, n_labels=Y.n_labels, fill=NEGATIVE, dtype=np.int8,
                            check=False)
    Y = np.asarray(Y, dtype=bool)
    return np.where(Y, POSITIVE, NEGATIVE).astype(np.int8)


# --------------------------------------------------------------------------- sampling
def _streams(seed: int | np.random.SeedSequence) -> tuple[np.random.Generator, ...]:
    """Independent generators for the positive draw, the negative draw and hiding.

    Using separate streams makes the kept positive identical across regimes.
    """
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return tuple(np.random.default_rng(s) for s in ss.spawn(3))


def _pick_one(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each row, the column index of one True entry chosen uniformly (-1 if none).

    Vectorised: a uniform key per entry, masked to -inf where False, then argmax.  The
    keys of a row block are the next ``rows × L`` draws of ``rng``, so drawing block after
    block gives exactly the draws of one call on the whole matrix (the regimes below are
    computed in row blocks and reproduce the seeds of the whole-matrix computation).
    """
    keys = rng.random(mask.shape)
    keys[~mask] = -1.0
    idx = keys.argmax(axis=1)
    idx[~mask.any(axis=1)] = -1
    return idx


def sample_single_positive(Y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Index of one uniformly chosen true positive per example (-1 for examples without one)."""
    return _pick_one(np.asarray(Y, dtype=bool), rng)


def _single_positive_matrix(Y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    Y = np.asarray(Y, dtype=bool)
    pos = sample_single_positive(Y, rng)
    Z = np.zeros(Y.shape, dtype=np.int8)
    rows = np.flatnonzero(pos >= 0)
    Z[rows, pos[rows]] = POSITIVE
    return Z


# Every regime maps a dense row block of Y (and of ``areas``) to the block of Z, drawing
# from the streams in row order; ``fill`` is the value its sparse form leaves unlisted.
def _regime_full(Y, streams, **_):
    return full_observations(Y)


def _regime_single_positive(Y, streams, **_):
    return _single_positive_matrix(Y, streams[0])


def _regime_single_positive_all_negatives(Y, streams, **_):
    Z = _single_positive_matrix(Y, streams[0])
    Z[~np.asarray(Y, dtype=bool)] = NEGATIVE
    return Z


def _regime_single_positive_one_negative(Y, streams, **_):
    Y = np.asarray(Y, dtype=bool)
    Z = _single_positive_matrix(Y, streams[0])
    neg = _pick_one(~Y, streams[1])
    rows = np.flatnonzero(neg >= 0)
    Z[rows, neg[rows]] = NEGATIVE
    return Z


def _pick_best(Y: np.ndarray, score: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per row, the column of a true positive with the highest ``score`` (ties uniformly at
    random by ``rng``); -1 for rows without a positive."""
    Y = np.asarray(Y, dtype=bool)
    s = np.where(Y, np.asarray(score, dtype=np.float64), -np.inf)
    best = s.max(axis=1, keepdims=True)
    return _pick_one(Y & (s == best), rng)


def _biased_single_positive(Y: np.ndarray, score: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    Y = np.asarray(Y, dtype=bool)
    pos = _pick_best(Y, score, rng)
    Z = np.zeros(Y.shape, dtype=np.int8)
    rows = np.flatnonzero(pos >= 0)
    Z[rows, pos[rows]] = POSITIVE
    return Z


def label_frequencies(Y) -> np.ndarray:
    """Number of examples having each label, ``(L,)`` int64."""
    if isinstance(Y, SparseLabels):
        return Y.col_counts(POSITIVE)
    return np.asarray(Y, dtype=bool).sum(axis=0).astype(np.int64)


def _regime_most_frequent(Y, streams, *, frequencies=None, **_):
    freq = (label_frequencies(Y) if frequencies is None else frequencies).astype(np.float64)
    return _biased_single_positive(Y, np.broadcast_to(freq, np.shape(Y)), streams[0])


def _regime_least_frequent(Y, streams, *, frequencies=None, **_):
    freq = (label_frequencies(Y) if frequencies is None else frequencies).astype(np.float64)
    return _biased_single_positive(Y, np.broadcast_to(-freq, np.shape(Y)), streams[0])


def _regime_largest(Y, streams, *, areas=None, **_):
    if areas is None:
        raise ConfigError("the 'single_positive_largest' regime needs the area of each label's largest instance "
                          "(COCO-style instance annotations: prepare the bundle from a COCO annotations file)")
    A = np.asarray(areas, dtype=np.float64)
    if A.shape != np.shape(Y):
        raise ConfigError(f"areas have shape {A.shape}; expected the labels' shape {np.shape(Y)}")
    return _biased_single_positive(Y, np.nan_to_num(A, nan=0.0), streams[0])


def _regime_partial(Y, streams, *, hide_prob: float = 0.5, **_):
    if not 0.0 <= hide_prob <= 1.0:
        raise ConfigError(f"hide_prob must be in [0, 1], got {hide_prob}")
    Z = full_observations(Y)
    Z[streams[2].random(Z.shape) < hide_prob] = UNOBSERVED
    return Z


@dataclass(frozen=True)
class Regime:
    name: str
    table_label: str  # the row-group label of Cole et al. Table 1
    needs_positive: bool  # examples without a true positive are dropped from training
    build: Callable[..., np.ndarray]
    description: str
    #: the value the sparse form of its observations leaves unlisted: 0, or -1 where (almost)
    #: every entry is an observed negative (their storage stays O(N + nnz(Y)))
    fill: int = 0


REGIMES: dict[str, Regime] = {
    r.name: r
    for r in [
        Regime("full", "All P. & All N.", False, _regime_full, "all positives and all negatives", NEGATIVE),
        Regime("single_positive_all_negatives", "1 P. & All N.", True, _regime_single_positive_all_negatives,
               "one positive and all negatives", NEGATIVE),
        Regime("single_positive_one_negative", "1 P. & 1 N.", True, _regime_single_positive_one_negative,
               "one positive and one negative"),
        Regime("single_positive", "1 P. & 0 N.", True, _regime_single_positive,
               "one positive per example, nothing else"),
        Regime("partial", "partial", False, _regime_partial,
               "each label hidden independently with probability hide_prob", NEGATIVE),
        Regime("single_positive_most_frequent", "1 P. (most frequent) & 0 N.", True, _regime_most_frequent,
               "one positive per example, its most frequent label in the training set; nothing else"),
        Regime("single_positive_least_frequent", "1 P. (least frequent) & 0 N.", True, _regime_least_frequent,
               "one positive per example, its least frequent label in the training set; nothing else"),
        Regime("single_positive_largest", "1 P. (largest object) & 0 N.", True, _regime_largest,
               "one positive per example, the label of its largest object (instance areas needed)"),
    ]
}
#: Short aliases accepted wherever a regime name is.
# ------------------------------------------------------------------ label names
#: cells that mean "no value" in a label column, never a label named so
MISSING_LABELS = frozenset({"", "NA", "N/A", "n/a", "NaN", "nan", "NULL", "null", "None", "#N/A"})
#: the text between label names in the label sets spmlkit writes (``--top-k``, label-set files)
LABEL_SET_SEPARATOR = ";"
#: the columns ``spml predict`` writes beside the labels: a label named so would repeat a header name
OUTPUT_COLUMNS = ("id", "x", "y", "labels", "probabilities")


def normalize_label(name) -> str:
    """A label name as spmlkit keeps it, the same in the CLI and the Python API: Unicode
    NFC (a composed ``é`` and ``e`` + combining accent are one name) with surrounding
    white space stripped (``'cat '`` is ``'cat'``).

    >>> normalize_label(" cafe\u0301 ") == normalize_label("caf\u00e9")
    True
    """
    return unicodedata.normalize("NFC", str(name)).strip()


def check_label_names(names, source=None) -> None:
    """One-line :class:`DataFormatError` (naming ``source``) for label names that could
    not mean one thing in spmlkit's outputs: a name holding the label-set separator
    (``;``: ``--top-k`` output would be ambiguous), a name of a column predictions are
    written beside (``id``, ``x``, ``y``, ...), or a missing-value marker (``NA``)."""
    for n in names:
        n = str(n)
        if LABEL_SET_SEPARATOR in n:
            raise DataFormatError(source, f"label {n!r} contains {LABEL_SET_SEPARATOR!r}, which separates the labels "
                                          "of a set in spmlkit's outputs (--top-k, label-set files); rename the label")
        if n in OUTPUT_COLUMNS:
            raise DataFormatError(source, f"a label is named {n!r}, as a column predictions are written beside "
                                          f"({', '.join(OUTPUT_COLUMNS)}); rename the label (e.g. '{n}_label')")
        if n in MISSING_LABELS:
            raise DataFormatError(source, f"a label is named {n!r}, a missing-value marker; leave the cell empty for "
                                          "no label, or rename the label")


REGIME_ALIASES = {
    "1p": "single_positive",
    "1p0n": "single_positive",
    "1p+alln": "single_positive_all_negatives",
    "1palln": "single_positive_all_negatives",
    "1p+1n": "single_positive_one_negative",
    "1p1n": "single_positive_one_negative",
    "1p-frequent": "single_positive_most_frequent",
    "1p-rare": "single_positive_least_frequent",
    "1p-largest": "single_positive_largest",
}


def get_regime(name: str) -> Regime:
    key = REGIME_ALIASES.get(name, name)
    try:
        return REGIMES[key]
    except KeyError:
        raise UnknownNameError("observation regime", name, list(REGIMES) + list(REGIME_ALIASES)) from None


def observe(Y, regime: str = "single_positive", *, seed: int | np.random.SeedSequence = 0,
            hide_prob: float = 0.5, areas=None, rows_per_block: int | None = None):
    """Simulate observations ``Z`` from full labels ``Y`` under ``regime``.

    Parameters
    ----------
    Y : (N, L) array of 0/1 or bool, or :class:`~spmlkit.sparse_labels.SparseLabels`
        Full labels.
    regime : str
        One of :data:`REGIMES` (or an alias such as ``"1p"``).
    seed : int or SeedSequence
        Seeds three independent streams (positives, negatives, hiding); the kept positive
        is therefore the same in every single-positive regime for one seed.
    hide_prob : float
        Hiding probability of the ``partial`` regime.
    areas : (N, L) float array, optional
        Area of each present label's largest instance (``single_positive_largest`` only).
    rows_per_block : int, optional
        Rows drawn at a time (memory O(block × L)); the draws, and so ``Z``, do not depend
        on it.

    Returns
    -------
    Z : observations in {-1, 0, +1}: a :class:`~spmlkit.sparse_labels.SparseLabels` when
        ``Y`` is one, else an int8 ``(N, L)`` array.  Rows of examples without a true
        positive have no +1 under the single-positive regimes.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 1, 0], [0, 1, 0]], dtype=bool)
    >>> Z = observe(Y, "single_positive", seed=0)
    >>> (Z == 1).sum(axis=1).tolist(), bool(((Z == 1) <= Y).all())
    ([1, 1], True)
    >>> from spmlkit.sparse_labels import SparseLabels
    >>> np.array_equal(observe(SparseLabels.from_dense(Y), "single_positive", seed=0).dense(), Z)
    True
    """
    sparse = isinstance(Y, SparseLabels)
    Y = as_full_labels(Y)
    spec = get_regime(regime)
    streams = _streams(seed)
    n, L = Y.shape
    step = rows_per_block or block_rows(L)
    kw = {"hide_prob": hide_prob}
    if spec.name in ("single_positive_most_frequent", "single_positive_least_frequent"):
        kw["frequencies"] = label_frequencies(Y)  # over the whole training set, not the block
    if spec.name == "single_positive_largest" and areas is not None and np.shape(areas) != (n, L):
        raise ConfigError(f"areas have shape {np.shape(areas)}; expected the labels' shape {(n, L)}")
    blocks = []
    for s in range(0, n, step):
        rows = slice(s, min(s + step, n))
        Yb = Y.dense(rows) if sparse else Y[rows]
        Zb = spec.build(Yb, streams, areas=None if areas is None else np.asarray(areas[rows]), **kw)
        blocks.append(SparseLabels.from_dense(Zb, fill=spec.fill) if sparse else Zb)
    if not blocks:
        empty = np.zeros((0, L), dtype=np.int8)
        return SparseLabels.from_dense(empty, fill=spec.fill) if sparse else empty
    if sparse:
        return SparseLabels.vstack(blocks) if len(blocks) > 1 else blocks[0]
    return np.concatenate(blocks) if len(blocks) > 1 else blocks[0]


def label_stats(Y) -> dict:
    """Counts that describe a full label matrix (used by ``spml datasets`` and reports)."""
    if isinstance(Y, SparseLabels):
        card, per_label = Y.row_counts(POSITIVE), Y.col_counts(POSITIVE)
    else:
        Y = np.asarray(Y, dtype=bool)
        card, per_label = Y.sum(axis=1), Y.sum(axis=0)
    return {
        "examples": int(len(card)),
        "labels": int(len(per_label)),
        "cardinality": float(card.mean()) if len(card) else float("nan"),
        "min_positives": int(card.min()) if len(card) else 0,
        "max_positives": int(card.max()) if len(card) else 0,
        "without_positive": int((card == 0).sum()),
        "labels_without_positive": int((per_label == 0).sum()),
    }


def observation_stats(Z) -> dict:
    if isinstance(Z, SparseLabels):
        pos = Z.row_counts(POSITIVE)
        return {"examples": int(len(Z)), "observed_positives": int(pos.sum()),
                "observed_negatives": Z.count(NEGATIVE), "unobserved": Z.count(UNOBSERVED),
                "examples_without_observed_positive": int((pos == 0).sum())}
    Z = np.asarray(Z)
    return {
        "examples": int(Z.shape[0]),
        "observed_positives": int((Z == POSITIVE).sum()),
        "observed_negatives": int((Z == NEGATIVE).sum()),
        "unobserved": int((Z == UNOBSERVED).sum()),
        "examples_without_observed_positive": int((~(Z == POSITIVE).any(axis=1)).sum()),
    }


def expected_positives(Y) -> float | None:
    """k, the mean number of positives per example over the given fully labelled
    examples (Cole et al. 2021, appendix B, Eq. A1); ``None`` for no examples.  The one
    place k is computed from labels (methods, label-set rules and the bootstrap of
    :mod:`spmlkit.practitioner.estimate_k` all use it).

    >>> expected_positives([[1, 1, 0], [0, 1, 0]])
    1.5
    """
    if Y is None or len(Y) == 0:
        return None
    if isinstance(Y, SparseLabels):
        return float(Y.row_counts(POSITIVE).mean())
    return float((np.asarray(Y) == 1).sum(axis=1).mean())


#: The order of regime row groups in tables (Cole et al. Table 1: full labels first).
REGIME_ORDER = ("full", "single_positive_all_negatives", "single_positive_one_negative", "single_positive")


def regime_sort_key(regime: str) -> tuple:
    """Sort key of a regime name for tables: :data:`REGIME_ORDER`, then registration order."""
    return (REGIME_ORDER.index(regime) if regime in REGIME_ORDER else len(REGIME_ORDER),
            list(REGIMES).index(regime) if regime in REGIMES else 99, regime)
