"""Issue 15 §4: cross-validation with ordinary 1-D string labels.  A label rare enough
to be missing from a fold's training rows used to make every score NaN (the search then
silently kept its first candidate).  Now ``classes=`` fixes the vocabulary of every fit,
and ``score`` counts a label unseen in fit as a miss.  Also ``verbose`` (§5)."""
import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from spmlkit import SPMLClassifier
from spmlkit.practitioner.estimator import observed_map_scorer, observed_recall_scorer

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
