"""SPMLClassifier: scikit-learn's estimator checks, Pipeline, GridSearchCV with a scorer
that needs no full labels, target encodings, validation data, save/load."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import spmlkit
from spmlkit import SPMLClassifier
from spmlkit.errors import ConfigError
from spmlkit.labels import observe
from spmlkit.practitioner.estimator import (
    EXPECTED_FAILED_CHECKS,
    observed_map_scorer,
    observed_recall_scorer,
)
from spmlkit.practitioner.labelsets import LabelSetWarning
from tests.helpers.factories import RULE_NAMES, make_toy_dataset, single_positive_data


def data(n=200, d=5, L=4, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(d, L))
    X = rng.normal(size=(n, d))
    Y = (X @ W + rng.normal(scale=0.3, size=(n, L))) > 0.5
    Y[~Y.any(1), 0] = True
    return X, Y, observe(Y, "single_positive", seed=seed)


def test_sklearn_estimator_checks():
    """Every check that applies passes; the ones that assume '1-D class labels in means
    1-D class labels out' are declared (with the reason) in EXPECTED_FAILED_CHECKS."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(SPMLClassifier("an", epochs=2, batch_size=16), on_fail=None,
                                  expected_failed_checks=EXPECTED_FAILED_CHECKS)
    status = {}
    for r in results:
        status.setdefault(r["check_name"], set()).add(r["status"])
    failed = {k: v for k, v in status.items() if "failed" in v}
    assert not failed, failed
    ran = {k for k, v in status.items() if "passed" in v}
    # the multi-label checks are among those that run and pass (check_classifier_multioutput
    # assumes predict == predict_proba > 0.5; the default rule is expected-k since issue 15)
    assert {"check_classifiers_multilabel_output_format_predict",
            "check_classifiers_multilabel_output_format_predict_proba",
            "check_classifiers_multilabel_representation_invariance", "check_estimators_pickle",
            "check_fit_idempotent", "check_n_features_in_after_fitting"} <= ran
    # the expected failures really fail, and nothing else does: the list is neither stale
    # (a declared check that now passes or skips) nor short (both directions are checked)
    xfail = {k for k, v in status.items() if "xfail" in v}
    assert xfail == set(EXPECTED_FAILED_CHECKS), {"declared, did not fail": set(EXPECTED_FAILED_CHECKS) - xfail,
                                                  "failed, not declared": xfail - set(EXPECTED_FAILED_CHECKS)}


def test_fit_predict_shapes_and_encodings():
    X, Y, Z = data()
    clf = SPMLClassifier("an", epochs=3, lr=0.01).fit(X, Z)
    assert clf.classes_.tolist() == [0, 1, 2, 3] and clf.n_features_in_ == 5
    P = clf.predict_proba(X)
    S = clf.predict(X)
    assert P.shape == S.shape == (200, 4) and S.dtype.kind == "i"
    # the default rule without full labels is expected-k with k estimated (issue 15)
    from spmlkit.practitioner.labelsets import label_sets
    assert clf.model_.label_sets["rule"] == "expected_k"
    assert (label_sets(P, rule="expected_k", k=clf.model_.label_sets["k"]) == S.astype(bool)).all()
    assert np.allclose(P, 1 / (1 + np.exp(-clf.decision_function(X))))
    # a bool matrix of single positives is the same data
    clf_b = SPMLClassifier("an", epochs=3, lr=0.01).fit(X, Z == 1)
    assert np.array_equal(clf_b.predict_proba(X), P)
    # one label name per row (the "path,label" practitioner's file)
    names = np.array(["cat", "dog", "sofa", "tv"])[np.argmax(Z, axis=1)]
    clf_n = SPMLClassifier("an", epochs=3, lr=0.01).fit(X, names)
    assert clf_n.classes_.tolist() == ["cat", "dog", "sofa", "tv"]
    assert np.array_equal(clf_n.predict_proba(X), P)
    assert clf_n.predict_label_sets(X[:1])[0] == [c for c, s in zip(clf_n.classes_, S[0]) if s]
    with pytest.raises(ValueError, match="Unknown label type"):
        SPMLClassifier("an").fit(X, np.full((200, 4), 2))
    # a label unseen in fit counts as a miss in score, not an error (issue 15: cross-validation folds)
    assert np.isfinite(clf_n.score(X[:3], ["cat", "dog", "zebra"]))
    with pytest.raises(ValueError, match="not one of the classes"):
        SPMLClassifier("an", epochs=1, classes=["cat", "dog", "sofa"]).fit(X, names)


def test_same_result_as_train_linear():
    """The estimator is train_linear on an in-memory bundle, nothing else."""
    from spmlkit.config import TrainConfig
    from spmlkit.data.memory import ArrayBundle
    from spmlkit.training import train_linear

    X, Y, Z = data()
    clf = SPMLClassifier("an", epochs=3, lr=0.01, validation_fraction=0).fit(X, Z)
    (r,) = train_linear(ArrayBundle(X, Z), TrainConfig(epochs=3, lr=0.01), keep_state=True)
    assert np.array_equal(clf.model_.state["weight"].numpy(), r.state["head"]["weight"].numpy())


def test_pipeline_and_grid_search_without_full_labels():
    X, Y, Z = data(n=240)
    pipe = make_pipeline(StandardScaler(), SPMLClassifier("an", epochs=3, standardize=False))
    grid = GridSearchCV(pipe, {"spmlclassifier__lr": [1e-4, 3e-2]}, cv=3)  # default: score = observed mAP
    grid.fit(X, Z)
    assert grid.best_params_ == {"spmlclassifier__lr": 3e-2}  # 3 epochs at 1e-4 barely move the head
    assert 0 < grid.best_score_ <= 1
    assert grid.predict(X[:5]).shape == (5, 4)
    g2 = GridSearchCV(SPMLClassifier("an", epochs=3, lr=0.01), {"head": ["linear", "mlp"]}, cv=2,
                      scoring={"omap": observed_map_scorer, "r3": observed_recall_scorer(3)}, refit="omap")
    g2.fit(X, Z)
    assert set(g2.cv_results_) >= {"mean_test_omap", "mean_test_r3"}
    assert np.isfinite(g2.cv_results_["mean_test_omap"]).all() and np.isfinite(g2.cv_results_["mean_test_r3"]).all()
    assert g2.best_estimator_.head == g2.best_params_["head"]


def test_validation_data_with_full_labels_tunes_per_label_thresholds():
    X, Y, Z = data(n=300)
    clf = SPMLClassifier("an", epochs=4, lr=0.01, threshold_rule="per_label")
    clf.fit(X[:250], Z[:250], validation_data=(X[250:], Y[250:]))
    assert clf.selection_ == "map" and len(clf.model_.label_sets["thresholds"]) == 4
    assert clf.expected_positives_ == pytest.approx(Y[250:].sum(1).mean())  # Cole Eq. A1
    S = clf.predict(X)
    assert (S == (clf.predict_proba(X) >= np.array(clf.model_.label_sets["thresholds"]))).all()
    with pytest.raises(ConfigError, match="needs validation_data"):
        SPMLClassifier("an", threshold_rule="per_label").fit(X, Z)
    ek = SPMLClassifier("an", epochs=2, threshold_rule="expected_k", expected_positives=2.0).fit(X, Z)
    assert (ek.predict(X).sum(1) == 2).all()


def test_save_and_load(tmp_path):
    X, Y, Z = data()
    names = np.array(["cat", "dog", "sofa", "tv"])[np.argmax(Z, axis=1)]
    clf = SPMLClassifier("an", epochs=2, lr=0.01, threshold=0.3).fit(X, names)
    clf.save(tmp_path / "m")
    back = SPMLClassifier.load(tmp_path / "m")
    assert back.get_params() == clf.get_params() and back.classes_.tolist() == clf.classes_.tolist()
    assert np.array_equal(back.predict_proba(X), clf.predict_proba(X))
    assert np.array_equal(back.predict(X), clf.predict(X))
    generic = spmlkit.load(tmp_path / "m")  # the same folder through the generic loader
    assert np.array_equal(generic.predict(X), clf.predict(X)) and generic.label_names == ["cat", "dog", "sofa", "tv"]
    assert clone(back).get_params() == clf.get_params()


# The ``auto`` recipe (issue 16): registered, usable from the CLI, SPMLClassifier and
# bench, chooses with observed labels only, and combines exactly what it says.


SMALL = dict(members="an,l1r", lrs="1e-2,1e-3", combine="mean_probability")


def test_spml_classifier_auto():
    from spmlkit import SPMLClassifier

    ds = make_toy_dataset(n=160)
    X, Y = ds.splits["train"].X, ds.splits["train"].Y
    from spmlkit.labels import observe

    Z = observe(Y, "single_positive", seed=0)
    clf = SPMLClassifier(method="auto", method_params=SMALL, epochs=3).fit(X, Z)
    assert clf.model_.members == 2
    assert clf.predict_proba(X).shape == Y.shape
    with pytest.raises(ConfigError, match="validation"):
        SPMLClassifier(method="auto", method_params=SMALL, epochs=2, validation_fraction=0).fit(X, Z)


# Issue 15 §4: cross-validation with ordinary 1-D string labels.  A label rare enough
# to be missing from a fold's training rows used to make every score NaN (the search then
# silently kept its first candidate).  Now ``classes=`` fixes the vocabulary of every fit,
# and ``score`` counts a label unseen in fit as a miss.  Also ``verbose`` (§5).


VOCAB = ["person", "dog", "cell phone", "car", "cat"]  # not sorted: classes_ keeps this order
RARE = "cell phone"


def one_label_data(n=150, seed=0):
    """1-D string labels, learnable from X; 'cell phone' on a single row, so stratified
    3-fold CV leaves it out of the training rows of one fold."""
    rng = np.random.default_rng(seed)
    common = [c for c in VOCAB if c != RARE]
    centres = rng.normal(scale=3.0, size=(len(VOCAB), 6))
    idx = rng.integers(0, len(common), n)
    y = np.array(common)[idx].astype(object)
    y[7] = RARE
    X = centres[[VOCAB.index(c) for c in y]] + rng.normal(size=(n, 6))
    return X, y


@pytest.mark.filterwarnings("ignore:The least populated class")
def test_fold_without_the_rare_label_used_to_fail():
    X, y = one_label_data()
    train, test = next((tr, te) for tr, te in StratifiedKFold(3).split(X, y) if RARE in y[te])
    assert RARE not in y[train]
    clf = SPMLClassifier("an", epochs=3).fit(X[train], y[train])
    assert RARE not in clf.classes_.tolist()
    # seen at score time but not in fit: a miss, not an exception
    s = clf.score(X[test], y[test])
    assert np.isfinite(s) and 0 <= s <= 1
    # exactly: the mean over labels with an observed positive, the unseen label with AP 0
    from spmlkit.metrics import mean_average_precision

    known = y[test] != RARE
    names = clf.classes_.tolist()
    Z = np.zeros((len(test), len(names)), dtype=bool)  # the rare row: a negative for every known label
    Z[np.flatnonzero(known), [names.index(c) for c in y[test][known]]] = True
    m_known = mean_average_precision(Z, clf.decision_function(X[test])).map / 100
    n_known = int(Z.any(0).sum())
    assert s == pytest.approx(m_known * n_known / (n_known + 1))
    r = observed_recall_scorer(5)(clf, X[test], y[test])  # every known label is in the top 5 of 4
    assert r == pytest.approx(known.sum() / len(known))


def test_classes_gives_every_fit_the_full_vocabulary():
    X, y = one_label_data()
    keep = y != RARE
    clf = SPMLClassifier("an", epochs=3, classes=VOCAB).fit(X[keep], y[keep])
    assert clf.classes_.tolist() == VOCAB  # the given order, the rare label included
    assert clf.predict_proba(X).shape == (len(X), len(VOCAB))
    Z = np.zeros((len(y), len(VOCAB)), dtype=np.int8)
    Z[np.arange(len(y)), [VOCAB.index(c) for c in y]] = 1
    assert clf.score(X, y) == pytest.approx(observed_map_scorer(clf, X, Z))
    with pytest.raises(ValueError, match="not one of the classes"):
        SPMLClassifier("an", epochs=1, classes=VOCAB[:-1]).fit(X, y)
    with pytest.raises(ValueError, match="repeat"):
        SPMLClassifier("an", epochs=1, classes=["a", "a"]).fit(X, y)
    # a saved estimator with classes= round-trips through model.json
    assert clf.model_.info["estimator_params"]["classes"] == VOCAB


@pytest.mark.parametrize("classes", [None, VOCAB])
def test_grid_search_on_1d_string_labels_is_finite_and_picks_the_better_candidate(classes):
    X, y = one_label_data()
    grid = GridSearchCV(make_pipeline(StandardScaler(), SPMLClassifier("an", standardize=False, epochs=10,
                                                                       classes=classes)),
                        # the deliberately bad lr is first: a search that cannot score keeps it
                        {"spmlclassifier__lr": [1e-7, 1e-2], "spmlclassifier__method": ["an", "em"]}, cv=3,
                        error_score="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "least populated class has only 1 member"
        grid.fit(X, y)
    scores = grid.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all()
    assert grid.best_params_["spmlclassifier__lr"] == 1e-2
    bad = [s for s, p in zip(scores, grid.cv_results_["params"]) if p["spmlclassifier__lr"] == 1e-7]
    assert grid.best_score_ > max(bad) + 0.05
    assert grid.best_estimator_.predict(X[:3]).shape[0] == 3


@pytest.mark.parametrize("classes", [None, VOCAB])
def test_cross_val_score_on_1d_string_labels(classes):
    X, y = one_label_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        s = cross_val_score(SPMLClassifier("an", epochs=5, lr=1e-2, classes=classes), X, y, cv=3, error_score="raise")
    assert s.shape == (3,) and np.isfinite(s).all() and (s > 0.3).all()


def test_verbose_prints_one_line_per_epoch_to_stderr(capsys):
    X, y = one_label_data(60)
    SPMLClassifier("an", epochs=3).fit(X, y)
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    SPMLClassifier("an", epochs=3, verbose=True).fit(X, y)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 3
    assert lines[0].startswith("SPMLClassifier an: epoch 1/3, training loss ")
    assert "validation observed_map" in lines[-1] and "epoch 3/3" in lines[-1]


# Issue 15 §3: the default label-set rule without full labels is expected-k with k
# known or estimated from the observations (1 / observed recall@1), not a fixed 0.5;
# implausible sets (mean size > 2x away from k, > 50% empty) are warned about in the
# Python API (LabelSetWarning), in `spml predict --labels` (one stderr line) and in the
# run report.  Explicit `--threshold-rule threshold --threshold 0.5` stays available and
# saved models keep their stored rule.




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


def test_categorical_columns_are_encoded_and_the_encoding_saved(tmp_path):
    """Issue 36: with categorical=[...] the raw table of the training layout is what
    predict_proba, the saved model and 'spml predict' take (columns by name); an unseen
    level is an error naming the column and the level."""
    pd = pytest.importorskip("pandas")
    from spmlkit.errors import DataFormatError

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"t": rng.normal(size=90), "soil": rng.integers(1, 4, 90).astype(float),
                       "u": rng.normal(size=90)})
    y = np.array(["a", "b", "c"])[rng.integers(0, 3, 90)]
    clf = SPMLClassifier("an", epochs=2, categorical=["soil"]).fit(df, y)
    assert clf.n_features_in_ == 3 and list(clf.feature_names_in_) == ["t", "soil", "u"]
    assert clf.model_.input["feature_names"] == ["t", "soil=1", "soil=2", "soil=3", "u"]
    P = clf.predict_proba(df)
    assert np.array_equal(clf.predict_proba(df[["u", "soil", "t"]]), P)  # by name, any order
    assert np.array_equal(clf.predict_proba(df.to_numpy()), P)  # an array: the training order
    clf.save(tmp_path / "m")
    loaded = spmlkit.load(tmp_path / "m")
    assert np.allclose(loaded.predict_proba(df), P) and np.allclose(loaded.predict_proba(dict(df.items())), P)
    again = SPMLClassifier.load(tmp_path / "m")
    assert np.allclose(again.predict_proba(df), P) and list(again.feature_names_in_) == ["t", "soil", "u"]
    bad = df.copy()
    bad.loc[5, "soil"] = 7.0
    with pytest.raises(DataFormatError, match=r"covariate 'soil' has level 7, which the model never saw"):
        clf.predict_proba(bad)
    with pytest.raises(DataFormatError, match="missing covariate column 'u'"):
        loaded.predict_proba(df[["t", "soil"]])
    plain = SPMLClassifier("an", epochs=2).fit(df, y)  # no categorical: a DataFrame is still matched by name
    assert np.array_equal(plain.predict_proba(df[["u", "t", "soil"]]), plain.predict_proba(df))


def test_the_lazy_names_are_in_dir_spmlkit():
    """Issue 37: SPMLClassifier (imported on first use) shows in dir(spmlkit) and tab completion."""
    import spmlkit

    names = dir(spmlkit)
    assert {"SPMLClassifier", "LabelSetWarning", "load", "__version__"} <= set(names)
    assert all(hasattr(spmlkit, n) for n in spmlkit.__all__)


def test_label_names_are_normalised_as_the_cli_does():
    """'cat' and 'cat ' (and NFC/NFD spellings) are one label in the Python API too."""
    from spmlkit.practitioner.estimator import _check_classes, _to_observations

    Z, classes = _to_observations(np.array(["cat", "cat ", "cafe\u0301", " caf\u00e9"], dtype=object))
    assert classes.tolist() == ["caf\u00e9", "cat"] and Z.tolist() == [[0, 1], [0, 1], [1, 0], [1, 0]]
    with pytest.raises(ValueError, match="must not repeat"):
        _check_classes(["cat", "cat "])
