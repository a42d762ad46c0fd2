"""Metrics (spmlkit.metrics) against scikit-learn and by hand: AP and mAP, masked AUC and
mAP, per-member mAP, and Zhou et al.'s diagnostics on fabricated inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import wasserstein_distance
from sklearn.metrics import average_precision_score, roc_auc_score

from spmlkit.metrics import (average_precision, class_ap_change, evaluate_scores, label_set_scores, mean_auc,
                             mean_average_precision, mean_average_precision_members, observed_positive_recall_at_k,
                             presence_background_auc, presence_target_group_auc, pseudo_label_precision,
                             pseudo_label_precision_by_epoch, roc_auc, share_above_diagonal, unobserved_wasserstein)


@pytest.mark.parametrize("ties", [False, True])
def test_average_precision_equals_sklearn(ties):
    rng = np.random.default_rng(1)
    for _ in range(30):
        n, L = rng.integers(2, 300), rng.integers(1, 8)
        y = rng.random((n, L)) < rng.uniform(0.05, 0.6)
        s = rng.integers(0, 6, (n, L)).astype(float) if ties else rng.normal(size=(n, L))
        ap = average_precision(y, s)
        for c in range(L):
            if y[:, c].any():
                assert ap[c] == pytest.approx(average_precision_score(y[:, c], s[:, c]), abs=1e-6)
            else:
                assert np.isnan(ap[c])


def test_hand_computed_ap():
    # ranking: pos(0.9) neg(0.8) pos(0.1): AP = (1/1 + 2/3) / 2
    assert average_precision([[1], [0], [1]], [[0.9], [0.8], [0.1]])[0] == pytest.approx((1 + 2 / 3) / 2)
    # a tie between one positive and one negative at the top: precision 1/2 at that threshold
    assert average_precision([[1], [0]], [[0.5], [0.5]])[0] == pytest.approx(0.5)


def test_empty_classes_option():
    y = np.array([[1, 0], [0, 0], [1, 0]])
    s = np.array([[0.9, 0.1], [0.2, 0.3], [0.8, 0.2]])
    ex = mean_average_precision(y, s)
    zero = mean_average_precision(y, s, empty="zero")
    assert ex.map == pytest.approx(100.0) and ex.n_empty == 1 and ex.n_classes == 1
    assert zero.map == pytest.approx(50.0) and zero.n_classes == 2


def test_recall_at_k_and_label_sets():
    Z = np.array([[1, 0, 0], [0, 0, 1]])
    s = np.array([[0.9, 0.5, 0.1], [0.9, 0.5, 0.1]])
    assert observed_positive_recall_at_k(Z, s, k=1) == pytest.approx(50.0)
    assert observed_positive_recall_at_k(Z, s, k=3) == pytest.approx(100.0)
    sc = label_set_scores([[1, 0], [1, 1]], [[1, 0], [1, 0]])
    assert sc["micro_precision"] == pytest.approx(100.0) and sc["micro_recall"] == pytest.approx(200 / 3)


def test_shape_mismatch_is_an_error():
    from spmlkit.errors import DataFormatError

    with pytest.raises(DataFormatError, match="shape"):
        average_precision(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(DataFormatError, match="NaN"):
        average_precision(np.zeros((2, 1)), np.array([[np.nan], [0.0]]))


# Masked per-label AUC-ROC and mAP (issue 24), checked against scikit-learn label by label.


def _data(seed=0, n=60, L=5):
    rng = np.random.default_rng(seed)
    Y = rng.random((n, L)) < 0.3
    S = np.round(rng.normal(size=(n, L)) + Y, 1)  # rounded: many ties
    M = rng.random((n, L)) < 0.7
    return Y, S, M


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_masked_auc_and_ap_equal_sklearn_on_the_surveyed_rows(seed):
    Y, S, M = _data(seed)
    auc = roc_auc(Y, S, M)
    r = mean_average_precision(Y, S, mask=M)
    for c in range(Y.shape[1]):
        m = M[:, c]
        assert auc[c] == pytest.approx(roc_auc_score(Y[m, c], S[m, c]), abs=1e-12)
        assert r.ap[c] == pytest.approx(100 * average_precision_score(Y[m, c], S[m, c]), abs=1e-9)
    a = mean_auc(Y, S, M)
    assert a.mean == pytest.approx(np.mean(auc)) and a.median == pytest.approx(np.median(auc))


def test_mask_changes_the_result_and_none_means_all_rows():
    Y, S, M = _data(3)
    assert not np.allclose(roc_auc(Y, S, M), roc_auc(Y, S))
    assert np.allclose(roc_auc(Y, S, np.ones_like(M)), roc_auc(Y, S))
    assert mean_average_precision(Y, S).map == pytest.approx(mean_average_precision(Y, S, mask=np.ones_like(M)).map)


def test_undefined_auc_is_nan_and_left_out():
    Y = np.array([[1, 0], [0, 0], [1, 0]], bool)
    S = np.array([[0.9, 0.1], [0.2, 0.3], [0.4, 0.5]])
    auc = roc_auc(Y, S)
    assert auc[0] == 1.0 and np.isnan(auc[1])
    # label 0 surveyed only where it is present: undefined too
    assert np.isnan(roc_auc(Y, S, np.array([[1, 1], [0, 1], [1, 1]], bool))[0])
    assert mean_auc(Y, S).n_classes == 1


def test_mean_and_median_auc_are_over_the_defined_labels_only():
    """A label without a positive (a species absent from every surveyed test site) has no
    AUC: the mean and the median are those of the other labels, never NaN."""
    rng = np.random.default_rng(7)
    Y = rng.random((40, 4)) < 0.4
    Y[:, 2] = False  # no positive: AUC undefined
    S = rng.normal(size=(40, 4)) + Y
    a = mean_auc(Y, S)
    defined = [roc_auc_score(Y[:, c], S[:, c]) for c in (0, 1, 3)]
    assert np.isnan(a.auc[2]) and a.n_classes == 3
    assert a.mean == pytest.approx(np.mean(defined), abs=1e-12)
    assert a.median == pytest.approx(np.median(defined), abs=1e-12)
    nothing = mean_auc(np.zeros((3, 2), bool), np.ones((3, 2)))
    assert math.isnan(nothing.mean) and math.isnan(nothing.median) and nothing.n_classes == 0


def test_evaluate_scores_reports_auc_beside_map():
    Y, S, M = _data(4)
    ev = evaluate_scores(S, Y=Y, mask=M)
    assert ev["masked"] and ev["auc_mean"] == pytest.approx(mean_auc(Y, S, M).mean)
    assert ev["map"] == pytest.approx(mean_average_precision(Y, S, mask=M).map)


def test_presence_background_auc():
    Z = np.array([[1, 0], [0, 1], [0, 0], [0, 0]], np.int8)
    S = np.array([[5.0, 0.0], [0.0, 1.0], [1.0, 2.0], [0.0, 0.5]])
    # label 0: presence 5 vs background {1, 0} -> 1; label 1: presence 1 vs {2, 0.5} -> 0.5
    assert presence_background_auc(Z, S) == pytest.approx(75.0)
    with pytest.raises(Exception):
        presence_background_auc(Z[:2], S[:2])


# ``mean_average_precision_members`` (every member of a stack scored at once, on the
# scores' device) equals :func:`mean_average_precision` member by member, for both ways
# of counting a class without positives (issue 26: ``empty="zero"`` behaving like
# ``exclude`` went unnoticed, as no test had an empty class).


@pytest.fixture
def with_empty_class():
    rng = np.random.default_rng(3)
    Y = rng.random((40, 6)) < 0.3
    Y[:, 2] = False  # no positive: AP undefined
    Y[0, :] = True
    Y[0, 2] = False
    scores = torch.from_numpy(rng.normal(size=(3, 40, 6)).astype(np.float32))
    return Y, scores


@pytest.mark.parametrize("empty", ["exclude", "zero"])
def test_members_equal_the_reference_per_member(with_empty_class, empty):
    Y, scores = with_empty_class
    got = mean_average_precision_members(Y, scores, empty=empty)
    want = [mean_average_precision(Y, s.numpy(), empty=empty).map for s in scores]
    assert got == pytest.approx(want, rel=1e-5)


def test_zero_counts_the_empty_class_as_zero(with_empty_class):
    Y, scores = with_empty_class
    exclude = mean_average_precision_members(Y, scores, empty="exclude")
    zero = mean_average_precision_members(Y, scores, empty="zero")
    L, n_empty = Y.shape[1], 1
    assert zero == pytest.approx([e * (L - n_empty) / L for e in exclude], rel=1e-5)
    assert all(z < e for z, e in zip(zero, exclude))


def test_no_class_with_a_positive_is_nan_when_excluded():
    Y = np.zeros((5, 3), bool)
    scores = torch.zeros(2, 5, 3)
    assert all(np.isnan(v) for v in mean_average_precision_members(Y, scores, empty="exclude"))
    assert mean_average_precision_members(Y, scores, empty="zero") == [0.0, 0.0]


# Zhou et al. diagnostics: functions on fabricated inputs, figures, and `spml diagnose`.


def test_pseudo_label_precision_known_answer():
    Y = np.array([[1, 0, 0], [0, 0, 1], [1, 1, 0]], dtype=bool)
    kind = np.array([[0, -1, -1], [-1, -1, -1], [1, 0, 1]], dtype=np.int8)
    # negatives at (0,1) T (0,2) T (1,0) T (1,1) T (1,2) F -> 4/5; positives (2,0) T (2,2) F -> 1/2
    r = pseudo_label_precision(kind, Y)
    assert r == {"negative": 80.0, "n_negative": 5, "positive": 50.0, "n_positive": 2}
    empty = pseudo_label_precision(np.zeros((3, 3)), Y)
    assert math.isnan(empty["negative"]) and empty["n_negative"] == 0


def test_pseudo_label_precision_by_epoch_known_answer():
    Y = np.array([[0, 1, 0, 1]], dtype=bool)
    kind = np.array([[-1, -1, -1, 0]])
    ep = np.array([[3, 4, 4, 0]])
    rows = pseudo_label_precision_by_epoch(kind, ep, Y)
    assert [r["epoch"] for r in rows] == [3, 4]
    assert rows[0]["negative"] == 100.0 and rows[0]["n_negative"] == 1
    assert rows[1]["negative"] == pytest.approx(200 / 3) and rows[1]["n_negative"] == 3
    assert rows[1]["new_negative"] == 50.0 and rows[1]["n_new_negative"] == 2


def test_unobserved_wasserstein_known_answer():
    # class 0: unobserved positives {0.9, 0.7}, unobserved negatives {0.1, 0.3}: shift by 0.6
    # class 1: every positive is observed -> nan
    P = np.array([[0.9, 0.5], [0.7, 0.2], [0.1, 0.1], [0.3, 0.3], [0.5, 0.9]])
    Z = np.array([[0, 0], [0, 0], [0, 0], [0, 0], [1, 1]])
    Y = np.array([[1, 0], [1, 0], [0, 0], [0, 0], [1, 1]], dtype=bool)
    w = unobserved_wasserstein(P, Z, Y)
    assert w[0] == pytest.approx(0.6) and math.isnan(w[1])
    rng = np.random.default_rng(0)
    P, Y = rng.random((200, 3)), rng.random((200, 3)) < 0.3
    Z = np.zeros((200, 3), dtype=np.int8)
    w = unobserved_wasserstein(P, Z, Y)
    assert w[2] == pytest.approx(wasserstein_distance(P[Y[:, 2], 2], P[~Y[:, 2], 2]))


def test_share_above_and_ap_change():
    assert share_above_diagonal([1, 1, 1, 1], [2, 0, 3, 1]) == 0.5  # equal is not above
    rng = np.random.default_rng(1)
    Y = rng.random((50, 4)) < 0.4
    Y[:, 3] = False  # no positives: nan, not counted
    a, b = rng.random((50, 4)), rng.random((50, 4))
    d, share = class_ap_change(Y, a, b)
    want = 100 * (average_precision(Y, a) - average_precision(Y, b))
    assert np.allclose(d[:3], want[:3]) and math.isnan(d[3])
    assert share == pytest.approx(float((want[:3] > 0).mean()))
    d, share = class_ap_change(Y[:, :3], Y[:, :3] + 0.01 * a[:, :3], b[:, :3])  # perfect scores improve all
    assert share == 1.0 and (d > 0).all()


# ------------------------------------------------------------ target_group_auc
# Presence records of a label against the records of the other labels (Phillips et al.
# 2009's target-group background).
def test_equals_the_per_label_auc_of_presences_against_other_labels_records():
    rng = np.random.default_rng(0)
    n, L = 60, 3
    Z = np.zeros((n + 20, L), np.int8)
    Z[np.arange(n), rng.integers(0, L, n)] = 1  # 20 background rows at the end
    S = rng.normal(size=Z.shape)
    want = []
    for c in range(L):
        rows = (Z == 1).any(1)  # background rows left out
        want.append(roc_auc_score(Z[rows, c] == 1, S[rows, c]))
    assert presence_target_group_auc(Z, S) == pytest.approx(100 * np.mean(want))
    S2 = S.copy()
    S2[n:] = rng.normal(size=(20, L)) * 100  # background scores do not matter
    assert presence_target_group_auc(Z, S2) == presence_target_group_auc(Z, S)


def test_a_model_of_sampling_effort_scores_fifty_while_background_auc_rewards_it():
    """Records sit where observers go (high 'effort'); background rows are spread uniformly.
    A model that scores every label by effort alone separates presences from background
    (background AUC well above 50) but not one species' records from another's (50)."""
    rng = np.random.default_rng(1)
    n, nb, L = 400, 400, 4
    effort_rec = rng.uniform(0.5, 1.0, n)
    effort_bg = rng.uniform(0.0, 1.0, nb)
    Z = np.zeros((n + nb, L), np.int8)
    Z[np.arange(n), rng.integers(0, L, n)] = 1
    S = np.repeat(np.concatenate([effort_rec, effort_bg])[:, None], L, axis=1)
    assert presence_background_auc(Z, S) > 70
    assert presence_target_group_auc(Z, S) == pytest.approx(50.0, abs=3)
    # a model that knows the species ranks its own records first: near 100
    S_good = S + 2.0 * (Z == 1)
    assert presence_target_group_auc(Z, S_good) > 99


def test_labels_without_presence_or_target_group_are_left_out():
    Z = np.array([[1, 0, 0], [1, 0, 0], [0, 0, 0]])
    assert np.isnan(presence_target_group_auc(Z, np.zeros((3, 3))))  # one label only: no target group
    Z = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0]])
    assert presence_target_group_auc(Z, np.array([[1., 0, 0], [0, 1, 0], [5, 5, 5]])) == 100.0


# ------------------------------------------------ streamed evaluation (issue 32)
def _chunks(S, rows):
    return lambda: ((s, S[..., s:s + rows, :]) for s in range(0, S.shape[-2], rows))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("masked", [False, True])
def test_streamed_ap_and_auc_equal_the_whole_matrix_and_sklearn(seed, masked):
    """AP and AUC from streamed rank counts equal the per-column computation (and so
    scikit-learn) on data with ties, −0.0, masks, empty labels and two members, by both
    counting passes (direct comparison when positives are few, sort + search otherwise)."""
    from spmlkit.metrics import (average_precision_from_counts, masked_average_precision, roc_auc,
                                 roc_auc_from_counts, stream_rank_counts)
    from spmlkit.sparse_labels import SparseLabels

    rng = np.random.default_rng(seed)
    n, L = 70, (3 if seed % 2 else 25)  # 3 labels: many positives per label -> the sort pass
    Y = rng.random((n, L)) < (0.6 if seed % 2 else 0.08)
    Y[:, 0] = False  # a label without a positive: nan
    S = np.round(rng.normal(size=(2, n, L)) * 3).astype(np.float32)
    S[S == 0] = -0.0
    mask = (rng.random((n, L)) < 0.8) if masked else None
    rc = stream_rank_counts(SparseLabels.from_dense(Y), _chunks(S, int(rng.integers(1, 30))), mask=mask)
    assert (rc.label.size > 8 * L) == bool(seed % 2)
    ap, auc = average_precision_from_counts(rc), roc_auc_from_counts(rc)
    for g in range(2):
        np.testing.assert_allclose(ap[g], masked_average_precision(Y, S[g], mask), atol=1e-12, rtol=0)
        np.testing.assert_allclose(auc[g], roc_auc(Y, S[g], mask), atol=1e-12, rtol=0)
        for c in range(1, L):
            rows = slice(None) if mask is None else mask[:, c]
            y, s = Y[rows, c], S[g][rows, c]
            if y.any():
                assert ap[g, c] == pytest.approx(average_precision_score(y, s), abs=1e-12)
            if y.any() and not y.all():
                assert auc[g, c] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert np.isnan(ap[:, 0]).all() and np.isnan(auc[:, 0]).all()


def _brute_rank_counts(Y, S, mask):
    """ge/gt by direct comparison of every surveyed row with every surveyed positive."""
    ok = np.ones(Y.shape, bool) if mask is None else mask
    r, c = np.nonzero(Y & ok)
    ge = np.array([[int((ok[:, cj] & (S[g][:, cj] >= S[g][ri, cj])).sum()) for ri, cj in zip(r, c)]
                   for g in range(S.shape[0])], dtype=np.int64).reshape(S.shape[0], r.size)
    gt = np.array([[int((ok[:, cj] & (S[g][:, cj] > S[g][ri, cj])).sum()) for ri, cj in zip(r, c)]
                   for g in range(S.shape[0])], dtype=np.int64).reshape(S.shape[0], r.size)
    return c, ge, gt


@st.composite
def _ranked_case(draw):
    n, L, G = draw(st.integers(1, 24)), draw(st.integers(1, 6)), draw(st.integers(1, 3))
    levels = draw(st.integers(1, 5))  # few score levels: ties within and across labels
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    S = (rng.integers(-levels, levels + 1, size=(G, n, L)) / 2).astype(np.float32)
    S[S == 0] = draw(st.sampled_from([0.0, -0.0]))
    Y = rng.random((n, L)) < draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    if L > 1:
        Y[:, draw(st.integers(0, L - 1))] = False  # a label without a positive
    mask = (rng.random((n, L)) < draw(st.sampled_from([0.5, 0.9]))) if draw(st.booleans()) else None
    return Y, S, mask, draw(st.integers(1, n))


@given(_ranked_case())
@settings(max_examples=150, deadline=None, derandomize=True, database=None)
def test_streamed_rank_counts_equal_direct_comparison_and_dense_metrics(case):
    """The streamed counts, by either pass (thresholds sorted once and chunk entries
    searched into them, or the direct counting pass), are exactly a brute force's integers, and AP/AUC from them the dense ones to
    1e-12, on drawn cases: ties within and across labels, ±0, labels without positives,
    masks, 1-3 members, one row, one label, chunk sizes 1..N."""
    from spmlkit.metrics import (average_precision_from_counts, masked_average_precision, roc_auc,
                                 roc_auc_from_counts, stream_rank_counts)
    from spmlkit.sparse_labels import SparseLabels

    from unittest import mock

    from spmlkit import metrics

    Y, S, mask, rows = case
    block = S if S.shape[0] > 1 else S[0]
    label, ge, gt = _brute_rank_counts(Y, S, mask)
    for per_label in (0, 10 ** 9):  # the sorted-threshold search, and the direct counting pass
        with mock.patch.object(metrics, "COUNTING_POSITIVES_PER_LABEL", per_label):
            rc = stream_rank_counts(SparseLabels.from_dense(Y), _chunks(block, rows), mask=mask)
        np.testing.assert_array_equal(rc.label, label)
        np.testing.assert_array_equal(rc.ge, ge)
        np.testing.assert_array_equal(rc.gt, gt)
    ap, auc = average_precision_from_counts(rc), roc_auc_from_counts(rc)
    for g in range(S.shape[0]):
        np.testing.assert_allclose(ap[g], masked_average_precision(Y, S[g], mask), atol=1e-12, rtol=0)
        np.testing.assert_allclose(auc[g], roc_auc(Y, S[g], mask), atol=1e-12, rtol=0)


# ------------------------------------------------------------------ issue 39: every output
def _ap_sklearn(Y, S):
    return np.array([average_precision_score(Y[:, c], S[:, c]) if Y[:, c].any() else np.nan
                     for c in range(Y.shape[1])])


def test_label_set_scores_equal_sklearn():
    from sklearn.metrics import f1_score, precision_score, recall_score

    rng = np.random.default_rng(5)
    Y = rng.random((30, 5)) < 0.3
    P = rng.random((30, 5)) < 0.35
    Y[0], P[0] = False, False  # a row with nothing true and nothing predicted
    Y[:, 4], P[:, 4] = False, False  # a label never true nor predicted
    got = label_set_scores(Y.astype(int), P.astype(int))
    kw = {"zero_division": 0}
    want = {"micro_precision": 100 * precision_score(Y, P, average="micro", **kw),
            "micro_recall": 100 * recall_score(Y, P, average="micro", **kw),
            "micro_f1": 100 * f1_score(Y, P, average="micro", **kw),
            "macro_f1": 100 * f1_score(Y, P, average="macro", **kw),
            "example_f1": 100 * f1_score(Y, P, average="samples", **kw),
            "mean_predicted_labels": P.sum(1).mean()}
    assert got == pytest.approx(want, abs=1e-12) and set(got) == set(want)
    none = label_set_scores(np.zeros((2, 2)), np.zeros((2, 2)))
    assert none == {"micro_precision": 0.0, "micro_recall": 0.0, "micro_f1": 0.0, "macro_f1": 0.0, "example_f1": 0.0,
                    "mean_predicted_labels": 0.0}


@pytest.mark.parametrize("ties", [False, True])
def test_average_precision_torch_equals_sklearn(ties):
    from spmlkit.metrics import average_precision_torch

    rng = np.random.default_rng(2)
    Y = rng.random((50, 5)) < 0.3
    Y[:, 3] = False
    S = rng.integers(0, 4, (50, 5)).astype(np.float32) if ties else rng.normal(size=(50, 5)).astype(np.float32)
    got = average_precision_torch(torch.from_numpy(Y.astype(np.int64)), torch.from_numpy(S))
    assert got.dtype == torch.float64 and got.shape == (5,)
    assert np.allclose(got.numpy(), _ap_sklearn(Y, S), equal_nan=True, atol=1e-12)
    one = average_precision_torch(torch.tensor([1, 0, 1]), torch.tensor([0.9, 0.8, 0.1]))  # 1-D: one label
    assert one.tolist() == pytest.approx([(1 + 2 / 3) / 2])
    assert torch.isnan(average_precision_torch(torch.zeros(0, 3), torch.zeros(0, 3))).tolist() == [True] * 3
    with pytest.raises(Exception) as e:
        average_precision_torch(torch.zeros(3, 2), torch.zeros(3, 3))
    assert str(e.value) == "<input>: labels have shape (3, 2) but scores have shape (3, 3)"


def test_members_refusals_and_no_member():
    from spmlkit.errors import ConfigError, DataFormatError

    Y = np.array([[1, 0], [0, 1]])
    with pytest.raises(ConfigError) as e:
        mean_average_precision_members(Y, torch.zeros(1, 2, 2), empty="skip")
    assert str(e.value) == "empty must be 'exclude' or 'zero', got 'skip'"
    with pytest.raises(DataFormatError) as e:
        mean_average_precision_members(Y, torch.tensor([[[0.0, float("nan")], [1.0, 0.0]]]))
    assert str(e.value) == "<input>: scores contain NaN or inf"
    assert mean_average_precision_members(Y, torch.zeros(0, 2, 2)) == []
    assert mean_average_precision_members(Y, torch.tensor([[[0.9, 0.1], [0.2, 0.8]]])) == [100.0]


def test_map_and_its_shorthands_and_refusals():
    from spmlkit.errors import ConfigError, DataFormatError
    from spmlkit.metrics import map_score, masked_average_precision, observed_positive_map

    rng = np.random.default_rng(8)
    Y = rng.random((40, 4)) < 0.3
    Y[:, 1] = False
    S = rng.normal(size=(40, 4))
    ap = _ap_sklearn(Y, S)
    r = mean_average_precision(Y, S)
    assert r.map == pytest.approx(100 * np.nanmean(ap)) and r.empty == "exclude" and r.n_empty == 1
    assert mean_average_precision(Y, S, empty="zero").empty == "zero"
    assert map_score(Y, S) == pytest.approx(100 * np.nanmean(ap))  # exclude by default
    assert map_score(Y, S, empty="zero") == pytest.approx(100 * np.nan_to_num(ap).mean())
    assert np.allclose(masked_average_precision(Y, S), ap, equal_nan=True)  # no mask: every row
    Z = np.where(Y, 1, 0)
    Z[0, 0] = -1
    assert observed_positive_map(Z, S) == pytest.approx(100 * np.nanmean(_ap_sklearn(Z == 1, S)))
    nothing = mean_average_precision(np.zeros((3, 2)), np.ones((3, 2)))
    assert math.isnan(nothing.map) and nothing.n_classes == 0
    with pytest.raises(ConfigError) as e:
        mean_average_precision(Y, S, empty="skip")
    assert str(e.value) == "empty must be 'exclude' or 'zero', got 'skip'"
    with pytest.raises(DataFormatError) as e:
        average_precision(np.zeros((2, 1)), np.array([[np.inf], [0.0]]))
    assert str(e.value) == "<input>: scores contain NaN or inf"
    assert average_precision([1, 0, 1], [0.9, 0.8, 0.1]).tolist() == pytest.approx([(1 + 2 / 3) / 2])  # 1-D
    assert average_precision([[1, 0]], [[0.3, 0.2]]).tolist()[0] == 1.0  # one example
    assert np.isnan(average_precision(np.zeros((0, 3)), np.zeros((0, 3)))).tolist() == [True] * 3


def test_evaluate_scores_reports_every_field():
    rng = np.random.default_rng(9)
    Y = rng.random((30, 3)) < 0.4
    Y[:, 2] = False
    S = rng.normal(size=(30, 3))
    ev = evaluate_scores(S, Y=Y)
    ap = 100 * _ap_sklearn(Y, S)
    auc = [roc_auc_score(Y[:, c], S[:, c]) for c in range(2)]
    assert ev == {"labels": "full", "map": pytest.approx(np.nanmean(ap)), "n_classes": 2, "n_empty_classes": 1,
                  "empty_classes": "exclude", "ap": [pytest.approx(ap[0]), pytest.approx(ap[1]), None],
                  "auc_mean": pytest.approx(np.mean(auc)), "auc_median": pytest.approx(np.median(auc)),
                  "n_auc_classes": 2, "auc": [pytest.approx(auc[0]), pytest.approx(auc[1]), None], "masked": False}
    assert evaluate_scores(S, Y=Y, empty="zero")["map"] == pytest.approx(np.nan_to_num(ap).mean())
    Z = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0], [1, 0, 0]])
    s = np.array([[0.9, 0.5, 0.1], [0.8, 0.5, 0.2], [0.1, 0.2, 0.3], [0.2, 0.3, 0.4]])
    ob = evaluate_scores(s, Z=Z, ks=(1, 2))
    assert ob == {"labels": "observed", "observed_map": pytest.approx(100 * np.nanmean(_ap_sklearn(Z == 1, s))),
                  "n_observed_positives": 3, "n_classes_with_observed_positive": 2,
                  "observed_recall@1": pytest.approx(100 / 3), "observed_recall@2": pytest.approx(100 / 3)}
    assert set(evaluate_scores(s, Z=Z)) >= {"observed_recall@1", "observed_recall@3"}  # ks=(1, 3) by default
    with pytest.raises(ValueError) as e:
        evaluate_scores(s)
    assert str(e.value) == "evaluate_scores needs full labels Y or observations Z"


def test_recall_at_k_counts_each_observed_positive_once():
    Z = np.array([[1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]])
    s = np.array([[0.1, 0.5, 0.4, 0.3, 0.2], [0.5, 0.4, 0.3, 0.2, 0.1], [0.5, 0.4, 0.3, 0.2, 0.1]])
    # row 0's positive is 5th, row 1's 5th: inside the top 5 only
    assert observed_positive_recall_at_k(Z, s) == 0.0  # k = 3 by default
    assert observed_positive_recall_at_k(Z, s, k=4) == 0.0 and observed_positive_recall_at_k(Z, s, k=5) == 100.0
    assert observed_positive_recall_at_k(Z, s, k=9) == 100.0  # k beyond L: every label
    Z1 = np.array([[0, 0, 0, 1, 0]])
    assert observed_positive_recall_at_k(Z1, s[:1], k=3) == 100.0  # 3rd of 5: at the boundary
    assert observed_positive_recall_at_k(Z1, s[:1], k=2) == 0.0
    assert observed_positive_recall_at_k(np.zeros((2, 5)), s[:2]) == 0.0  # no observed positive


def test_masks_and_diagnostics_take_0_1_arrays_and_name_bad_shapes():
    from spmlkit.errors import DataFormatError

    Y, S, M = _data(6)
    assert np.allclose(roc_auc(Y, S, M.astype(int)), roc_auc(Y, S, M), equal_nan=True)  # 0/1 mask = bool mask
    with pytest.raises(DataFormatError) as e:
        roc_auc(Y, S, M[:3])
    assert str(e.value) == f"<input>: label mask has shape (3, {Y.shape[1]}) but labels have shape {Y.shape}"
    kind = np.array([[-1, -1, 1, 1], [1, 1, 0, -1]])
    Yi = np.array([[0, 1, 1, 1], [1, 1, 0, 0]])  # as 0/1 integers
    assert pseudo_label_precision(kind, Yi) == {"negative": 200 / 3, "n_negative": 3, "positive": 100.0,
                                                "n_positive": 4}
    with pytest.raises(DataFormatError) as e:
        pseudo_label_precision(kind, Yi[:1])
    assert str(e.value) == "<input>: pseudo-labels have shape (2, 4) but labels have shape (1, 4)"
    Yp = np.array([[1, 1, 0, 1, 0, 0, 1, 1]])
    assert pseudo_label_precision(np.ones((1, 8)), Yp)["positive"] == 62.5  # 5 of 8
    rows = pseudo_label_precision_by_epoch(np.array([[1, -1, 0, 0]]), np.array([[1, 2, 0, 0]]), np.array([[1, 1, 0, 0]]))
    assert [(r["epoch"], r["n_positive"], r["positive"], r["n_negative"]) for r in rows] == [(1, 1, 100.0, 0),
                                                                                           (2, 1, 100.0, 1)]
    assert rows[1]["negative"] == 0.0 and rows[1]["n_new_negative"] == 1 and math.isnan(rows[0]["new_negative"])
    P = np.array([[0.9], [0.7], [0.1], [0.3]])
    w = unobserved_wasserstein(P, np.zeros((4, 1)), np.array([[1], [1], [0], [0]]))  # 0/1 labels
    assert w.tolist() == pytest.approx([0.6])
    with pytest.raises(DataFormatError) as e:
        unobserved_wasserstein(P, np.zeros((4, 1)), np.zeros((3, 1)))
    assert str(e.value) == "<input>: probabilities (4, 1), observations (4, 1) and labels (3, 1) differ"


def test_diagnostic_summaries_at_their_edges():
    assert share_above_diagonal([0.1, 0.2, 0.3, 0.4], [0.2, np.nan, 0.1, 0.5]) == pytest.approx(2 / 3)
    assert math.isnan(share_above_diagonal([np.nan, 1.0], [1.0, np.nan]))
    Y = np.array([[1, 1, 0], [0, 1, 0], [1, 0, 0]])
    base = np.array([[0.5, 0.9, 0.1], [0.6, 0.1, 0.2], [0.4, 0.5, 0.3]])
    better = base.copy()
    better[0, 0] = 0.7  # label 0: AP 0.5 -> 1 ; label 1: unchanged ; label 2: no positive
    d, share = class_ap_change(Y, better, base)
    assert d[0] > 0 and d[1] == 0 and math.isnan(d[2]) and share == 0.5  # an unchanged label is not improved
    # a change below one AP point still counts as an improvement
    y = np.r_[np.ones(20), np.zeros(180)][:, None]
    ref = np.r_[np.linspace(1, 0.9, 19), [0.05], np.linspace(0.8, 0.0, 180)][:, None]  # last positive among negatives
    up = ref.copy()
    negatives = ref[20:, 0]
    up[19, 0] = negatives[negatives > 0.05].min() + 1e-6  # the last positive passes one negative
    d, share = class_ap_change(y, up, ref)
    assert 0 < d[0] < 1 and share == 1.0
    d, share = class_ap_change(np.zeros((3, 2)), base[:, :2], base[:, :2])
    assert math.isnan(share)


def test_presence_criteria_skip_a_label_without_presence_and_keep_going():
    from spmlkit.errors import ConfigError

    Z = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]], np.int8)  # label 0 has no presence
    S = np.array([[0.0, 5.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 2.0], [0.0, 0.0, 0.5]])
    assert presence_background_auc(Z, S) == pytest.approx(75.0)  # labels 1 (1.0) and 2 (0.5)
    assert presence_target_group_auc(Z, S) == pytest.approx(100.0)
    assert math.isnan(presence_target_group_auc(np.array([[1, 0], [0, 0]]), np.zeros((2, 2))))
    with pytest.raises(ConfigError) as e:
        presence_background_auc(Z[:2], S[:2])
    assert str(e.value) == ("presence_background_auc needs background rows (examples with no observed label) in the "
                            "validation split")


# ----------------------------------------------- mutation survivors (issue 44): every output pinned
def test_label_sets_of_one_entry_and_the_default_k():
    from spmlkit.metrics import label_set_scores, observed_positive_recall_at_k

    r = label_set_scores([[1, 0, 0]], [[1, 0, 0]])  # one predicted label, and it is the one true label
    assert r["micro_precision"] == r["micro_recall"] == r["micro_f1"] == 100.0
    Z = np.zeros((1, 6), np.int8)
    Z[0, 0] = 1
    s = np.array([[0.0, 5.0, 4.0, 3.0, 2.0, 1.0]])  # the observed positive ranks last of six
    assert observed_positive_recall_at_k(Z, s) == observed_positive_recall_at_k(Z, s, k=3) == 0.0
    s[0, 0] = 2.5  # fourth: still out of the default top 3
    assert observed_positive_recall_at_k(Z, s) == 0.0 and observed_positive_recall_at_k(Z, s, k=4) == 100.0


def test_torch_ap_of_one_row_no_row_and_members_with_one_class():
    import torch

    from spmlkit.metrics import average_precision_torch, mean_average_precision_members

    ap = average_precision_torch(torch.tensor([[True, False]]), torch.tensor([[0.3, 0.2]]))
    assert ap[0].item() == 1.0 and torch.isnan(ap[1])
    none = average_precision_torch(torch.zeros((0, 3), dtype=torch.bool), torch.zeros((0, 3)))
    assert none.dtype == torch.float64 and tuple(none.shape) == (3,) and torch.isnan(none).all()
    y = np.array([[1, 0], [0, 0], [0, 0]], bool)  # only the first class has a positive
    S = torch.tensor([[[0.9, 0.1], [0.5, 0.2], [0.1, 0.3]]])
    assert mean_average_precision_members(y, S) == [100.0]
    assert mean_average_precision_members(y, S, empty="zero") == [50.0]


def test_pseudo_label_precision_reads_numeric_labels_as_presence():
    from spmlkit.metrics import pseudo_label_precision

    r = pseudo_label_precision([[-1, -1], [0, 1]], np.array([[0, 1], [0, 1]]))
    assert (r["negative"], r["n_negative"], r["positive"], r["n_positive"]) == (50.0, 2, 100.0, 1)
    r = pseudo_label_precision([[-1, 1]], np.array([[2, 2]]))  # a 2 is a present label
    assert (r["negative"], r["positive"]) == (0.0, 100.0)
