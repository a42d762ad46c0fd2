"""Streamed evaluation, memory O(chunk × L): AP and AUC of score matrices too large to
hold, from per-positive rank counts gathered over row chunks (:func:`stream_rank_counts`,
:func:`average_precision_from_counts`, :func:`roc_auc_from_counts`), and the streamed
observed-label scores (:func:`streamed_observed_scores`).  Each equals its dense twin in
:mod:`spmlkit.metrics` (tests/twins); the formulas are those of :mod:`spmlkit.metrics`
(scikit-learn's AP with tied scores grouped, AUC as the Mann-Whitney statistic).
Re-exported from :mod:`spmlkit.metrics`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import DataFormatError
from .sparse_labels import as_sparse

#: score matrices up to this many bytes are ranked whole, by the exact per-column sort
#: above; larger ones are streamed in row chunks (:func:`stream_rank_counts`)
DENSE_SCORE_BYTES = 64 * 2 ** 20
#: entries compared at a time by the direct counting pass (rows × positives)
STREAM_BLOCK_ENTRIES = 2 ** 21
#: the direct counting pass serves while positives ≤ this × labels: its cost, rows ×
#: positives comparisons, then stays under this many per scored entry (rows × labels),
#: linear in N × L, and cheaper than a binary search of ~log2(nnz) steps per entry
COUNTING_POSITIVES_PER_LABEL = 8


@dataclass(frozen=True)
class RankCounts:
    """Per positive entry of the labels (``label[e]``, the row's own score ``score[g, e]``
    for member ``g``): how many **surveyed** rows of that label score ``>=`` (``ge``) and
    ``>`` (``gt``) it; ``n_rows[l]``: the surveyed rows of label ``l``.  AP and AUC are
    functions of these integers alone (:func:`average_precision_from_counts`,
    :func:`roc_auc_from_counts`)."""

    label: np.ndarray  # (nnz,) int64
    score: np.ndarray  # (G, nnz) float32
    ge: np.ndarray  # (G, nnz) int64
    gt: np.ndarray  # (G, nnz) int64
    n_rows: np.ndarray  # (L,) int64
    n_labels: int


def _f32_order_keys(x: np.ndarray) -> np.ndarray:
    """float32 -> uint32 with the same order (finite values; −0.0 ranked as +0.0)."""
    bits = (np.asarray(x, dtype=np.float32) + np.float32(0.0)).view(np.uint32)
    return np.where(bits & np.uint32(0x80000000), ~bits, bits | np.uint32(0x80000000))


def _as_member_chunk(block) -> np.ndarray:
    a = block.detach().cpu().numpy() if hasattr(block, "detach") else np.asarray(block)
    a = a if a.ndim == 3 else a[None]
    if not np.isfinite(a).all():
        raise DataFormatError(None, "scores contain NaN or inf")
    return a.astype(np.float32, copy=False)


def stream_rank_counts(y_true, chunks, *, mask=None) -> RankCounts:
    """:class:`RankCounts` of score chunks against sparse labels, in two passes over
    ``chunks()`` (a callable returning an iterable of ``(start_row, block)``, ``block``
    ``(b, L)`` or ``(G, b, L)`` scores of rows ``start_row ..``; it is called twice, so it
    recomputes rather than stores).  Memory O(chunk × L + nnz(Y)); never ``N × L``.

    Pass 1 reads every positive's own score (its threshold).  Pass 2, when positives are
    few against the labels (at most :data:`COUNTING_POSITIVES_PER_LABEL` × L), compares
    every row with every threshold of its label (at most that many comparisons per
    entry).  Otherwise it sorts each member's thresholds once, by the keys
    ``label << 32 | order(score)``, and searches every surveyed entry of a chunk
    **into** them: an entry of label ``l`` scoring ``s`` is
    ``>=`` exactly the thresholds of ``l`` from the label's first one up to the right
    insertion point of its key (``>``: up to the left one), a range recorded in a
    difference array; one cumulative sum at the end gives ``ge``/``gt``.  Time
    O(N × L × log nnz): linear in the scored entries.  Scores are ranked as float32 (the
    model's logits); ties count exactly as in :func:`average_precision` /
    :func:`roc_auc` (the counts are integers).
    """
    Y = as_sparse(y_true, dtype=bool)
    M = None if mask is None else as_sparse(mask, dtype=bool)
    n, L = Y.shape
    if M is not None and M.shape != Y.shape:
        raise DataFormatError(None, f"label mask has shape {M.shape} but labels have shape {Y.shape}")
    P = Y.positives()
    rows_e, cols_e = P.row_of_entries(), P.indices.astype(np.int64)
    if M is not None:  # a positive is scored only where its label was surveyed
        keep = np.zeros(rows_e.size, dtype=bool)
        for s, mb in M.iter_dense():
            sel = (rows_e >= s) & (rows_e < s + len(mb))
            keep[sel] = mb[rows_e[sel] - s, cols_e[sel]]
        rows_e, cols_e = rows_e[keep], cols_e[keep]
        n_rows = M.col_counts(1)
    else:
        n_rows = np.full(L, n, dtype=np.int64)
    score = _thresholds(rows_e, cols_e, chunks, n, L)
    G, nnz = score.shape
    ge = np.zeros((G, nnz), dtype=np.int64)
    gt = np.zeros((G, nnz), dtype=np.int64)
    if nnz and nnz <= COUNTING_POSITIVES_PER_LABEL * L:
        _count_by_comparison(cols_e, score, chunks, M, ge, gt)
    elif nnz:
        for g in range(G):
            ge[g], gt[g] = _count_above(cols_e, score[g], g, chunks, M)
    return RankCounts(label=cols_e, score=score, ge=ge, gt=gt, n_rows=n_rows.astype(np.int64), n_labels=L)


def _thresholds(rows_e, cols_e, chunks, n: int, L: int) -> np.ndarray:
    """Pass 1 of :func:`stream_rank_counts`: ``(G, nnz)`` float32 scores of the entries
    ``(rows_e, cols_e)`` (rows ascending), read chunk by chunk."""
    score = None
    seen = 0
    for start, block in chunks():
        a = _as_member_chunk(block)
        if score is None:
            score = np.zeros((a.shape[0], rows_e.size), dtype=np.float32)
        if a.shape[2] != L:
            raise DataFormatError(None, f"scores have {a.shape[2]} labels but the labels have {L}")
        lo, hi = np.searchsorted(rows_e, [start, start + a.shape[1]])
        score[:, lo:hi] = a[:, rows_e[lo:hi] - start, cols_e[lo:hi]]
        seen += a.shape[1]
    if seen != n:
        raise DataFormatError(None, f"scores have {seen} rows but the labels have {n}")
    return np.zeros((1, 0), dtype=np.float32) if score is None else score


def _count_by_comparison(cols_e, score, chunks, M, ge, gt) -> None:
    """Pass 2 of :func:`stream_rank_counts` when positives are few against the labels:
    every surveyed row of a chunk compared with every positive's threshold in its label
    column (blocks of at most :data:`STREAM_BLOCK_ENTRIES` comparisons); adds into
    ``ge``/``gt`` ``(G, nnz)``."""
    nnz = cols_e.size
    step = max(1, STREAM_BLOCK_ENTRIES // nnz)
    for start, block in chunks():
        a = _as_member_chunk(block)
        mb = None if M is None else M.dense(slice(start, start + a.shape[1]))
        for r0 in range(0, a.shape[1], step):
            r1 = min(r0 + step, a.shape[1])
            ok = None if mb is None else mb[r0:r1][:, cols_e]
            for g in range(a.shape[0]):
                sub = a[g, r0:r1][:, cols_e]  # (rows, nnz): each positive's label column
                hit_ge, hit_gt = sub >= score[g][None, :], sub > score[g][None, :]
                if ok is not None:
                    hit_ge &= ok
                    hit_gt &= ok
                ge[g] += hit_ge.sum(0)
                gt[g] += hit_gt.sum(0)


def _count_above(cols_e, score_g, g: int, chunks, M) -> tuple[np.ndarray, np.ndarray]:
    """Pass 2 of :func:`stream_rank_counts` for member ``g``: per threshold, the surveyed
    rows of its label scoring ``>=`` / ``>`` it.  Only the labels with a threshold are
    read.  Each entry adds 1 on ``[first threshold of its label, insertion point)``: the
    difference array gets, once, +1 per row at each label's first threshold, and −1 per
    entry at its insertion point (accumulated over the touched span only).  An
    unsurveyed entry takes the order key 0, below every finite score: its insertion
    point is its label's first threshold, so it counts for nothing.  Each chunk is
    sorted per label (``b`` values each), which orders its keys globally."""
    nnz = cols_e.size
    tkeys = (cols_e << 32) | _f32_order_keys(score_g).astype(np.int64)
    order = np.argsort(tkeys, kind="stable")
    tsorted = tkeys[order]
    labels = np.unique(cols_e)
    first = np.searchsorted(tsorted, labels << 32, side="left")
    run_end = np.searchsorted(tsorted, tsorted, side="right")  # past each threshold's run of equal keys
    diff_ge = np.zeros(nnz + 1, dtype=np.int64)
    diff_gt = np.zeros(nnz + 1, dtype=np.int64)
    high = (labels << 32)[:, None]
    n = 0
    for start, block in chunks():
        a = _as_member_chunk(block)[g][:, labels]  # (b, labels with a threshold)
        okeys = _f32_order_keys(a)
        if M is not None:
            okeys[~M.dense(slice(start, start + a.shape[0]))[:, labels]] = 0
        okeys = np.ascontiguousarray(okeys.T)
        okeys.sort(axis=1)
        keys = (high | okeys).ravel()  # label-major, sorted within each label: ascending
        n += a.shape[0]
        left = np.searchsorted(tsorted, keys, side="left")  # thresholds < the entry: it is > them
        at = np.minimum(left, nnz - 1)
        tied = (tsorted[at] == keys) & (left < nnz)  # ... and, when it equals one, >= up to that run's end
        _subtract_counts(diff_gt, left)
        _subtract_counts(diff_ge, np.where(tied, run_end[at], left))
    for diff in (diff_ge, diff_gt):
        diff[first] += n
    ge, gt = np.empty(nnz, dtype=np.int64), np.empty(nnz, dtype=np.int64)
    ge[order], gt[order] = np.cumsum(diff_ge)[:nnz], np.cumsum(diff_gt)[:nnz]
    return ge, gt


def _subtract_counts(diff: np.ndarray, idx: np.ndarray) -> None:
    """``diff[i] -= #(idx == i)``, at a cost in ``idx``'s size and span, never ``diff``'s
    whole length per call (``idx`` ascending)."""
    if not idx.size:
        return
    lo, hi = int(idx[0]), int(idx[-1]) + 1
    if hi - lo <= 4 * idx.size:
        diff[lo:hi] -= np.bincount(idx - lo, minlength=hi - lo)
    else:
        np.subtract.at(diff, idx, 1)


def average_precision_from_counts(rc: RankCounts) -> np.ndarray:
    """``(G, L)`` AP per member and label (nan without a positive): the mean over the
    label's positives of (#positives scoring >= it) / (#rows scoring >= it) — the same
    quantities as :func:`average_precision`, so equal to it to ~1e-12."""
    G, L = rc.score.shape[0], rc.n_labels
    out = np.full((G, L), np.nan)
    if not rc.label.size:
        return out
    n_pos = np.bincount(rc.label, minlength=L)
    for g in range(G):
        order = np.lexsort((rc.score[g], rc.label))
        lab, sc = rc.label[order], rc.score[g][order]
        first_of_label = np.searchsorted(lab, lab, side="left")
        # ascending within a label: positives >= s = label end - first index of s's tie run
        new_run = np.ones(lab.size, dtype=bool)
        new_run[1:] = (lab[1:] != lab[:-1]) | (sc[1:] != sc[:-1])
        run_start = np.maximum.accumulate(np.where(new_run, np.arange(lab.size), 0))
        ge_pos = (first_of_label + n_pos[lab]) - run_start
        ratio = ge_pos / rc.ge[g][order]
        sums = np.bincount(lab, weights=ratio, minlength=L)
        has = n_pos > 0
        out[g, has] = sums[has] / n_pos[has]
    return out


def roc_auc_from_counts(rc: RankCounts) -> np.ndarray:
    """``(G, L)`` AUC-ROC per member and label over the surveyed rows (nan without both a
    positive and a negative): ``Σ_p rank(p) − P(P+1)/2`` over ``P·N⁻``, with average ranks
    ``rank(p) = #(< s_p) + (#(= s_p) + 1)/2`` — exactly :func:`roc_auc`'s statistic."""
    G, L = rc.score.shape[0], rc.n_labels
    out = np.full((G, L), np.nan)
    if not rc.label.size:
        return out
    n_pos = np.bincount(rc.label, minlength=L)
    n_neg = rc.n_rows - n_pos
    ok = (n_pos > 0) & (n_neg > 0)
    for g in range(G):
        lt = rc.n_rows[rc.label] - rc.ge[g]
        eq = rc.ge[g] - rc.gt[g]
        twice = np.bincount(rc.label, weights=(2 * lt + eq + 1).astype(np.float64), minlength=L)
        num = twice / 2.0 - n_pos * (n_pos + 1) / 2.0
        out[g, ok] = num[ok] / (n_pos[ok] * n_neg[ok])
    return out


def _recall_hits(Z_block_pos: np.ndarray, s: np.ndarray, k: int) -> int:
    """Observed positives of a row block ranked in their row's top ``k`` (as
    :func:`observed_positive_recall_at_k`, which this reproduces chunk by chunk)."""
    k = min(k, s.shape[1])
    top = np.argpartition(-s, k - 1, axis=1)[:, :k]
    return int(np.take_along_axis(Z_block_pos, top, axis=1).sum())


def streamed_observed_scores(Z, chunks, *, ks=(1, 3)) -> list[dict]:
    """:func:`evaluate_scores` against observations ``Z`` (``labels="observed"``) for every
    member of streamed scores (``chunks()`` as in :func:`stream_rank_counts`)."""
    Zs = as_sparse(Z, dtype=np.int8)
    pos = Zs.positives()
    rc = stream_rank_counts(pos, chunks)
    ap = average_precision_from_counts(rc) * 100.0
    hits = None
    for start, block in chunks():
        a = _as_member_chunk(block)
        pb = pos.dense(slice(start, start + a.shape[1]))
        if hits is None:
            hits = np.zeros((a.shape[0], len(ks)), dtype=np.int64)
        for g in range(a.shape[0]):
            for j, k in enumerate(ks):
                hits[g, j] += _recall_hits(pb, a[g], k)
    n_pos = pos.count(1)
    out = []
    for g in range(ap.shape[0]):
        row = ap[g][~np.isnan(ap[g])]
        d = {"labels": "observed", "observed_map": float(row.mean()) if row.size else float("nan"),
             "n_observed_positives": int(n_pos), "n_classes_with_observed_positive": int((pos.col_counts(1) > 0).sum())}
        for j, k in enumerate(ks):
            d[f"observed_recall@{k}"] = float(100.0 * (0 if hits is None else hits[g, j]) / max(n_pos, 1))
        out.append(d)
    return out
