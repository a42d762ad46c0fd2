"""From per-label probabilities to label sets.

A trained SPML model scores every label; a practitioner wants the *set* of labels of
each input.  This module turns an ``(N, L)`` probability matrix ``P`` into an ``(N, L)``
bool matrix ``S`` (``S[n, i]`` = label ``i`` is in the set of example ``n``).  Pure numpy;
data arguments positional, options keyword-only.

Rules
-----
============== ==================================================================
``threshold``  ``P >= threshold`` (default 0.5); ``threshold`` may also be an
               ``(L,)`` array
``top_k``      the ``k`` highest-scoring labels of each example
``expected_k`` the top ``round(k)`` labels of each example, with ``k`` the expected
               number of positives per example (Cole et al. 2021, §5.3) — given,
               or estimated with Eq. A1 (appendix B) by :func:`estimate_k`
``per_label``  one threshold per label, tuned to maximise that label's F1 on a fully
               labelled validation set (:func:`tune_label_thresholds`)
============== ==================================================================

The default rule of a newly trained model (:func:`default_rule`)
-----------------------------------------------------------------
Single-positive training is not calibrated: ``threshold`` 0.5 gives nearly empty sets
for assume-negative training and nearly full sets for EM-style losses (measured in
``docs/practitioner.md``).  Ranking the labels of one example is what every method
learns, so the default is ``expected_k``, with ``k``

1. given by the user (``--k`` / ``expected_positives``), or Eq. A1 on full labels
   (simulated bundles, a fully labelled ``--val-file``);
2. otherwise estimated from the observations alone by :func:`estimate_k_observed`:
   ``k̂ = 1 / observed recall@1`` on held-out single positives.

With a fully labelled validation split :func:`choose_rule` picks among the candidates
by validation example-F1 instead.  :func:`label_set_warning` flags sets whose mean size
is more than :data:`WARN_SIZE_RATIO` times away from the estimated ``k`` or that are
mostly empty; the Python API raises it as a :class:`LabelSetWarning`.

Every rule can be combined with ``min_labels``: the ``min_labels`` highest-scoring
labels are always kept (an SPML example has at least one positive by construction,
so ``min_labels=1`` never returns an empty set).

Ties: ``top_k`` / ``expected_k`` keep the *lower label index* among equal scores
(a stable sort), so results never depend on the platform's sort.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from ..errors import ConfigError, DataFormatError, UnknownNameError
from ..labels import expected_positives
from ..metrics import label_set_scores
from ..sparse_labels import as_sparse
from ..training.scores import top_k_rows
from .logit_sets import logit_cut, proba, top_logit_mask, top_logit_total

RULES = ("threshold", "top_k", "expected_k", "per_label")
DEFAULT_THRESHOLD = 0.5
#: :func:`label_set_warning` fires when the mean set size is more than this factor away
#: from the estimated k (either way) ...
WARN_SIZE_RATIO = 2.0
#: ... or when more than this share of the sets is empty
WARN_EMPTY_SHARE = 0.5


class LabelSetWarning(UserWarning):
    """Predicted label sets look implausible: their mean size is far from the expected
    number of labels per example k, or most of them are empty (see :func:`label_set_warning`)."""


def _as_scores(P, name: str = "probabilities") -> np.ndarray:
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2:
        raise DataFormatError(None, f"{name} must be a 2-D (examples x labels) array, got shape {P.shape}")
    if not np.isfinite(P).all():
        r = int(np.argwhere(~np.isfinite(P))[0, 0])
        raise DataFormatError(None, f"{name} contain NaN or inf (row {r + 1})")
    return P


def round_k(k: float) -> int:
    """``k`` rounded half up (1.5 -> 2, 2.5 -> 3; Python's ``round`` would give 2 for both)."""
    if k is None or not math.isfinite(k) or k < 0:
        raise ConfigError(f"k must be a finite number >= 0, got {k!r}")
    return int(math.floor(k + 0.5))


def _top_mask(P: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Keep the ``counts[n]`` highest entries of row ``n`` (ties: lower label index first),
    by partial selection (O(L) per row; a stable descending sort's first ``counts[n]``)."""
    N, L = P.shape
    counts = np.clip(np.asarray(counts, dtype=np.int64), 0, L)
    out = np.zeros((N, L), dtype=bool)
    kmax = int(counts.max()) if N else 0
    if kmax == 0:
        return out
    idx, _ = top_k_rows(P, kmax)
    keep = np.arange(kmax)[None, :] < counts[:, None]
    rows = np.broadcast_to(np.arange(N)[:, None], idx.shape)
    out[rows[keep], idx[keep]] = True
    return out


def threshold_sets(P, *, threshold=DEFAULT_THRESHOLD) -> np.ndarray:
    """``P >= threshold``; ``threshold`` is a scalar or one value per label ``(L,)``.

    >>> threshold_sets([[0.7, 0.2, 0.5]]).tolist()
    [[True, False, True]]
    """
    P = _as_scores(P)
    t = np.asarray(threshold, dtype=np.float64)
    if t.ndim not in (0, 1) or (t.ndim == 1 and t.shape[0] != P.shape[1]):
        raise ConfigError(f"threshold must be a number or one value per label ({P.shape[1]}), got shape {t.shape}")
    return P >= t


def top_k_sets(P, *, k: int = 1) -> np.ndarray:
    """The ``k`` highest-scoring labels of each example.

    >>> top_k_sets([[0.1, 0.9, 0.5], [0.3, 0.3, 0.2]], k=1).astype(int).tolist()
    [[0, 1, 0], [1, 0, 0]]
    """
    P = _as_scores(P)
    if int(k) != k or k < 0:
        raise ConfigError(f"top-k needs a whole number k >= 0, got {k!r}")
    return _top_mask(P, np.full(P.shape[0], int(k)))


def expected_k_sets(P, *, k: float, per: str = "example") -> np.ndarray:
    """Label sets whose size matches ``k``, the expected number of positives per example.

    ``per="example"`` (default): every example keeps its top ``round(k)`` labels
    (half up, at least 1 when ``k > 0``).  Predictions of one example never depend on
    the others, so this is the rule used for prediction.

    ``per="batch"``: keep the ``round(k · N)`` highest scores of the whole matrix, so
    set sizes vary between examples and their *mean* is ``k`` — the batch-level reading
    of k in Cole et al. §5.3 ("some images will have more than k positive labels and
    some will have fewer").  Its output for one example depends on the rest of ``P``;
    use it on a whole collection, not one input at a time.

    >>> expected_k_sets([[0.9, 0.8, 0.1], [0.2, 0.6, 0.7]], k=1.5).astype(int).tolist()
    [[1, 1, 0], [0, 1, 1]]
    >>> expected_k_sets([[0.9, 0.8, 0.1], [0.2, 0.6, 0.7]], k=1.5, per="batch").astype(int).tolist()
    [[1, 1, 0], [0, 0, 1]]
    """
    P = _as_scores(P)
    N, L = P.shape
    if per == "example":
        n = round_k(k)
        if k > 0:
            n = max(n, 1)
        return _top_mask(P, np.full(N, n))
    if per == "batch":
        total = min(round_k(k * N), N * L)
        flat = P.reshape(-1)
        order = np.argsort(-flat, kind="stable")
        keep = np.zeros(N * L, dtype=bool)
        keep[order[:total]] = True
        return keep.reshape(N, L)
    raise ConfigError(f"per must be 'example' or 'batch', got {per!r}")


def estimate_k(Y=None, *, Z=None) -> float:
    """The expected number of positives per example, k (Cole et al. 2021, appendix B, Eq. A1).

    ``k̂_M = (1/M) Σ_n Σ_i y_ni`` over ``M`` fully labelled examples ``Y``.  Cole et al.
    show that ``M = 5`` examples already give a k for which ROLE performs like with the
    true k (their Table A2 / Figure A1), so a small fully labelled file is enough.

    Without full labels, observations ``Z`` can serve only through their **fully
    observed rows** (no 0 entry): such a row is a fully labelled example, and Eq. A1 is
    applied to them.  Single-positive rows say nothing about k (every row has exactly
    one observed positive by construction), so when no row is fully observed this
    raises :class:`ConfigError` asking for k or a fully labelled file.  Fully observed
    rows are only representative if which rows got full annotation does not depend on
    their labels.

    >>> estimate_k([[1, 1, 0], [0, 1, 0]])
    1.5
    >>> estimate_k(Z=[[1, -1, -1], [1, 0, 0], [1, 1, -1]])   # rows 1 and 3 are fully observed
    1.5
    """
    if Y is not None:
        Y = np.asarray(Y)
        if Y.ndim != 2 or len(Y) == 0:
            raise ConfigError("estimating k needs a non-empty (examples x labels) matrix of full labels")
        return expected_positives(Y)
    if Z is None:
        raise ConfigError("estimate_k needs full labels Y or observations Z")
    Z = np.asarray(Z)
    full_rows = (Z != 0).all(axis=1)
    if not full_rows.any():
        raise ConfigError("k cannot be estimated from these observations: no example has every label observed "
                          "(single positives say nothing about how many labels an example has); give k, or a small "
                          "fully labelled file (Cole et al. appendix B: 5 examples are enough)")
    return expected_positives(Z[full_rows])


def estimate_k_observed(Z, P) -> float:
    """k estimated without full labels: ``1 / observed recall@1``.

    ``Z`` — observations ``(N, L)`` of examples the model was *not* trained on (its
    held-out validation rows), ``P`` — the model's scores for them.  Observed recall@1
    is the share of observed positives that are their example's top-scored label.
    Under uniform single-positive sampling (each true label of example ``n`` is the
    observed one with probability ``1/|y_n|``) its expectation is
    ``E[1{top label correct} / |y_n|]``.  With a correct top label that is
    ``E[1/|y_n|]``, whose inverse is the harmonic mean of the set sizes (at most the
    mean k); a wrong top label lowers the recall and raises the estimate, so the two
    errors pull in opposite directions.  Only the *ranking within an example* enters,
    which every method learns whether or not its probabilities are calibrated.  It
    overestimates k when the model ranks poorly (measured in docs/practitioner.md).
    The result is clipped to ``[1, L]``; with no observed positive in ``Z`` it raises
    :class:`ConfigError`.

    >>> estimate_k_observed([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]],
    ...                     [[.9, .8, .1], [.9, .8, .1], [.1, .2, .3], [.3, .4, .5]])   # 2 of 4 on top
    2.0
    """
    P = _as_scores(P, "scores")
    Z = np.asarray(Z)
    if Z.shape != P.shape:
        raise DataFormatError(None, f"observations have shape {Z.shape} but scores have shape {P.shape}")
    pos = Z == 1
    if not pos.any():
        raise ConfigError("k cannot be estimated: the observations hold no observed positive")
    top = _top_mask(P, np.ones(len(P), dtype=np.int64))
    recall = float((top & pos).sum()) / float(pos.sum())
    L = P.shape[1]
    return float(L) if recall <= 0 else float(min(max(1.0 / recall, 1.0), L))


def estimate_k_observed_streamed(Z, chunks) -> float:
    """:func:`estimate_k_observed` from float32 logit blocks (``chunks()`` yields
    ``(start, (b, L))``): each row's top label, that of highest probability (the first
    on ties, as the stable sort there), found on the logits (:func:`~spmlkit.practitioner.logit_sets.top_logit_mask`:
    equal to the argmax of ``expit(float64(logits))``, without that float64 block),
    never a sort; ``Z`` dense or sparse.  Memory O(block × L)."""
    pos = as_sparse(Z, dtype=np.int8).positives()
    n_pos = pos.count(1)
    if not n_pos:
        raise ConfigError("k cannot be estimated: the observations hold no observed positive")
    hits, L = 0, pos.n_labels
    for start, block in chunks():
        X = np.asarray(block.detach().cpu().numpy() if hasattr(block, "detach") else block)
        if not np.isfinite(X).all():
            raise DataFormatError(None, "scores contain NaN or inf")
        top = top_logit_mask(X.astype(np.float32, copy=False), np.ones(len(X), dtype=np.int64))
        rows = np.arange(start, start + len(X))
        hits += int((pos.dense(rows) & top).sum())
    recall = hits / float(n_pos)
    return float(L) if recall <= 0 else float(min(max(1.0 / recall, 1.0), L))


def default_rule(*, k: float | None = None, k_source: str | None = None, Z=None, P=None,
                 where: str = "held-out") -> dict:
    """The default label-set rule of a model trained without a fully labelled validation
    split (see the module docstring): ``expected_k`` with the known ``k`` (and where it
    came from, ``k_source``), else with :func:`estimate_k_observed` on observations ``Z``
    and scores ``P`` (``where`` describes those rows), else — nothing to estimate k
    from — the top label only (``top_k``, k = 1: every example has a positive)."""
    if k is not None:
        k = float(k)
        return {"rule": "expected_k", "k": k, "k_estimate": k, "k_source": k_source or "given"}
    if Z is not None and P is not None and len(Z) and (np.asarray(Z) == 1).any():
        k_hat = estimate_k_observed(Z, P)
        return {"rule": "expected_k", "k": k_hat, "k_estimate": k_hat,
                "k_source": f"1 / observed recall@1 on {len(Z)} {where} example(s), no full labels"}
    return {"rule": "top_k", "k": 1, "k_source": None}


def rule_k_estimate(spec: dict) -> float | None:
    """The expected number of labels per example recorded in a rule ``spec`` (None if unknown)."""
    if spec.get("k_estimate") is not None:
        return float(spec["k_estimate"])
    if spec.get("rule") != "top_k" and spec.get("k") is not None:
        return float(spec["k"])
    return None


def label_set_warning(S, k: float | None = None) -> str | None:
    """A one-line message when label sets ``S`` ``(N, L)`` look implausible, else None.

    Fires when the mean set size is more than :data:`WARN_SIZE_RATIO` (2) times larger or
    smaller than ``k`` (the known or estimated expected number of labels per example;
    skipped when None) or when more than :data:`WARN_EMPTY_SHARE` (50%) of the sets are
    empty.

    >>> label_set_warning([[True, True, True, True]], k=1.5)[:92]
    'label sets look implausible: 4.00 labels per example on average against an expected k = 1.50'
    >>> label_set_warning([[True, False], [False, True]], k=1.0) is None
    True
    """
    S = np.asarray(S, dtype=bool)
    if S.ndim != 2 or len(S) == 0:
        return None
    return label_set_stats_warning(float(S.sum(axis=1).mean()), float((~S.any(axis=1)).mean()), k)


def label_set_stats_warning(size: float, empty: float, k: float | None = None) -> str | None:
    """:func:`label_set_warning` from the mean set size ``size`` and the share of empty
    sets ``empty`` (a fraction in [0, 1])."""
    problems = []
    if k is not None and k > 0 and (size > WARN_SIZE_RATIO * k or size < k / WARN_SIZE_RATIO):
        problems.append(f"{size:.2f} labels per example on average against an expected k = {k:.2f} "
                        f"(more than {WARN_SIZE_RATIO:g}x away)")
    if empty > WARN_EMPTY_SHARE:
        problems.append(f"{100 * empty:.0f}% of the sets are empty")
    if not problems:
        return None
    return ("label sets look implausible: " + "; ".join(problems) + " — single-positive scores are not "
            "calibrated; use the expected_k rule (--threshold-rule expected_k, threshold_rule='expected_k'), give k "
            "(--k), or tune thresholds on a small fully labelled validation file")


@dataclass
class ThresholdTuning:
    """Per-label thresholds tuned on a fully labelled set (see :func:`tune_label_thresholds`)."""

    thresholds: np.ndarray  # (L,)
    f1: np.ndarray  # (L,) validation F1 ×100 at the chosen threshold (nan for labels without positives)
    n_positives: np.ndarray  # (L,) positives of each label in the tuning set
    fallback: float
    labels_without_positives: list = field(default_factory=list)  # indices with no positive to tune on

    def to_dict(self) -> dict:
        return {"thresholds": [float(t) for t in self.thresholds],
                "f1": [None if math.isnan(f) else float(f) for f in self.f1],
                "n_positives": [int(n) for n in self.n_positives], "fallback": float(self.fallback),
                "labels_without_positives": [int(i) for i in self.labels_without_positives]}


def tune_label_thresholds(Y, P, *, fallback: float = DEFAULT_THRESHOLD) -> ThresholdTuning:
    """One threshold per label maximising that label's F1 on fully labelled data.

    For label ``i`` every cut between two distinct scores is tried (predict positive
    when ``p >= t``); F1 = 2TP / (2TP + FP + FN).  The threshold returned is the
    midpoint between the lowest score kept and the next lower score (or the lowest
    score itself when every example is kept), so new examples scored between the two
    are not decided by an arbitrary side of the gap.

    Ties: among cuts with the same best F1, the one keeping the **fewest** examples
    (the highest threshold) wins — the more conservative set.

    Labels without a positive in ``Y`` have no F1 to maximise; every validation example
    predicted for them would be a false positive, so they get the threshold that
    predicts none of them — just above their highest validation score — and never less
    than ``fallback`` (the fixed rule's 0.5).  (A plain 0.5 fallback is a poor choice for
    rare labels: an assume-negative model trained on few examples leaves many of them
    near 0.5.)  They are listed in ``labels_without_positives`` so callers can report
    them; a small validation file misses rare labels, which are then predicted only when
    the model is more confident than on any validation example.

    >>> tuning = tune_label_thresholds([[1], [0], [1], [0]], [[0.9], [0.7], [0.6], [0.2]])
    >>> float(tuning.thresholds[0]), float(tuning.f1[0])
    (0.4, 80.0)
    """
    P = _as_scores(P)
    Y = np.asarray(Y)
    if Y.shape != P.shape:
        raise DataFormatError(None, f"labels have shape {Y.shape} but probabilities have shape {P.shape}")
    Y = Y == 1
    N, L = P.shape
    thresholds = np.full(L, float(fallback))
    f1 = np.full(L, np.nan)
    n_pos = Y.sum(axis=0)
    empty = []
    for i in range(L):
        if n_pos[i] == 0:
            empty.append(i)
            if N:
                thresholds[i] = max(float(fallback), float(np.nextafter(P[:, i].max(), np.inf)))
            continue
        order = np.argsort(-P[:, i], kind="stable")
        s, y = P[order, i], Y[order, i]
        tp = np.cumsum(y)
        fp = np.cumsum(~y)
        last_of_group = np.r_[s[1:] != s[:-1], True]  # a cut is only possible after a whole tie group
        idx = np.flatnonzero(last_of_group)
        f = 2 * tp[idx] / (2 * tp[idx] + fp[idx] + (n_pos[i] - tp[idx]))
        best = int(np.flatnonzero(f == f.max())[0])  # first = fewest kept = highest threshold
        cut = idx[best]
        thresholds[i] = s[cut] if cut == N - 1 else 0.5 * (s[cut] + s[cut + 1])
        f1[i] = 100.0 * f[best]
    return ThresholdTuning(thresholds=thresholds, f1=f1, n_positives=n_pos, fallback=float(fallback),
                           labels_without_positives=empty)


def choose_rule(Y, P, *, k: float | None = None, folds: int = 5, seed: int = 0,
                fallback: float = DEFAULT_THRESHOLD) -> tuple[dict, list[dict]]:
    """Pick the label-set rule for a model from a fully labelled validation set.

    Candidates: ``threshold`` 0.5; ``threshold`` 0.5 keeping at least the top label;
    ``expected_k`` with ``k`` (when known); ``per_label`` thresholds, with and without
    the top label kept.  Each is scored by the **example-based F1** of its sets on
    ``Y`` (label sets are used one image at a time).  Per-label thresholds are fitted
    on the same data, so they are scored **out of fold** (``folds``-fold, seeded: tuned
    on the other folds, applied to the held-out one) — scoring them in-sample would
    always favour them; on a small validation file they overfit (a label with one
    validation positive ranked tenth gets a threshold low enough to admit nine
    negatives).  The best candidate wins, ties to the earlier (simpler) one.

    Returns ``(spec, table)``: the chosen rule as :func:`label_sets` keywords — always
    with the per-label ``thresholds`` tuned on all of ``Y`` (and their ``tuning``
    summary) so ``per_label`` can be asked for later, and ``k`` when known — and one row
    per candidate with its validation example-F1 (also stored as ``spec["choice"]``).
    """
    P = _as_scores(P)
    Y = np.asarray(Y) == 1
    N = len(Y)
    rows: list[tuple[dict, np.ndarray]] = []
    rows.append(({"rule": "threshold", "threshold": fallback}, label_sets(P, threshold=fallback)))
    rows.append(({"rule": "threshold", "threshold": fallback, "min_labels": 1},
                 label_sets(P, threshold=fallback, min_labels=1)))
    if k is not None:
        rows.append(({"rule": "expected_k", "k": float(k)}, label_sets(P, rule="expected_k", k=k)))
    tuning = tune_label_thresholds(Y, P, fallback=fallback)
    n_folds = min(int(folds), N)
    if n_folds >= 2:
        fold = np.random.default_rng(seed).permutation(N) % n_folds
        oof = np.zeros_like(Y)
        for f in range(n_folds):
            t = tune_label_thresholds(Y[fold != f], P[fold != f], fallback=fallback).thresholds
            oof[fold == f] = P[fold == f] >= t
        top = _top_mask(P, np.ones(N, dtype=np.int64))
        spec = {"rule": "per_label", "thresholds": tuning.thresholds.tolist(), "tuning": tuning.to_dict()}
        rows.append((spec, oof))
        rows.append(({**spec, "min_labels": 1}, oof | top))
    table = []
    best, best_f1 = None, -1.0
    for spec, S in rows:
        f1 = float(label_set_scores(Y, S)["example_f1"])
        table.append({**{k_: v for k_, v in spec.items() if k_ not in ("thresholds", "tuning")},
                      "example_f1": f1, "out_of_fold": spec["rule"] == "per_label"})
        if f1 > best_f1:
            best, best_f1 = spec, f1
    chosen = {k_: v for k_, v in best.items() if k_ not in ("thresholds", "tuning")}
    chosen["thresholds"] = tuning.thresholds.tolist()
    chosen["tuning"] = {k_: v for k_, v in tuning.to_dict().items() if k_ != "thresholds"}
    if k is not None:
        chosen.setdefault("k", float(k))
    chosen["choice"] = table
    return chosen, table


def label_sets(P, *, rule: str = "threshold", threshold=DEFAULT_THRESHOLD, k: float | None = None,
               thresholds=None, min_labels: int = 0, per: str = "example") -> np.ndarray:
    """Apply one of :data:`RULES` to probabilities ``P`` ``(N, L)`` -> bool ``(N, L)``.

    ``threshold``: the ``threshold`` rule's cut.  ``k``: the number of labels of
    ``top_k`` (a whole number) or the expected positives of ``expected_k``.
    ``thresholds``: ``(L,)`` per-label cuts of ``per_label``.  ``min_labels``: always keep
    at least this many top labels.  ``per``: see :func:`expected_k_sets`.
    """
    P = _as_scores(P)
    if rule == "threshold":
        S = threshold_sets(P, threshold=threshold)
    elif rule == "top_k":
        if k is None:
            raise ConfigError("the top_k rule needs k (--k)")
        S = top_k_sets(P, k=k)
    elif rule == "expected_k":
        if k is None:
            raise ConfigError("the expected_k rule needs k, the expected number of labels per example (--k), "
                              "or a model trained with a fully labelled validation file to estimate it from")
        S = expected_k_sets(P, k=k, per=per)
    elif rule == "per_label":
        if thresholds is None:
            raise ConfigError("the per_label rule needs per-label thresholds, tuned on a fully labelled validation "
                              "set (this model has none: train with a bundle whose validation split has full labels, "
                              "e.g. 'spml prepare ... --val-file FILE')")
        S = threshold_sets(P, threshold=np.asarray(thresholds, dtype=np.float64))
    else:
        raise UnknownNameError("threshold rule", rule, RULES)
    if min_labels:
        S = S | _top_mask(P, np.full(P.shape[0], int(min_labels)))
    return S


def apply_rule(P, spec: dict, **overrides) -> np.ndarray:
    """:func:`label_sets` with options from a stored rule ``spec`` (a saved model's
    ``label_sets``), overridden by the non-None keyword arguments."""
    opts = {k: v for k, v in spec.items() if k in ("rule", "threshold", "k", "thresholds", "min_labels", "per")}
    opts.update({k: v for k, v in overrides.items() if v is not None})
    return label_sets(P, **opts)


def _as_logits(X) -> np.ndarray:
    """A model's ``(N, L)`` float32 logits, checked as :func:`_as_scores` checks probabilities."""
    X = np.asarray(X)
    if X.dtype != np.float32:
        raise DataFormatError(None, f"logits must be float32 (a model's), got {X.dtype}")
    if X.ndim != 2:
        raise DataFormatError(None, f"logits must be a 2-D (examples x labels) array, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise DataFormatError(None, f"logits contain NaN or inf (row {int(np.argwhere(~np.isfinite(X))[0, 0]) + 1})")
    return X


def label_sets_from_logits(X, *, rule: str = "threshold", threshold=DEFAULT_THRESHOLD, k: float | None = None,
                           thresholds=None, min_labels: int = 0, per: str = "example") -> np.ndarray:
    """:func:`label_sets` of the probabilities ``expit(float64(X))`` of float32 logits
    ``X``, computed on the logits (exactly equal; no float64 block)."""
    X = _as_logits(X)
    N, L = X.shape
    if rule in ("threshold", "per_label"):
        cut = thresholds if rule == "per_label" else threshold
        if rule == "per_label" and thresholds is None:
            return label_sets(np.zeros((0, L)), rule=rule, thresholds=None)  # its one-line refusal
        t = np.asarray(cut, dtype=np.float64)
        if t.ndim not in (0, 1) or (t.ndim == 1 and t.shape[0] != L):
            raise ConfigError(f"threshold must be a number or one value per label ({L}), got shape {t.shape}")
        S = X >= logit_cut(t)
    elif rule == "top_k":
        if k is None or int(k) != k or k < 0:
            return label_sets(np.zeros((0, L)), rule=rule, k=k)  # its one-line refusal
        S = top_logit_mask(X, np.full(N, int(k)))
    elif rule == "expected_k":
        if k is None or per not in ("example", "batch"):
            return label_sets(np.zeros((0, L)), rule=rule, k=k, per=per)  # its one-line refusal
        if per == "example":
            S = top_logit_mask(X, np.full(N, max(round_k(k), 1) if k > 0 else round_k(k)))
        else:
            S = top_logit_total(X, min(round_k(k * N), N * L))
    else:
        raise UnknownNameError("threshold rule", rule, RULES)
    if min_labels:
        S = S | top_logit_mask(X, np.full(N, int(min_labels)))
    return S


def model_rule_spec(model, rule: str | None = None) -> dict:
    """The stored rule spec a prediction applies, as :meth:`SavedModel.label_sets_from_proba`
    takes it: the model's, or, when another ``rule`` is asked, only its ``k``,
    ``thresholds`` and ``min_labels``."""
    spec = dict(model.label_sets)
    if rule not in (None, spec.get("rule")):
        spec = {k: v for k, v in spec.items() if k in ("k", "thresholds", "min_labels")}
    return spec


def apply_rule_to_logits(X, spec: dict, **overrides) -> np.ndarray:
    """:func:`apply_rule` on float32 logits (:func:`label_sets_from_logits`)."""
    opts = {k: v for k, v in spec.items() if k in ("rule", "threshold", "k", "thresholds", "min_labels", "per")}
    opts.update({k: v for k, v in overrides.items() if v is not None})
    return label_sets_from_logits(X, **opts)


def top_labels_from_logits(X, k: int, *, as_float32: bool = True) -> np.ndarray:
    """The ``k`` labels of highest probability of each row, best first (ties: lower label
    index), on float32 logits ``X``; the probabilities ranked are ``expit(float64(X))``
    rounded to float32 when ``as_float32`` (as ``spml predict --top-k`` ranks them)."""
    X = _as_logits(X)
    N, L = X.shape
    k = int(min(max(k, 0), L))
    prob = (lambda f: proba(f).astype(np.float32)) if as_float32 else proba
    S = top_logit_mask(X, np.full(N, k), prob)
    rows, cols = np.nonzero(S)
    p = prob(X[rows, cols])
    order = np.lexsort((cols, -p, rows))
    return cols[order].reshape(N, k).astype(np.int64)


def format_label_sets(S, label_names, *, separator: str = ";") -> list[str]:
    """One string per example: the names of its labels joined by ``separator``.

    >>> format_label_sets([[True, False, True]], ["cat", "dog", "sofa"])
    ['cat;sofa']
    """
    S = np.asarray(S, dtype=bool)
    names = list(label_names)
    return [separator.join(names[j] for j in np.flatnonzero(row)) for row in S]


def observed_set_scores(Z, S) -> dict:
    """What predicted label sets can be checked against when only observations exist.

    * ``observed_recall`` — % of observed positives that are in the predicted set (for
      single positives: the % of examples whose one known label is predicted).  Under
      uniform single-positive sampling this is an unbiased estimate of the example-
      averaged true recall (each true positive is the observed one with probability
      1/|y_n|).
    * ``observed_negative_rate`` — % of observed negatives (−1) that are predicted, when
      the data has any (a false-positive rate on the known negatives).
    * ``mean_predicted_labels`` and ``empty_sets`` (% of examples with an empty set).

    Precision cannot be measured without full labels: an unobserved label in a set may
    be right or wrong.
    """
    Z = np.asarray(Z)
    S = np.asarray(S, dtype=bool)
    if Z.shape != S.shape:
        raise DataFormatError(None, f"observations have shape {Z.shape} but label sets have shape {S.shape}")
    pos, neg = Z == 1, Z == -1
    out = {"observed_recall": 100.0 * float((S & pos).sum()) / max(int(pos.sum()), 1),
           "observed_negative_rate": (100.0 * float((S & neg).sum()) / int(neg.sum())) if neg.any() else None,
           "mean_predicted_labels": float(S.sum(axis=1).mean()) if len(S) else 0.0,
           "empty_sets": 100.0 * float((~S.any(axis=1)).mean()) if len(S) else 0.0,
           "n_observed_positives": int(pos.sum()), "n_observed_negatives": int(neg.sum())}
    return out


def model_label_rule(*, k: float | None = None, k_source: str | None = None, Z=None, P=None,
                     where: str = "held-out", Y_val=None, P_val=None, seed: int = 0,
                     fallback: float = DEFAULT_THRESHOLD) -> dict:
    """The label-set rule a trained model gets by default: the one choice ``spml train``
    (:mod:`spmlkit.practitioner.run_folder`) and :class:`~spmlkit.practitioner.SPMLClassifier`
    make.

    With a fully labelled validation set (``Y_val``, the model's probabilities ``P_val``
    on it): the rule :func:`choose_rule` picks there (``seed`` its folds, ``fallback``
    its threshold), carrying the expected number of labels and where it came from.
    Otherwise :func:`default_rule`: expected-k with ``k`` known (``k_source`` says
    from where), else k estimated from observations ``Z`` and probabilities ``P`` of the
    rows ``where`` describes, else the top label.

    >>> model_label_rule(k=2.0, k_source="given")["rule"]
    'expected_k'
    >>> model_label_rule()["rule"]
    'top_k'
    """
    base = default_rule(k=k, k_source=k_source, Z=Z, P=P, where=where)
    if Y_val is None:
        return base
    rule, _ = choose_rule(Y_val, P_val, k=k, seed=seed, fallback=fallback)
    rule.update({key: base[key] for key in ("k_estimate", "k_source") if base.get(key) is not None})
    return rule
