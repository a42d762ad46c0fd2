"""Mean average precision, as the SPML papers compute it, and diagnostics.

The papers (the authors' data preparation, elijahcole/single-positive-multi-label `preproc/`) report ``100 × mean over classes of
sklearn.metrics.average_precision_score(y[:, c], p[:, c])``.  :func:`average_precision`
computes the same per-class AP for all classes at once: one sort per column, then
cumulative sums, with tied scores grouped into one threshold exactly as scikit-learn
does (equal to it to ~1e-12; tested on random data with ties).

Classes without any positive in the evaluation set have no defined AP.  The authors'
code counts them as AP = 0 (lowering the mean); here they are **excluded** by default
(``empty="exclude"``) and the number excluded is reported; ``empty="zero"``
reproduces the authors' behaviour.

The streamed evaluation (AP and AUC from rank counts over row chunks, memory O(chunk × L))
is :mod:`spmlkit.rank_counts`, re-exported here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import rankdata, wasserstein_distance

from .errors import ConfigError, DataFormatError
from .rank_counts import _recall_hits
# re-exported: the streamed evaluation lived here
from .rank_counts import (COUNTING_POSITIVES_PER_LABEL, DENSE_SCORE_BYTES, STREAM_BLOCK_ENTRIES, RankCounts,
                          _subtract_counts, average_precision_from_counts, roc_auc_from_counts, stream_rank_counts,
                          streamed_observed_scores)


def _labels_and_scores(y_true, scores, dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """``(y, s)`` as 2-D arrays of one shape (a 1-D pair is one label), the scores finite."""
    y = np.asarray(y_true)
    s = np.asarray(scores, dtype=dtype)
    if y.ndim == 1:
        y, s = y[:, None], s[:, None]
    if y.shape != s.shape:
        raise DataFormatError(None, f"labels have shape {y.shape} but scores have shape {s.shape}")
    if not np.isfinite(s).all():
        raise DataFormatError(None, "scores contain NaN or inf")
    return y, s


def average_precision(y_true, scores) -> np.ndarray:
    """Per-class average precision.

    Parameters
    ----------
    y_true : (N, L) array of {0, 1} / bool (entries other than 1 count as negatives).
    scores : (N, L) array of real scores (probabilities or logits; only the order matters).

    Returns
    -------
    ap : (L,) float64 array; ``nan`` for classes without positives.

    Notes
    -----
    AP = Σ_k (R_k − R_{k−1}) P_k over the distinct score thresholds in decreasing order
    (scikit-learn's definition), i.e. the mean over positives of the precision at the
    lowest threshold that still admits them (the end of their tie group).

    Examples
    --------
    >>> average_precision([[1], [0], [1]], [[0.9], [0.8], [0.1]]).round(4).tolist()
    [0.8333]
    """
    y, s = _labels_and_scores(y_true, scores)
    n, L = y.shape
    if n == 0:
        return np.full(L, np.nan)
    # For a positive with score v, the precision at the end of its tie group is
    # (#positives with score >= v) / (#examples with score >= v); both counts come from
    # binary searches in sorted arrays, so one sort per column is all the work.
    yT = np.ascontiguousarray(y.T == 1)
    sT = np.ascontiguousarray(s.T)
    sorted_all = np.sort(sT, axis=1)
    ap = np.full(L, np.nan)
    for c in range(L):
        pos = np.sort(sT[c][yT[c]])
        if pos.size == 0:
            continue
        ge_all = n - np.searchsorted(sorted_all[c], pos, side="left")
        ge_pos = pos.size - np.searchsorted(pos, pos, side="left")
        ap[c] = float(np.mean(ge_pos / ge_all))
    return ap


def average_precision_torch(y_true, scores):
    """:func:`average_precision` computed where the tensors are (e.g. on a GPU), for all
    classes at once: ``y_true`` (N, L) bool/0-1 and ``scores`` (N, L) tensors on one
    device -> (L,) float64 tensor (``nan`` for classes without positives).  The same
    quantities as the NumPy version (precision at the end of each positive's tie group,
    by binary search in the sorted column), summed in another order: equal to ~1e-12.
    The CPU path of the library keeps the NumPy version."""
    s = scores if scores.dim() == 2 else scores.unsqueeze(1)
    y = (y_true if y_true.dim() == 2 else y_true.unsqueeze(1)) == 1
    if y.shape != s.shape:
        raise DataFormatError(None, f"labels have shape {tuple(y.shape)} but scores have shape {tuple(s.shape)}")
    n, L = s.shape
    if n == 0:
        return torch.full((L,), float("nan"), dtype=torch.float64, device=s.device)
    sT = s.t().contiguous().double()
    yT = y.t().contiguous()
    sorted_all = torch.sort(sT, dim=1).values
    pos_sorted = torch.sort(sT.masked_fill(~yT, float("-inf")), dim=1).values  # negatives sort first
    ge_all = n - torch.searchsorted(sorted_all, sT, side="left")
    ge_pos = n - torch.searchsorted(pos_sorted, sT, side="left")
    ratio = torch.where(yT, ge_pos.double() / ge_all.clamp_min(1).double(), torch.zeros_like(sT))
    n_pos = yT.sum(1)
    return torch.where(n_pos > 0, ratio.sum(1) / n_pos.clamp_min(1).double(),
                       torch.full_like(ratio[:, 0], float("nan")))


def mean_average_precision_members(y_true, scores, *, empty: str = "exclude") -> list[float]:
    """mAP ×100 of every member of ``scores`` (G, N, L) against ``y_true`` (N, L), computed
    on the scores' device (:func:`average_precision_torch`) and read back once."""
    if empty not in ("exclude", "zero"):
        raise ConfigError(f"empty must be 'exclude' or 'zero', got {empty!r}")
    y = torch.as_tensor(y_true, device=scores.device)
    if scores.shape[1] and not bool(torch.isfinite(scores).all()):
        raise DataFormatError(None, "scores contain NaN or inf")
    out = []
    for s in scores:
        ap = average_precision_torch(y, s) * 100.0
        missing = torch.isnan(ap)
        vals = torch.where(missing, torch.zeros_like(ap), ap)
        count = (~missing).sum() if empty == "exclude" else torch.full_like(missing.sum(), ap.numel())
        out.append(torch.where(count > 0, vals.sum() / count.clamp_min(1), torch.full_like(vals.sum(), float("nan"))))
    return torch.stack(out).tolist() if out else []


@dataclass(frozen=True)
class MapResult:
    map: float  # ×100, over the classes that count
    ap: np.ndarray  # (L,) per-class AP ×100 (nan for classes without positives)
    n_classes: int  # classes averaged
    n_empty: int  # classes without positives (excluded, or counted as 0)
    empty: str

    def __float__(self) -> float:
        return self.map


def mean_average_precision(y_true, scores, *, empty: str = "exclude", mask=None) -> MapResult:
    """mAP ×100 over classes.

    ``empty="exclude"`` (default) leaves classes without positives out of the mean;
    ``empty="zero"`` counts them as AP 0 as the authors' code does.  ``mask`` ``(N, L)``
    bool: label ``l`` is scored only on the rows where it was surveyed (presence-only data; see
    :func:`roc_auc`); None = every row.
    """
    if empty not in ("exclude", "zero"):
        raise ConfigError(f"empty must be 'exclude' or 'zero', got {empty!r}")
    ap = (average_precision(y_true, scores) if mask is None else masked_average_precision(y_true, scores, mask)) * 100.0
    missing = np.isnan(ap)
    n_empty = int(missing.sum())
    if empty == "zero":
        vals = np.where(missing, 0.0, ap)
    else:
        vals = ap[~missing]
    m = float(vals.mean()) if vals.size else float("nan")
    return MapResult(map=m, ap=ap, n_classes=int(vals.size), n_empty=n_empty, empty=empty)


def map_score(y_true, scores, *, empty: str = "exclude") -> float:
    """Shorthand for ``mean_average_precision(...).map``."""
    return mean_average_precision(y_true, scores, empty=empty).map


# ------------------------------------------------------------ observed-label criteria
def observed_positive_map(Z, scores) -> float:
    """mAP ×100 treating observed positives as positives and everything else as negative.

    The model-selection criterion for validation data without full labels:
    under single-positive observations it rewards ranking the observed positive high.
    """
    return mean_average_precision(np.asarray(Z) == 1, scores).map


def observed_positive_recall_at_k(Z, scores, k: int = 3) -> float:
    """Fraction ×100 of observed positives ranked in the top ``k`` labels of their example."""
    pos = np.asarray(Z) == 1
    return float(100.0 * _recall_hits(pos, np.asarray(scores), k) / max(pos.sum(), 1))


def label_set_scores(Y_true, Y_pred) -> dict:
    """Example-based and micro/macro F1, precision and recall of predicted label sets (×100)."""
    Y = np.asarray(Y_true, dtype=bool)
    P = np.asarray(Y_pred, dtype=bool)
    tp = (Y & P).sum()
    fp = (~Y & P).sum()
    fn = (Y & ~P).sum()
    micro_p = tp / max(tp + fp, 1)
    micro_r = tp / max(tp + fn, 1)
    micro_f1 = 2 * micro_p * micro_r / max(micro_p + micro_r, 1e-12)
    tpc = (Y & P).sum(0)
    f1c = 2 * tpc / np.maximum(Y.sum(0) + P.sum(0), 1)
    tpi = (Y & P).sum(1)
    f1i = 2 * tpi / np.maximum(Y.sum(1) + P.sum(1), 1)
    return {"micro_precision": 100 * micro_p, "micro_recall": 100 * micro_r, "micro_f1": 100 * micro_f1,
            "macro_f1": 100 * float(f1c.mean()), "example_f1": 100 * float(f1i.mean()),
            "mean_predicted_labels": float(P.sum(1).mean())}


# =====================================================================================
# Zhou et al. (2022) diagnostics: pseudo-label precision (Table 2 right), separability
# of unobserved positives and negatives (Fig. 4a), class-wise AP change (Fig. 4c).
# Figures: spmlkit.experiments.diagnostics; command: ``spml diagnose``.
# =====================================================================================
def pseudo_label_precision(kind, Y) -> dict:
    """Precision ×100 of pseudo-labels against the full labels (Zhou et al. Table 2, right).

    Parameters
    ----------
    kind : (N, L) int array: −1 negative pseudo-label, +1 positive pseudo-label, 0 none
        (``AsymmetricPseudoLabeler.pseudo_labels(g)["kind"]``).  The component never
        sees ``Y``; the precision is computed here, from its state.
    Y : (N, L) full training labels.

    Returns
    -------
    dict with ``negative`` (share of negative pseudo-labels that are true negatives,
    ×100; nan when there are none), ``n_negative``, ``positive``, ``n_positive``.

    Examples
    --------
    >>> r = pseudo_label_precision([[-1, -1], [0, 1]], [[0, 1], [0, 1]])
    >>> r["negative"], r["n_negative"], r["positive"], r["n_positive"]
    (50.0, 2, 100.0, 1)
    """
    kind = np.asarray(kind)
    Y = np.asarray(Y, dtype=bool)
    if kind.shape != Y.shape:
        raise DataFormatError(None, f"pseudo-labels have shape {kind.shape} but labels have shape {Y.shape}")
    neg, pos = kind == -1, kind == 1
    n_neg, n_pos = int(neg.sum()), int(pos.sum())
    return {"negative": 100.0 * float((neg & ~Y).sum()) / n_neg if n_neg else float("nan"), "n_negative": n_neg,
            "positive": 100.0 * float((pos & Y).sum()) / n_pos if n_pos else float("nan"), "n_positive": n_pos}


def pseudo_label_precision_by_epoch(kind, assigned_epoch, Y) -> list[dict]:
    """Cumulative pseudo-label precision after each labelling epoch.

    ``assigned_epoch`` (N, L) holds the epoch at whose end each pseudo-label was made
    (0 = none), so the state at the end of training gives the precision the run had at
    every epoch.  One dict per labelling epoch: ``epoch``, the cumulative fields of
    :func:`pseudo_label_precision` and ``new_negative`` / ``n_new_negative`` (the labels
    added at that epoch).

    >>> rows = pseudo_label_precision_by_epoch([[-1, -1]], [[2, 3]], [[0, 1]])
    >>> [(r["epoch"], r["negative"], r["new_negative"]) for r in rows]
    [(2, 100.0, 100.0), (3, 50.0, 0.0)]
    """
    kind = np.asarray(kind)
    ep = np.asarray(assigned_epoch)
    Y = np.asarray(Y, dtype=bool)
    rows = []
    for e in sorted(int(v) for v in np.unique(ep[kind != 0])):
        upto = np.where(ep <= e, kind, 0)
        row = {"epoch": e, **pseudo_label_precision(upto, Y)}
        new = pseudo_label_precision(np.where(ep == e, kind, 0), Y)
        row["new_negative"], row["n_new_negative"] = new["negative"], new["n_negative"]
        rows.append(row)
    return rows


def unobserved_wasserstein(probs, Z, Y) -> np.ndarray:
    """Per class, the 1-Wasserstein distance between the predicted probabilities of
    unobserved positives and of unobserved negatives (Zhou et al. Fig. 4a).

    ``probs`` (N, L) training-set probabilities, ``Z`` (N, L) training observations,
    ``Y`` (N, L) full labels.  Larger = the model separates the hidden positives from
    the negatives better.  ``nan`` for classes lacking either group.

    >>> unobserved_wasserstein([[0.9], [0.1], [0.2], [0.5]], [[0], [0], [0], [1]], [[1], [0], [0], [1]]).round(3).tolist()
    [0.75]
    """
    P = np.asarray(probs, dtype=np.float64)
    Z = np.asarray(Z)
    Y = np.asarray(Y, dtype=bool)
    if not (P.shape == Z.shape == Y.shape):
        raise DataFormatError(None, f"probabilities {P.shape}, observations {Z.shape} and labels {Y.shape} differ")
    out = np.full(P.shape[1], np.nan)
    unobs = Z == 0
    for c in range(P.shape[1]):
        u = P[unobs[:, c] & Y[:, c], c]
        v = P[unobs[:, c] & ~Y[:, c], c]
        if u.size and v.size:
            out[c] = wasserstein_distance(u, v)
    return out


def share_above_diagonal(x, y) -> float:
    """Fraction of points with ``y > x`` among those where both are finite (nan if none).

    >>> share_above_diagonal([0.1, 0.2, 0.3, float("nan")], [0.2, 0.1, 0.5, 0.9])
    0.6666666666666666
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    return float((y[ok] > x[ok]).mean()) if ok.any() else float("nan")


def class_ap_change(Y, scores, reference_scores) -> tuple[np.ndarray, float]:
    """Class-wise AP change ×100 of ``scores`` over ``reference_scores`` (Zhou et al. Fig. 4c).

    Returns ``(delta, share_improved)``: ``delta`` (L,) = AP(scores) − AP(reference) in
    AP points (nan for classes without positives) and the fraction of classes with a
    positive change.

    >>> d, share = class_ap_change([[1, 0], [0, 1], [1, 1]], [[0.9, 0.1], [0.1, 0.9], [0.8, 0.7]],
    ...                            [[0.1, 0.1], [0.9, 0.9], [0.8, 0.7]])
    >>> d.round(2).tolist(), share
    ([41.67, 0.0], 0.5)
    """
    a = average_precision(Y, scores)
    b = average_precision(Y, reference_scores)
    delta = 100.0 * (a - b)
    ok = np.isfinite(delta)
    return delta, float((delta[ok] > 0).mean()) if ok.any() else float("nan")


def evaluate_scores(scores, *, Y=None, Z=None, empty: str = "exclude", ks=(1, 3), mask=None) -> dict:
    """Ranking quality of ``scores`` ``(N, L)`` against full labels ``Y`` or, failing
    that, observations ``Z``.  With full labels: mAP, and per-label AUC-ROC averaged over
    labels (mean and median); ``mask`` restricts each label to its surveyed rows."""
    scores = np.asarray(scores)
    if Y is not None:
        r = mean_average_precision(Y, scores, empty=empty, mask=mask)
        a = mean_auc(Y, scores, mask)
        return {"labels": "full", "map": r.map, "n_classes": r.n_classes, "n_empty_classes": r.n_empty,
                "empty_classes": r.empty, "ap": [None if v != v else float(v) for v in r.ap],
                "auc_mean": a.mean, "auc_median": a.median, "n_auc_classes": a.n_classes,
                "auc": [None if v != v else float(v) for v in a.auc], "masked": mask is not None}
    if Z is None:
        raise ValueError("evaluate_scores needs full labels Y or observations Z")
    Z = np.asarray(Z)
    out = {"labels": "observed", "observed_map": observed_positive_map(Z, scores),
           "n_observed_positives": int((Z == 1).sum()),
           "n_classes_with_observed_positive": int((Z == 1).any(axis=0).sum())}
    for k in ks:
        out[f"observed_recall@{k}"] = observed_positive_recall_at_k(Z, scores, k)
    return out


# ------------------------------------------- masked metrics (presence-only data)
@dataclass(frozen=True)
class AucResult:
    mean: float  # mean over labels with both a positive and a negative among their surveyed entries
    median: float
    auc: np.ndarray  # (L,) per-label AUC-ROC (nan where undefined)
    n_classes: int  # labels averaged


def _check_mask(mask, shape) -> np.ndarray | None:
    if mask is None:
        return None
    m = np.asarray(mask, dtype=bool)
    if m.shape != tuple(shape):
        raise DataFormatError(None, f"label mask has shape {m.shape} but labels have shape {tuple(shape)}")
    return m


def roc_auc(y_true, scores, mask=None) -> np.ndarray:
    """Per-label area under the ROC curve, each label scored only on its **surveyed** entries.

    ``mask`` ``(N, L)`` bool (default: all True) says where label ``l`` of example ``i``
    is known: a species surveyed only at the test sites of its own group is evaluated
    there and nowhere else (the evaluation of Elith et al. 2020 and the disdat papers:
    per-species AUC on that species' own presence/absence sites).  AUC is the
    Mann-Whitney statistic ``P(s⁺ > s⁻) + ½ P(s⁺ = s⁻)`` computed from average ranks, so
    ties count one half, exactly as scikit-learn's ``roc_auc_score`` (tested).  Labels
    without a surveyed positive or a surveyed negative get ``nan``.

    >>> roc_auc([[1], [0], [1], [0]], [[0.9], [0.8], [0.1], [0.05]]).round(4).tolist()
    [0.75]
    """
    y, s = _labels_and_scores(y_true, scores, dtype=np.float64)
    m = _check_mask(mask, y.shape)
    L = y.shape[1]
    out = np.full(L, np.nan)
    for c in range(L):
        yc, sc = y[:, c] == 1, s[:, c]
        if m is not None:
            yc, sc = yc[m[:, c]], sc[m[:, c]]
        n_pos = int(yc.sum())
        n_neg = yc.size - n_pos
        if n_pos == 0 or n_neg == 0:
            continue
        ranks = rankdata(sc)  # average ranks: ties count one half
        out[c] = (ranks[yc].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    return out


def mean_auc(y_true, scores, mask=None) -> AucResult:
    """Mean and median over labels of :func:`roc_auc` (labels where it is undefined are left out)."""
    auc = roc_auc(y_true, scores, mask)
    ok = auc[~np.isnan(auc)]
    return AucResult(mean=float(ok.mean()) if ok.size else float("nan"),
                     median=float(np.median(ok)) if ok.size else float("nan"), auc=auc, n_classes=int(ok.size))


def masked_average_precision(y_true, scores, mask=None) -> np.ndarray:
    """Per-label AP (as :func:`average_precision`), label ``l`` scored only on the rows
    where ``mask[:, l]`` is True (all rows when ``mask`` is None)."""
    if mask is None:
        return average_precision(y_true, scores)
    y, s = np.asarray(y_true), np.asarray(scores)
    m = _check_mask(mask, y.shape)
    out = np.full(y.shape[1], np.nan)
    for c in range(y.shape[1]):
        out[c] = average_precision(y[m[:, c], c:c + 1], s[m[:, c], c:c + 1])[0]
    return out


def presence_background_auc(Z, scores) -> float:
    """Selection criterion for presence-only data without any absence: per
    label, the AUC of its observed presences (``Z == +1``) against the **background**
    rows (no observed label at all), averaged over labels with a presence; ×100.

    It needs no test label and no absence: it is the presence-vs-background
    discrimination that MaxEnt-style models are judged by on held-out presence records
    when no survey exists (Phillips et al. 2006, "AUC on test presences vs background")."""
    Z = np.asarray(Z)
    s = np.asarray(scores)
    bg = ~(Z != 0).any(axis=1)
    if not bg.any():
        raise ConfigError("presence_background_auc needs background rows (examples with no observed label) "
                          "in the validation split")
    return _presence_contrast_auc(Z, s, lambda pos: bg)


def _presence_contrast_auc(Z: np.ndarray, s: np.ndarray, negatives) -> float:
    """Per label with a presence and a contrast row, the AUC of its presences
    (``Z == +1``) against the rows ``negatives(presences)`` selects; mean ×100 (NaN when
    no label has both)."""
    auc = []
    for c in range(Z.shape[1]):
        pos = Z[:, c] == 1
        neg = negatives(pos)
        if not pos.any() or not neg.any():
            continue
        rows = pos | neg
        auc.append(roc_auc(pos[rows, None], s[rows, c:c + 1])[0])
    return 100.0 * float(np.mean(auc)) if auc else float("nan")


def presence_target_group_auc(Z, scores) -> float:
    """Selection criterion for presence-only data that does not reward sampling bias: per
    label, the AUC of its observed presences (``Z == +1``) against the rows observed with
    **another** label only (the "target-group background" of Phillips et al. 2009,
    *Ecological Applications* 19(1):181–197, §"Target-group background"), averaged over
    labels with a presence and a target-group row; ×100.  Rows with no observed label
    (random background) are left out.

    Presence records of every species share the observers' bias (roads, towns, reserves),
    so a model that has learnt where people record, rather than where the species lives,
    scores its presences and the other species' presences alike: about 50 here, while
    :func:`presence_background_auc` rewards it.  On any single-positive data this is the
    observed-label AUC: each example counts as a negative of the labels it was not observed
    with (biased towards 50 by unobserved positives, like ``observed_map``, but the same
    for every model compared).

    >>> Z = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [0, 0]])
    >>> presence_target_group_auc(Z, np.array([[.9, .1], [.8, .3], [.2, .7], [.1, .6], [.99, .99]]))
    100.0
    """
    Z = np.asarray(Z)
    observed = (Z == 1).any(axis=1)
    return _presence_contrast_auc(Z, np.asarray(scores), lambda pos: observed & ~pos)
