"""The streamed evaluation (spmlkit.rank_counts): the difference-array update, the
refusals of missing rows and bad scores, and the streamed observed-label scores against
the dense ones (moved from test_metrics.py with the module; the property tests against
the dense metrics stay there and in tests/twins)."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.metrics import evaluate_scores


def _chunks(S, rows):
    return lambda: ((s, S[..., s:s + rows, :]) for s in range(0, S.shape[-2], rows))


def test_subtracted_counts_equal_bincount_on_narrow_and_wide_spans():
    """The difference array's per-chunk update (bincount over the touched span, or an
    unbuffered subtract when the span is wide) equals a whole-length bincount."""
    from spmlkit.rank_counts import _subtract_counts

    rng = np.random.default_rng(0)
    for size, span in ((1000, 10), (1000, 1000), (10, 1000), (1, 1), (0, 5)):
        idx = np.sort(rng.integers(0, span, size)) + 3
        diff = np.zeros(span + 4, np.int64)
        _subtract_counts(diff, idx)
        np.testing.assert_array_equal(diff, -np.bincount(idx, minlength=span + 4))


def test_streamed_counts_refuse_missing_rows_and_bad_scores():
    from spmlkit.errors import DataFormatError
    from spmlkit.rank_counts import stream_rank_counts
    from spmlkit.sparse_labels import SparseLabels

    Y = SparseLabels.single([0, 1, 0], 2)
    with pytest.raises(DataFormatError, match="3"):
        stream_rank_counts(Y, lambda: iter([(0, np.zeros((2, 2), np.float32))]))
    with pytest.raises(DataFormatError, match="NaN or inf"):
        stream_rank_counts(Y, lambda: iter([(0, np.full((3, 2), np.nan, np.float32))]))


def test_streamed_observed_scores_equal_evaluate_scores():
    from spmlkit.rank_counts import streamed_observed_scores

    rng = np.random.default_rng(3)
    Z = np.zeros((40, 6), np.int8)
    Z[np.arange(40), rng.integers(0, 6, 40)] = 1
    Z[rng.random((40, 6)) < 0.1] = -1
    S = rng.normal(size=(1, 40, 6)).astype(np.float32)
    (got,) = streamed_observed_scores(Z, _chunks(S, 7))
    want = evaluate_scores(S[0], Z=Z)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-12), k


# ----------------------------------------------- mutation survivors (issue 44): every output pinned
def _dense_counts(Y, S, mask=None):
    """ge/gt per positive entry (row-major), by brute force on float32 scores."""
    Y, S = np.asarray(Y, bool), np.asarray(S, np.float32)
    M = np.ones_like(Y) if mask is None else np.asarray(mask, bool)
    ge, gt = [], []
    for r, c in zip(*np.nonzero(Y & M)):
        col, ok = S[:, c], M[:, c]
        ge.append(int(((col >= S[r, c]) & ok).sum()))
        gt.append(int(((col > S[r, c]) & ok).sum()))
    return ge, gt


def test_order_keys_sort_as_the_float32_values():
    from spmlkit.rank_counts import _f32_order_keys

    x = np.array([-3e38, -2.5, -1.0000001, -1.0, -1e-30, -0.0, 0.0, 1e-45, 1e-9, 2e-9, 1.0, 1.0000001, 3e38],
                 np.float32)
    k = _f32_order_keys(x)
    assert k.dtype == np.uint32 and k.shape == x.shape
    assert k[5] == k[6]  # -0.0 ranks as +0.0
    assert (np.diff(np.delete(k, 5).astype(np.int64)) > 0).all()  # strictly increasing with the values
    assert np.array_equal(_f32_order_keys(x.astype(np.float64)), k)  # float64 input ranked as float32


@pytest.mark.parametrize("many", [False, True])
def test_counts_by_block_equal_brute_force_with_masks_read_in_row_blocks(monkeypatch, many):
    """Both counting passes (``many``: more than 8 positives a label), the comparison pass in
    blocks of one row, the mask read two rows at a time and given as 0/1 integers."""
    import spmlkit.rank_counts as rk
    import spmlkit.sparse_labels as sl

    rng = np.random.default_rng(7)
    n, L = (40, 2) if many else (9, 4)
    Y = rng.random((n, L)) < 0.6
    S = (rng.integers(0, 4, (n, L)) / 4).astype(np.float32)
    mask = (rng.random((n, L)) < 0.7).astype(np.int64)
    monkeypatch.setattr(rk, "STREAM_BLOCK_ENTRIES", 1)
    monkeypatch.setattr(sl, "block_rows", lambda L, entries=0: 2)
    rc = rk.stream_rank_counts(Y, _chunks(S, 5), mask=mask)  # chunks of more rows than labels
    ge, gt = _dense_counts(Y, S, mask)
    assert rc.ge.dtype == rc.gt.dtype == rc.n_rows.dtype == np.int64 and rc.score.dtype == np.float32
    assert rc.ge[0].tolist() == ge and rc.gt[0].tolist() == gt
    assert rc.n_rows.tolist() == mask.sum(0).tolist()


def test_scores_are_ranked_as_float32_whatever_their_dtype():
    """1 + 1e-9 and 1 are one float32: tied, whether the chunks hold float64 numpy
    arrays or torch tensors that require a gradient."""
    import torch

    from spmlkit.rank_counts import stream_rank_counts

    Y = np.array([[True], [False], [False]])
    S = np.array([[1.0], [1.0 + 1e-9], [0.5]])
    for chunk in (S, torch.tensor(S, requires_grad=True)):
        rc = stream_rank_counts(Y, lambda: iter([(0, chunk)]))
        assert rc.ge.tolist() == [[2]] and rc.gt.tolist() == [[0]] and rc.score.dtype == np.float32


def test_refusals_name_what_differs_and_no_rows_give_empty_counts():
    from spmlkit.errors import DataFormatError
    from spmlkit.rank_counts import average_precision_from_counts, stream_rank_counts

    Y = np.eye(3, dtype=bool)
    with pytest.raises(DataFormatError) as e:
        stream_rank_counts(Y, lambda: iter([(0, np.zeros((3, 2), np.float32))]))
    assert str(e.value) == "<input>: scores have 2 labels but the labels have 3"
    with pytest.raises(DataFormatError) as e:
        stream_rank_counts(Y, _chunks(np.zeros((3, 3), np.float32), 1), mask=np.ones((3, 2), bool))
    assert str(e.value) == "<input>: label mask has shape (3, 2) but labels have shape (3, 3)"
    with pytest.raises(DataFormatError) as e:
        stream_rank_counts(Y, lambda: iter([(0, np.full((3, 3), np.inf, np.float32))]))
    assert str(e.value) == "<input>: scores contain NaN or inf"
    rc = stream_rank_counts(np.zeros((0, 3), bool), lambda: iter([]))
    assert rc.score.shape == rc.ge.shape == (1, 0) and rc.score.dtype == np.float32
    assert average_precision_from_counts(rc).shape == (1, 3)


def test_observed_scores_of_two_members_in_one_row_chunks_and_their_edges():
    from spmlkit.rank_counts import streamed_observed_scores

    rng = np.random.default_rng(2)
    Z = np.zeros((5, 40), np.int8)
    Z[0, 3] = 1  # label 3: one observed positive; label 7: two
    Z[1, 7] = Z[2, 7] = 1
    S = rng.normal(size=(2, 5, 40)).astype(np.float32)
    got = streamed_observed_scores(Z, _chunks(S, 1), ks=(1, 3))
    for g in range(2):
        want = evaluate_scores(S[g], Z=Z)
        assert got[g]["n_classes_with_observed_positive"] == 2
        for k in want:
            assert got[g][k] == pytest.approx(want[k], abs=1e-12), (g, k)
    S1 = np.zeros((1, 5, 40), np.float32)
    S1[0, 0, 3] = 5.0  # the one observed positive ranked first in its row, of 40 labels
    (one,) = streamed_observed_scores(np.where(np.arange(5)[:, None] == 0, Z, 0), _chunks(S1, 2), ks=(1,))
    assert one["observed_recall@1"] == 100.0 and one["n_observed_positives"] == 1
    (none,) = streamed_observed_scores(np.zeros((0, 4), np.int8), lambda: iter([]), ks=(1,))
    assert none["observed_recall@1"] == 0.0 and none["n_observed_positives"] == 0


def test_recall_hits_pick_the_top_k_of_wide_rows():
    from spmlkit.rank_counts import _recall_hits

    rng = np.random.default_rng(0)
    s = rng.normal(size=(30, 60))
    P = rng.random((30, 60)) < 0.2
    for k in (1, 2, 3, 5, 60, 80):
        top = np.argsort(-s, axis=1)[:, :min(k, 60)]
        assert _recall_hits(P, s, k) == int(np.take_along_axis(P, top, axis=1).sum()), k
    s = rng.normal(size=(20, 300))  # 300 labels: numpy's selection no longer sorts the whole row
    assert _recall_hits(s == s.max(1, keepdims=True), s, 1) == 20
