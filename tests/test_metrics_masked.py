"""Masked per-label AUC-ROC and mAP (issue 24), checked against scikit-learn label by label."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from spmlkit.metrics import (evaluate_scores, mean_auc, mean_average_precision, presence_background_auc,
                             roc_auc)


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
