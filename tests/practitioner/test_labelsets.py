"""From probabilities to label sets: every rule on fabricated probabilities, with the
expected sets worked out by hand."""

import numpy as np
import pytest

import spmlkit
from spmlkit.errors import ConfigError, UnknownNameError
from spmlkit.practitioner.labelsets import (choose_rule, default_rule, estimate_k, estimate_k_observed,
                                            expected_k_sets, format_label_sets, label_set_warning, label_sets,
                                            observed_set_scores, round_k, threshold_sets, top_k_sets,
                                            tune_label_thresholds)

P = np.array([[0.90, 0.60, 0.10, 0.50],
              [0.20, 0.30, 0.40, 0.10],
              [0.70, 0.70, 0.70, 0.05]])


def test_fixed_threshold_default_and_per_label_array():
    # p >= 0.5: row 0 keeps 0.90, 0.60, 0.50; row 1 nothing; row 2 the three 0.70
    assert threshold_sets(P).astype(int).tolist() == [[1, 1, 0, 1], [0, 0, 0, 0], [1, 1, 1, 0]]
    assert threshold_sets(P, threshold=0.65).astype(int).tolist() == [[1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]]
    t = np.array([0.95, 0.25, 0.35, 0.0])
    assert threshold_sets(P, threshold=t).astype(int).tolist() == [[0, 1, 0, 1], [0, 1, 1, 1], [0, 1, 1, 1]]
    with pytest.raises(ConfigError, match="one value per label"):
        threshold_sets(P, threshold=[0.5, 0.5])


def test_top_k_breaks_ties_by_label_index():
    assert top_k_sets(P, k=1).astype(int).tolist() == [[1, 0, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]]
    # row 2 has a three-way tie at 0.70: the two lowest label indices win
    assert top_k_sets(P, k=2).astype(int).tolist() == [[1, 1, 0, 0], [0, 1, 1, 0], [1, 1, 0, 0]]
    assert top_k_sets(P, k=0).sum() == 0 and top_k_sets(P, k=9).all()
    with pytest.raises(ConfigError):
        top_k_sets(P, k=1.5)


def test_expected_k_rounds_half_up_and_keeps_at_least_one():
    assert round_k(1.5) == 2 and round_k(2.5) == 3 and round_k(2.49) == 2  # Python's round(2.5) is 2
    assert (expected_k_sets(P, k=1.5) == top_k_sets(P, k=2)).all()
    assert (expected_k_sets(P, k=2.9) == top_k_sets(P, k=3)).all()  # COCO's k* (Cole Table A3)
    assert (expected_k_sets(P, k=0.2) == top_k_sets(P, k=1)).all()  # k > 0 never gives empty sets
    # batch reading of k: round(1.5 * 3) = 5 highest entries of the whole matrix:
    # 0.90, then the 0.70 tie in row-major order (2,0), (2,1), (2,2), then 0.60
    S = expected_k_sets(P, k=1.5, per="batch")
    assert S.astype(int).tolist() == [[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]]
    assert S.sum() == 5


def test_estimate_k_eq_a1():
    Y = np.array([[1, 1, 0], [0, 1, 0], [1, 1, 1], [1, 0, 0]])
    assert estimate_k(Y) == pytest.approx((2 + 1 + 3 + 1) / 4)  # Cole Eq. A1
    Z = np.array([[1, 0, 0], [1, -1, 1], [-1, 1, -1], [1, 0, -1]])
    assert estimate_k(Z=Z) == pytest.approx((2 + 1) / 2)  # only rows 2 and 3 are fully observed
    with pytest.raises(ConfigError, match="single positives say nothing"):
        estimate_k(Z=np.array([[1, 0, 0], [0, 1, 0]]))


def test_per_label_thresholds_by_hand():
    # label 0: scores .9(+) .8(-) .7(+) .2(-)
    #   cut after .9: TP1 FP0 FN1 -> F1 2/3; after .8: 2/(2+1+1)=.5; after .7: 4/(4+1)=.8; after .2: 4/6
    #   best .8 -> threshold midway between .7 and .2 = .45
    # label 1: scores .6(-) .5(+) .5(+) .1(-): the .5 tie is one cut
    #   after .6: 0; after the .5 group: TP2 FP1 -> 4/5 = .8; after .1: 4/6 -> threshold (.5+.1)/2 = .3
    # label 2: no positive, highest score .3 -> max(0.5, just above .3) = 0.5
    # label 3: two cuts with F1 = 1 and 2/3... scores .9(+) .1(-) -> after .9: F1 1 -> threshold .5
    Y = np.array([[1, 0, 0, 1], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]])
    Pv = np.array([[.9, .6, .3, .9], [.8, .5, .2, .1], [.7, .5, .1, .1], [.2, .1, .05, .1]])
    tun = tune_label_thresholds(Y, Pv)
    assert tun.thresholds.tolist() == pytest.approx([0.45, 0.3, 0.5, 0.5])
    assert tun.f1[:2].tolist() == pytest.approx([80.0, 80.0]) and np.isnan(tun.f1[2]) and tun.f1[3] == 100.0
    assert tun.labels_without_positives == [2] and tun.n_positives.tolist() == [2, 2, 0, 1]
    # without positives and scores above 0.5: just above the highest score (no validation false positive)
    t = tune_label_thresholds(np.zeros((3, 1)), np.array([[0.7], [0.9], [0.6]])).thresholds[0]
    assert t > 0.9 and t == np.nextafter(0.9, 1)
    # the tuned thresholds reproduce the best F1 when applied
    S = label_sets(Pv, rule="per_label", thresholds=tun.thresholds)
    assert S[:, 0].tolist() == [True, True, True, False]
    d = tun.to_dict()
    assert d["labels_without_positives"] == [2] and d["f1"][2] is None


def test_per_label_ties_prefer_the_higher_threshold():
    # .9(+) .5(-) .4(+) .3(-) .2(-) .1(+), 3 positives:
    #   after .9: 2/(2+0+2) = .5; after .5: 2/(2+1+2) = .4; after .4: 4/(4+1+1) = .667;
    #   after .3: 4/(4+2+1) = .571; after .2: 4/8 = .5; after .1: 6/(6+3+0) = .667
    #   tie at .667 -> the higher cut (after .4) wins: threshold (.4 + .3) / 2
    y = np.array([[1], [0], [1], [0], [0], [1]])
    p = np.array([[.9], [.5], [.4], [.3], [.2], [.1]])
    assert tune_label_thresholds(y, p).thresholds[0] == pytest.approx(0.35)


def test_rule_choice_on_validation():
    rng = np.random.default_rng(0)
    Y = np.zeros((40, 6), dtype=bool)
    for n in range(40):
        Y[n, rng.choice(6, 2, replace=False)] = True  # exactly 2 labels per example
    # well-calibrated, separable: threshold 0.5 is perfect and, being first, wins the tie
    spec, table = choose_rule(Y, np.where(Y, 0.8, 0.2), k=2.0)
    assert spec["rule"] == "threshold" and "min_labels" not in spec and len(spec["thresholds"]) == 6
    assert [(r["rule"], r.get("min_labels", 0), r["out_of_fold"]) for r in table] == [
        ("threshold", 0, False), ("threshold", 1, False), ("expected_k", 0, False), ("per_label", 0, True),
        ("per_label", 1, True)]
    assert table[0]["example_f1"] == pytest.approx(100.0) and spec["choice"] == table
    # the assume-negative picture: right ranking, probabilities too low -> 0.5 keeps nothing
    P = np.where(Y, 0.3, 0.1) + rng.uniform(0, 0.01, Y.shape)
    spec, table = choose_rule(Y, P, k=2.0)
    f1 = {(r["rule"], r.get("min_labels", 0)): r["example_f1"] for r in table}
    assert f1[("threshold", 0)] == 0 and f1[("threshold", 1)] == pytest.approx(100 * 2 / 3)
    assert f1[("expected_k", 0)] == pytest.approx(100.0)
    assert spec["rule"] == "expected_k" and spec["k"] == 2.0  # ties with per-label go to the simpler rule


def test_per_label_choice_is_scored_out_of_fold():
    """Pure noise: in-sample per-label F1 tuning looks good, out of fold it does not."""
    rng = np.random.default_rng(1)
    Y = rng.random((30, 10)) < 0.15
    P = rng.random((30, 10))
    in_sample = label_sets(P, rule="per_label", thresholds=tune_label_thresholds(Y, P).thresholds)
    from spmlkit.metrics import label_set_scores

    spec, table = choose_rule(Y, P, k=1.5)
    oof = [r for r in table if r["rule"] == "per_label" and not r.get("min_labels")][0]["example_f1"]
    assert label_set_scores(Y, in_sample)["example_f1"] > oof + 5  # 31.6 vs 21.9 here


def test_min_labels_and_dispatch_errors():
    S = label_sets(P, rule="threshold", threshold=0.95, min_labels=1)
    assert (S == top_k_sets(P, k=1)).all()
    with pytest.raises(ConfigError, match="per-label thresholds"):
        label_sets(P, rule="per_label")
    with pytest.raises(ConfigError, match="expected number"):
        label_sets(P, rule="expected_k")
    with pytest.raises(UnknownNameError, match="unknown threshold rule"):
        label_sets(P, rule="magic")


def test_format_and_observed_scores():
    assert format_label_sets(threshold_sets(P), ["cat", "dog", "sofa", "tv"]) == ["cat;dog;tv", "", "cat;dog;sofa"]
    Z = np.array([[0, 1, 0, 0], [1, 0, 0, -1], [0, 0, -1, 1]])
    sc = observed_set_scores(Z, threshold_sets(P))
    # observed positives: (0,1) predicted, (1,0) not, (2,3) not -> 1/3; negatives (1,3) no, (2,2) yes -> 1/2
    assert sc["observed_recall"] == pytest.approx(100 / 3) and sc["observed_negative_rate"] == pytest.approx(50.0)
    assert sc["empty_sets"] == pytest.approx(100 / 3) and sc["mean_predicted_labels"] == pytest.approx(2.0)


# Issue 15 §3: the default label-set rule without full labels is expected-k with k
# known or estimated from the observations (1 / observed recall@1), not a fixed 0.5;
# implausible sets (mean size > 2x away from k, > 50% empty) are warned about in the
# Python API (LabelSetWarning), in `spml predict --labels` (one stderr line) and in the
# run report.  Explicit `--threshold-rule threshold --threshold 0.5` stays available and
# saved models keep their stored rule.


# ------------------------------------------------------------------ the estimator of k
def test_estimate_k_observed_is_the_harmonic_mean_of_set_sizes_under_perfect_ranking():
    rng = np.random.default_rng(0)
    N, L = 20000, 10
    sizes = rng.integers(1, 6, N)
    Y = np.zeros((N, L), dtype=bool)
    for i in range(N):
        Y[i, rng.choice(L, sizes[i], replace=False)] = True
    P = Y + 0.01 * rng.random((N, L))  # every true label above every false one
    Z = np.zeros((N, L), dtype=np.int8)
    Z[np.arange(N), [rng.choice(np.flatnonzero(r)) for r in Y]] = 1
    k_hat = estimate_k_observed(Z, P)
    assert k_hat == pytest.approx(1 / np.mean(1 / sizes), rel=0.03)
    assert k_hat < sizes.mean()  # harmonic <= arithmetic mean
    # a model that never ranks the observed label first gives the largest k (clipped to L)
    assert estimate_k_observed(Z, -P) == L
    with pytest.raises(spmlkit.errors.ConfigError, match="no observed positive"):
        estimate_k_observed(np.zeros((3, L)), P[:3])


def test_default_rule_precedence():
    Z = np.eye(3, dtype=np.int8)
    P = np.array([[.9, .1, .2], [.8, .7, .1], [.1, .2, .3]])  # 2 of 3 observed labels on top
    known = default_rule(k=2.4, k_source="given", Z=Z, P=P)
    assert known["rule"] == "expected_k" and known["k"] == 2.4 and known["k_source"] == "given"
    est = default_rule(Z=Z, P=P)
    assert est["rule"] == "expected_k" and est["k"] == pytest.approx(1.5) and "observed recall@1" in est["k_source"]
    assert default_rule() == {"rule": "top_k", "k": 1, "k_source": None}  # nothing to estimate from


def test_label_set_warning_thresholds():
    full = np.ones((10, 6), dtype=bool)
    assert "6.00 labels per example" in label_set_warning(full, k=2.0)   # 3x too many
    assert label_set_warning(full[:, :4], k=2.0) is None                 # exactly 2x: fine
    one = np.zeros((10, 6), dtype=bool)
    one[:, 0] = True
    assert "more than 2x away" in label_set_warning(one, k=2.5)          # 2.5x too few
    empty = one.copy()
    empty[:6] = False
    assert "60% of the sets are empty" in label_set_warning(empty)       # no k: only the empty check
    empty[:1] = True
    assert label_set_warning(empty) is None                              # 50% empty: not "more than half"


def test_the_model_label_rule_is_one_choice_for_spml_train_and_the_estimator():
    """``model_label_rule``: chosen on full validation labels (with k's provenance), else the
    default rule; a planted bug that skipped the validation choice would keep 'expected_k'."""
    from spmlkit.practitioner.labelsets import choose_rule, default_rule, model_label_rule

    rng = np.random.default_rng(0)
    Y = rng.random((60, 4)) < 0.3
    Y[~Y.any(1), 0] = True
    P = np.clip(Y * 0.7 + rng.random(Y.shape) * 0.3, 0, 1)  # well separated: a threshold rule wins
    assert model_label_rule(k=1.5, k_source="given") == default_rule(k=1.5, k_source="given")
    Z = np.where(Y, 1, 0)
    assert model_label_rule(Z=Z, P=P, where="validation") == default_rule(Z=Z, P=P, where="validation")
    chosen = model_label_rule(k=1.5, k_source="given", Y_val=Y, P_val=P, seed=3)
    expected, _ = choose_rule(Y, P, k=1.5, seed=3)
    assert chosen["rule"] == expected["rule"] != "expected_k"
    assert chosen["k_source"] == "given" and chosen["k_estimate"] == 1.5 and chosen["choice"] == expected["choice"]
