"""Issue 15 §3: the default label-set rule without full labels is expected-k with k
known or estimated from the observations (1 / observed recall@1), not a fixed 0.5;
implausible sets (mean size > 2x away from k, > 50% empty) are warned about in the
Python API (LabelSetWarning), in `spml predict --labels` (one stderr line) and in the
run report.  Explicit `--threshold-rule threshold --threshold 0.5` stays available and
saved models keep their stored rule."""
import contextlib
import csv
import io
import json
import warnings

import numpy as np
import pytest

import spmlkit
from spmlkit import SPMLClassifier
from spmlkit.cli import main
from spmlkit.practitioner.labelsets import LabelSetWarning, default_rule, estimate_k_observed, label_set_warning, label_sets

RULE_NAMES = [f"l{i}" for i in range(12)]


def single_positive_data(n, seed=0, L=12, D=8):
    """Features with a learnable multi-label structure, 1-3 true labels per row, one
    uniformly chosen observed positive per row."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(D, L))
    X = rng.normal(size=(n, D))
    S = X @ W + rng.normal(scale=0.5, size=(n, L))
    sizes = rng.integers(1, 4, n)
    Y = np.zeros((n, L), dtype=bool)
    order = np.argsort(-S, axis=1)
    for i in range(n):
        Y[i, order[i, :sizes[i]]] = True
    obs = np.array([rng.choice(np.flatnonzero(r)) for r in Y])
    return X, Y, obs


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


# ------------------------------------------------------------------------ Python API
def test_estimator_default_is_expected_k_without_full_labels_and_warns_for_threshold():
    X, Y, obs = single_positive_data(600)
    y = np.array(RULE_NAMES)[obs]
    Xte, _, _ = single_positive_data(300, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LabelSetWarning)  # the default rule must not warn
        clf = SPMLClassifier("an", lr=1e-2, epochs=10).fit(X, y)
        S = clf.predict(Xte)
        sets = clf.predict_label_sets(Xte)
    spec = clf.model_.label_sets
    assert spec["rule"] == "expected_k" and "observed recall@1" in spec["k_source"]
    k_true = Y.sum(1).mean()
    assert k_true / 2 <= spec["k"] <= 2 * k_true  # a usable estimate of the 2.0 labels per row
    assert (S.sum(1) == max(int(np.floor(spec["k"] + 0.5)), 1)).all() and len(sets[0]) == S[0].sum()
    # assume-negative scores sit far below 0.5: the explicit fixed threshold gives empty sets, and says so
    an = SPMLClassifier("an", lr=1e-2, epochs=10, threshold_rule="threshold", threshold=0.5).fit(X, y)
    with pytest.warns(LabelSetWarning, match="empty") as rec:
        S_thr = an.predict(Xte)
    assert (S_thr == (an.predict_proba(Xte) >= 0.5)).all()  # the fixed threshold is still available
    assert rec[0].filename == __file__  # points at the caller's line
    with pytest.warns(LabelSetWarning):
        an.predict_label_sets(Xte)


def test_estimator_known_k_is_used_as_is():
    X, _, obs = single_positive_data(300)
    clf = SPMLClassifier("an", epochs=3, expected_positives=3.0).fit(X, np.array(RULE_NAMES)[obs])
    assert clf.model_.label_sets["rule"] == "expected_k" and clf.model_.label_sets["k"] == 3.0
    assert (clf.predict(X[:20]).sum(1) == 3).all()


def test_estimator_without_held_out_rows_estimates_k_on_training_rows():
    X, _, obs = single_positive_data(300)
    clf = SPMLClassifier("an", epochs=3, validation_fraction=0).fit(X, np.array(RULE_NAMES)[obs])
    assert clf.model_.label_sets["rule"] == "expected_k" and "training" in clf.model_.label_sets["k_source"]


# ------------------------------------------------------------------- command line
@pytest.fixture(scope="module")
def observed_run(tmp_path_factory):
    """An assume-negative model trained on a single-positive CSV (no full labels anywhere)."""
    d = tmp_path_factory.mktemp("rule")
    X, _, obs = single_positive_data(500)
    Xn, _, _ = single_positive_data(60, seed=2)
    with open(d / "own.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"f{j}" for j in range(X.shape[1])] + ["label"])
        for x, o in zip(X, obs):
            w.writerow([*x, RULE_NAMES[o]])
    with open(d / "new.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id"] + [f"f{j}" for j in range(X.shape[1])])
        for i, x in enumerate(Xn):
            w.writerow([f"n{i}", *x])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["prepare", str(d / "own.csv"), "--observed", "--label-column", "label", "-o",
                     str(d / "b")]) == 0
        assert main(["train", str(d / "b"), "-m", "an", "--lr", "0.01", "--epochs", "10", "--threads", "1",
                     "-o", str(d / "r")]) == 0
    return d, Xn


def test_train_stores_expected_k_and_report_explains_it(observed_run):
    d, _ = observed_run
    meta = json.loads((d / "r" / "model" / "model.json").read_text())
    assert meta["label_sets"]["rule"] == "expected_k"
    assert "observed recall@1 on" in meta["label_sets"]["k_source"]
    report = (d / "r" / "report.md").read_text()
    assert "Default rule stored with the model: **expected-k (k=" in report
    assert "Expected labels per example k =" in report and "Warning" not in report


def test_predict_default_rule_and_warning_line_on_stderr(observed_run, tmp_path, capsys):
    d, Xn = observed_run
    model = spmlkit.load(d / "r")
    assert main(["predict", str(d / "r"), str(d / "new.csv"), "--labels", "-o", str(tmp_path / "a.csv")]) == 0
    out, err = capsys.readouterr()
    assert "rule: expected-k" in out and err == ""
    # the fixed threshold stays available explicitly; for assume-negative scores it gives empty sets
    assert main(["predict", str(d / "r"), str(d / "new.csv"), "--labels", "--threshold-rule", "threshold",
                 "--threshold", "0.5", "-o", str(tmp_path / "b.csv")]) == 0
    out, err = capsys.readouterr()
    with open(tmp_path / "b.csv", newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    S = label_sets(model.predict_proba(Xn), rule="threshold", threshold=0.5)
    assert [r[1] for r in rows] == [";".join(model.label_names[j] for j in np.flatnonzero(s)) for s in S]
    assert err.count("\n") == 1 and err.startswith("spml: warning: label sets look implausible")
    assert "empty" in err


def test_saved_model_keeps_its_stored_rule(observed_run, tmp_path):
    import shutil

    d, Xn = observed_run
    shutil.copytree(d / "r" / "model", tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    meta["label_sets"] = {"rule": "threshold", "threshold": 0.5}  # as written before issue 15
    (tmp_path / "m" / "model.json").write_text(json.dumps(meta))
    model = spmlkit.load(tmp_path / "m")
    assert (model.predict(Xn) == (model.predict_proba(Xn) >= 0.5)).all()
    del meta["label_sets"]  # older still: no stored rule at all -> threshold 0.5 as before
    (tmp_path / "m" / "model.json").write_text(json.dumps(meta))
    assert spmlkit.load(tmp_path / "m").label_sets == {"rule": "threshold", "threshold": 0.5}


def test_run_report_warns_about_implausible_default_sets(tmp_path):
    from spmlkit.practitioner.report import label_set_quality, run_summary_lines, write_run_report

    rng = np.random.default_rng(0)
    P = rng.random((50, 6)) * 0.3  # no score reaches 0.5: every set empty under threshold 0.5
    Z = np.zeros((50, 6), dtype=np.int8)
    Z[np.arange(50), rng.integers(0, 6, 50)] = 1
    rule = {"rule": "threshold", "threshold": 0.5, "k": 2.0, "k_estimate": 2.0, "k_source": "given"}
    rows = label_set_quality(P, Z=Z, spec=rule)
    assert rows[0]["default"] and rows[0]["empty_sets"] == 100.0
    record = {"selection": "observed_map", "best_epoch": 1, "epochs_run": 1, "val_score": 1.0, "seconds": 0.0,
              "label_sets": rule, "label_set_quality": rows}
    write_run_report(tmp_path, result=record, config={"method": "an"}, bundle_meta={"has_full_labels": False},
                     label_set_rows=rows, label_rule=rule)
    report = (tmp_path / "report.md").read_text()
    assert "> **Warning (threshold 0.5, the default rule, on the test split):** label sets look implausible" in report
    assert any(line.startswith("warning: label sets look implausible") for line in run_summary_lines(record, tmp_path))
