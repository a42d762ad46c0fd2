"""Twins of the practitioner's streamed paths: ``spml predict`` chunk by chunk
(:func:`spmlkit.practitioner.inference.predict_to_file`: probabilities, label sets by
every rule, top-k) against the dense prediction of the whole input, and the streamed
evaluation (``evaluate_model`` on a split too large to hold) against the dense one, on
drawn models whose logits tie, with every label-set rule (``per="batch"`` and threshold
rules included) and chunk sizes 1..N."""
from __future__ import annotations

import csv
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spmlkit.practitioner import evaluation
from spmlkit.practitioner.evaluation import evaluate_label_sets, evaluate_model
from spmlkit.practitioner.inference import PredictionInput, predict_to_file
from spmlkit.sparse_labels import SparseLabels
from tests.helpers.factories import OneSplitBundle
from tests.twins.models import linear, model_and_inputs
from tests.twins.strategies import TWIN, TWIN_FEW, label_matrix

_names = itertools.count()


def _read(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _dense_sets(model, P):
    return [";".join(n for n, s in zip(model.label_names, row) if s) for row in model.label_sets_from_proba(P)]


@TWIN
@given(mx=model_and_inputs(), data=st.data())
def test_streamed_label_sets_equal_the_dense_prediction(tmp_path, mx, data):
    model, X = mx
    rows = data.draw(st.integers(1, len(X)))
    out = tmp_path / f"sets{next(_names)}.csv"
    predict_to_file(model, PredictionInput(X, [f"r{i}" for i in range(len(X))]), out, kind="labels", rows=rows)
    got = _read(out)
    assert got[0] == ["id", "labels"]
    assert [r[1] for r in got[1:]] == _dense_sets(model, model.predict_proba(X))


@TWIN_FEW
@given(mx=model_and_inputs(max_rows=20, max_labels=16), data=st.data())
def test_streamed_top_k_and_probabilities_equal_the_dense_prediction(tmp_path, mx, data):
    model, X = mx
    n, L = len(X), len(model.label_names)
    rows = data.draw(st.integers(1, n))
    k = data.draw(st.integers(1, L + 1))
    inp = PredictionInput(X, [f"r{i}" for i in range(n)])
    P = model.predict_proba(X)
    tag = next(_names)
    predict_to_file(model, inp, tmp_path / f"top{tag}.csv", kind="top_k", top_k=k, rows=rows)
    order = np.argsort(-P.astype(np.float32), axis=1, kind="stable")[:, :k]  # ties: lower label index first
    got = _read(tmp_path / f"top{tag}.csv")[1:]
    assert [r[1] for r in got] == [";".join(model.label_names[j] for j in o) for o in order]
    assert [r[2] for r in got] == [";".join("%.6g" % P[i, j] for j in o) for i, o in enumerate(order)]
    predict_to_file(model, inp, tmp_path / f"p{tag}.npy", rows=rows)
    assert np.array_equal(np.load(tmp_path / f"p{tag}.npy", allow_pickle=False), P.astype(np.float32))
    predict_to_file(model, inp, tmp_path / f"p{tag}.csv", rows=rows)
    assert [[float(v) for v in r[1:]] for r in _read(tmp_path / f"p{tag}.csv")[1:]] == \
        [[float("%.6g" % v) for v in row] for row in P]


@pytest.mark.parametrize("rows", [1, 2, 5])
def test_a_batch_rule_takes_the_whole_collection_however_it_is_chunked(tmp_path, rows):
    """``expected_k`` with ``per="batch"`` keeps the round(k·N) highest scores of the whole
    matrix: row 0 holds all of them, so a chunk of later rows alone would wrongly keep some."""
    W = np.array([[1.0, 0.5]])
    X = np.array([[4.0], [-1.0], [-2.0], [-3.0], [-4.0], [-5.0]], dtype=np.float32)
    model = linear(W, [0.0, 0.0], {"rule": "expected_k", "k": 1 / 3, "per": "batch"})
    out = tmp_path / "s.csv"
    predict_to_file(model, PredictionInput(X, [str(i) for i in range(6)]), out, kind="labels", rows=rows)
    assert [r[1] for r in _read(out)[1:]] == ["l0;l1", "", "", "", "", ""]


# ------------------------------------------------------------------ streamed evaluation
_Bundle = OneSplitBundle  # what evaluate_model reads of a bundle: one split


def _streamed(monkeypatch, model, bundle, rows):
    with monkeypatch.context() as m:
        m.setattr(evaluation, "needs_streaming", lambda *a: True)
        m.setattr(type(model), "stream_rows", lambda self, budget_bytes=0: rows)
        return evaluate_model(model, bundle, "test")


def _assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, float) and isinstance(b, float):
        assert (math.isnan(a) and math.isnan(b)) or b == pytest.approx(a, abs=1e-9)
    else:
        assert a == b


@TWIN_FEW
@given(mx=model_and_inputs(max_rows=15), data=st.data())
def test_streamed_evaluation_on_observations_equals_the_dense_one(monkeypatch, mx, data):
    """Observed-only data: observed-label scores and the quality of the model's label sets
    (by its own rule: thresholds on probabilities, ``per="batch"``, ...)."""
    model, X = mx
    n, L = len(X), len(model.label_names)
    Y = data.draw(label_matrix(min_rows=n, max_rows=n, max_labels=L).filter(lambda y: y.shape[1] == L))
    Z = Y.astype(np.int8)
    Z[(np.arange(n)[:, None] + np.arange(L)) % 4 == 1] *= -1  # some observed negatives
    bundle = _Bundle(X, model.label_names, Z=SparseLabels.from_dense(Z))
    whole = evaluate_model(model, bundle, "test")
    assert whole["label_sets"] == evaluate_label_sets(model.label_sets_from_proba(model.predict_proba(X)), Z=Z)
    _assert_same(whole, _streamed(monkeypatch, model, bundle, data.draw(st.integers(1, n))))


@TWIN_FEW
@given(mx=model_and_inputs(max_rows=15), data=st.data(), masked=st.booleans())
def test_streamed_evaluation_on_full_labels_equals_the_dense_one(monkeypatch, mx, data, masked):
    model, X = mx
    n, L = len(X), len(model.label_names)
    Y = data.draw(label_matrix(min_rows=n, max_rows=n, max_labels=L).filter(lambda y: y.shape[1] == L))
    mask = None
    if masked:
        mask = SparseLabels.from_dense(np.random.default_rng(n).random((n, L)) < 0.7)
    bundle = _Bundle(X, model.label_names, Y=SparseLabels.from_dense(Y), mask=mask)
    whole = evaluate_model(model, bundle, "test")
    _assert_same(whole, _streamed(monkeypatch, model, bundle, data.draw(st.integers(1, n))))


def test_streamed_label_sets_threshold_probabilities_not_logits(monkeypatch):
    """A threshold of 0.3 on probabilities keeps logits above −0.85: the sets differ from a
    cut of the logits at 0.3, so a streamed path thresholding logits is caught."""
    model = linear([[1.0, -1.0]], [0.0, 0.0], {"rule": "threshold", "threshold": 0.3})
    X = np.array([[0.1], [-0.2], [0.5], [-0.6]], dtype=np.float32)
    Z = SparseLabels.single([0, 1, 0, 1], 2)
    bundle = _Bundle(X, model.label_names, Z=Z)
    whole = evaluate_model(model, bundle, "test")
    assert whole["label_sets"]["mean_predicted_labels"] == 2.0  # every probability is above 0.3
    for rows in (1, 3, 4):
        _assert_same(whole, _streamed(monkeypatch, model, bundle, rows))


@pytest.mark.parametrize("rows", [1, 2, 5])
def test_streamed_evaluation_applies_a_batch_rule_to_the_whole_split(monkeypatch, rows):
    """The model's ``expected_k`` rule with ``per="batch"``: the label sets of the streamed
    evaluation are those of the whole split, not of each block (one set of one label)."""
    model = linear([[1.0, 0.5]], [0.0, 0.0], {"rule": "expected_k", "k": 1 / 3, "per": "batch"})
    X = np.array([[4.0], [-1.0], [-2.0], [-3.0], [-4.0], [-5.0]], dtype=np.float32)
    bundle = _Bundle(X, model.label_names, Z=SparseLabels.single([0, 1, 0, 1, 0, 1], 2))
    whole = evaluate_model(model, bundle, "test")
    assert whole["label_sets"]["mean_predicted_labels"] == pytest.approx(1 / 3)
    _assert_same(whole, _streamed(monkeypatch, model, bundle, rows))


# ------------------------------------------------- the label-set step of a streamed run
@TWIN
@given(Y=label_matrix(max_rows=20, max_labels=5), data=st.data())
def test_k_estimated_from_logit_blocks_equals_the_dense_estimate(Y, data):
    from scipy.special import expit

    from spmlkit.practitioner.labelsets import estimate_k_observed, estimate_k_observed_streamed
    from tests.twins.strategies import chunked, scores_for

    if not Y.any():
        Y[0, 0] = True
    n, L = Y.shape
    S = data.draw(scores_for((n, L)))[0]
    got = estimate_k_observed_streamed(SparseLabels.from_dense(Y.astype(np.int8)), chunked(S, data.draw(
        st.integers(1, n))))
    assert got == estimate_k_observed(Y.astype(np.int8), expit(S.astype(np.float64)))


@TWIN_FEW
@given(Y=label_matrix(max_rows=20, max_labels=5), data=st.data(), observed=st.booleans())
def test_label_set_quality_tallied_block_by_block_equals_the_dense_quality(Y, data, observed):
    from scipy.special import expit

    from spmlkit.practitioner.report import label_set_quality, label_set_quality_streamed
    from tests.twins.models import RULES
    from tests.twins.strategies import chunked, scores_for

    n, L = Y.shape
    spec = data.draw(RULES.filter(lambda s: s["rule"] != "per_label" or len(s["thresholds"]) == L))
    P = expit(data.draw(scores_for((n, L)))[0].astype(np.float64))
    truth = {"Z": Y.astype(np.int8)} if observed else {"Y": Y}
    whole = label_set_quality(P, spec=spec, **truth)
    streamed = label_set_quality_streamed(chunked(P, data.draw(st.integers(1, n))), spec=spec,
                                          **{k: SparseLabels.from_dense(v) for k, v in truth.items()})
    _assert_same({str(i): r for i, r in enumerate(whole)}, {str(i): r for i, r in enumerate(streamed)})
