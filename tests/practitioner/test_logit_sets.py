"""The label-set rules on float32 logits (spmlkit.practitioner.logit_sets and
labelsets.label_sets_from_logits): exactly the rules on expit(float64(logits)), the plain
path, on drawn logits with the ties the sigmoid makes (distinct logits, one probability)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from spmlkit.practitioner.inference import top_k_indices, write_top_k_chunks
from spmlkit.practitioner.labelsets import (estimate_k_observed, estimate_k_observed_streamed, label_sets,
                                            label_sets_from_logits, top_labels_from_logits)
from spmlkit.practitioner.logit_sets import logit_cut

# logits where the sigmoid in float64 rounds distinct values together (large, tiny, very
# negative), exact ties, and ordinary values
LEVELS = np.array([0, 1e-30, -1e-30, 1e-17, 2e-16, 26, 27, 30, 36.5, 37, 40, 80, -700, -720, -745, -746, -800,
                   0.3, 0.30000001, 2.0, -2.0, 5.5], np.float32)
FAST = settings(max_examples=100, deadline=None, derandomize=True, database=None)


@st.composite
def logits(draw):
    n, L = draw(st.integers(1, 7)), draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    X = rng.choice(LEVELS, size=(n, L)).astype(np.float32)
    jitter = draw(st.sampled_from([0.0, 1e-6, 1.0]))
    return (X + jitter * rng.normal(size=(n, L))).astype(np.float32), rng


@given(logits())
@FAST
def test_every_rule_on_logits_equals_the_rule_on_float64_probabilities(case):
    X, rng = case
    n, L = X.shape
    P = expit(X.astype(np.float64))
    rules = [dict(rule="threshold"), dict(rule="threshold", threshold=0.999999999999),
             dict(rule="threshold", threshold=1.0), dict(rule="threshold", threshold=0.0),
             dict(rule="threshold", threshold=1e-320), dict(rule="threshold", threshold=float(rng.random())),
             dict(rule="per_label", thresholds=rng.choice([0.5, 1.0, 0.0, 1 - 1e-16, 0.7, 1e-310], L)),
             dict(rule="top_k", k=int(rng.integers(0, L + 2))),
             dict(rule="expected_k", k=float(rng.uniform(0, L))),
             dict(rule="expected_k", k=float(rng.uniform(0, L)), per="batch"),
             dict(rule="expected_k", k=float(rng.uniform(0, L)), per="batch", min_labels=1),
             dict(rule="threshold", threshold=0.99, min_labels=int(rng.integers(1, 3)))]
    for opts in rules:
        np.testing.assert_array_equal(label_sets_from_logits(X, **opts), label_sets(P, **opts), err_msg=str(opts))
    k = int(rng.integers(0, L + 1))
    np.testing.assert_array_equal(top_labels_from_logits(X, k), top_k_indices(P.astype(np.float32), k))


def test_the_logit_cut_is_the_first_logit_whose_probability_reaches_the_threshold():
    for t in (0.5, 0.9, 1e-300, 1 - 1e-16, 0.25):
        tau = logit_cut(t)
        assert expit(np.float64(tau)) >= t
        assert expit(np.float64(np.nextafter(tau, np.float32(-np.inf)))) < t
    assert logit_cut(1.0 + 1e-9) == np.inf and logit_cut(0.0) == -np.finfo(np.float32).max


@given(logits())
@FAST
def test_the_streamed_k_estimate_on_logits_equals_the_plain_one(case):
    X, rng = case
    Z = np.zeros(X.shape, np.int8)
    Z[np.arange(len(X)), rng.integers(0, X.shape[1], len(X))] = 1
    rows = int(rng.integers(1, len(X) + 1))
    streamed = estimate_k_observed_streamed(Z, lambda: ((s, X[s:s + rows]) for s in range(0, len(X), rows)))
    assert streamed == estimate_k_observed(Z, expit(X.astype(np.float64)))


def test_top_k_written_from_logits_equals_top_k_written_from_probabilities(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.choice(LEVELS, size=(40, 6)).astype(np.float32)
    ids = [f"r{i}" for i in range(40)]
    names = list("abcdef")
    a = write_top_k_chunks(tmp_path / "a.csv", ids, names, [(0, expit(X[:25].astype(np.float64))),
                                                             (25, expit(X[25:].astype(np.float64)))], 3)
    b = write_top_k_chunks(tmp_path / "b.csv", ids, names, [(0, X[:25]), (25, X[25:])], 3, logits=True)
    assert a.read_bytes() == b.read_bytes()


def test_logits_must_be_a_models_float32_matrix():
    from spmlkit.errors import DataFormatError

    with pytest.raises(DataFormatError, match="float32"):
        label_sets_from_logits(np.zeros((2, 2)))
    with pytest.raises(DataFormatError, match="row 2"):
        label_sets_from_logits(np.array([[0, 1], [np.nan, 0]], np.float32))


@pytest.mark.parametrize("labels", ["full", "observed"])
def test_label_set_quality_on_logits_equals_it_on_probabilities(labels):
    from spmlkit.practitioner.report import label_set_quality_streamed

    rng = np.random.default_rng(1)
    X = rng.choice(LEVELS, size=(30, 5)).astype(np.float32)
    T = (rng.random((30, 5)) < 0.4).astype(np.int8)
    T[np.arange(30), rng.integers(0, 5, 30)] = 1
    kw = {"Y": T.astype(bool)} if labels == "full" else {"Z": T}
    spec = {"rule": "expected_k", "k": 1.7, "k_estimate": 1.7, "thresholds": rng.choice([0.5, 1.0, 0.9], 5).tolist()}

    def chunks(f):
        return lambda: ((s, f(X[s:s + 7])) for s in range(0, 30, 7))

    a = label_set_quality_streamed(chunks(lambda b: expit(b.astype(np.float64))), spec=spec, **kw)
    b = label_set_quality_streamed(chunks(lambda b: b), spec=spec, logits=True, **kw)
    assert a == b and len(a) >= 4
