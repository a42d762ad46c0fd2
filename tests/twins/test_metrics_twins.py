"""Twins of the streamed metrics: AP and AUC from rank counts
(:func:`spmlkit.metrics.stream_rank_counts` + ``*_from_counts``) and the streamed
observed-label scores, against the dense per-column computations on drawn inputs
(ties within and across labels, empty rows and labels, masks, two members, chunk sizes
1..N).  Only the public contract is compared, so any implementation of the counting
passes must pass."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from spmlkit.metrics import (average_precision_from_counts, evaluate_scores, masked_average_precision, roc_auc,
                             roc_auc_from_counts, stream_rank_counts, streamed_observed_scores)
from spmlkit.sparse_labels import SparseLabels
from tests.twins.strategies import TWIN, chunked, label_matrix, scores_for


def _assert_counts_equal_dense(Y, S, rows, mask):
    G = S.shape[0]
    rc = stream_rank_counts(SparseLabels.from_dense(Y), chunked(S, rows), mask=mask)
    ap, auc = average_precision_from_counts(rc), roc_auc_from_counts(rc)
    assert ap.shape == auc.shape == (G, Y.shape[1])
    for g in range(G):
        np.testing.assert_allclose(ap[g], masked_average_precision(Y, S[g], mask), atol=1e-12, rtol=0)
        np.testing.assert_allclose(auc[g], roc_auc(Y, S[g], mask), atol=1e-12, rtol=0)


@TWIN
@given(data=st.data(), Y=label_matrix(max_rows=40), members=st.sampled_from([1, 2]), masked=st.booleans())
def test_ap_and_auc_from_rank_counts_equal_the_dense_metrics(data, Y, members, masked):
    n, L = Y.shape
    S = data.draw(scores_for((n, L), members=members))
    rows = data.draw(st.integers(1, n))
    mask = None
    if masked:
        seed = data.draw(st.integers(0, 2 ** 32 - 1))
        mask = np.random.default_rng(seed).random((n, L)) < data.draw(st.sampled_from([0.0, 0.5, 1.0]))
    _assert_counts_equal_dense(Y, S, rows, mask)


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 6])
@pytest.mark.parametrize("members", [1, 2])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("many", [False, True])
def test_a_tie_run_ends_at_every_label_boundary(rows, members, masked, many):
    """Every positive of every label scores the same: a tie run that crossed from one
    label into the next would count the previous label's positives (the labels sorted one
    after another).  ``many``: more positives than 8 per label (the other counting pass)."""
    n, L = (30, 2) if many else (6, 4)
    Y = np.zeros((n, L), dtype=bool)
    Y[::2] = True  # half the rows carry every label
    Y[1, 0] = True
    S = np.where(Y, 1.0, 0.0).astype(np.float32)[None].repeat(members, 0)
    S[:, 3, :] = 1.0  # a negative tied with the positives in every label
    mask = None
    if masked:
        mask = np.ones((n, L), dtype=bool)
        mask[0, 1] = False
    _assert_counts_equal_dense(Y, S, rows, mask)


@TWIN
@given(data=st.data(), Y=label_matrix(max_rows=30, max_labels=6))
@example(data=None, Y=np.zeros((1, 1), dtype=bool))
def test_streamed_observed_scores_equal_evaluate_scores(data, Y):
    n, L = Y.shape
    if data is None:  # one row, one label, no observed positive
        S, rows, neg = np.zeros((1, 1, 1), np.float32), 1, 0.0
    else:
        S = data.draw(scores_for((n, L)))
        rows = data.draw(st.integers(1, n))
        neg = data.draw(st.sampled_from([0.0, 0.3]))
    Z = Y.astype(np.int8)
    Z[(np.arange(n * L).reshape(n, L) % 3 == 0) & ~Y & (neg > 0)] = -1
    (got,) = streamed_observed_scores(Z, chunked(S, rows))
    want = evaluate_scores(S[0], Z=Z)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-9, nan_ok=True), k
