"""Metrics (spmlkit.metrics) against scikit-learn and by hand: AP and mAP, masked AUC and
mAP, per-member mAP, and Zhou et al.'s diagnostics on fabricated inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
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
