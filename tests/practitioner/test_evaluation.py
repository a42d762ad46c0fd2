"""Model selection without full labels, and nothing downstream pretending to have them."""
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.data.memory import ArrayBundle
from spmlkit.errors import ConfigError, SpmlError
from spmlkit.labels import observe
from spmlkit.metrics import (
    mean_average_precision,
    observed_positive_map,
    observed_positive_recall_at_k,
)
from spmlkit.training import train_linear
from tests.helpers.cli import run_cli as run
from tests.helpers.factories import OneSplitBundle

NAMES = ["cat", "dog", "sofa", "tv"]


def toy(n=300, d=6, L=4, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(d, L))
    X = rng.normal(size=(n, d))
    Y = (X @ W + rng.normal(scale=0.3, size=(n, L))) > 0.5
    Y[~Y.any(1), 0] = True
    return X, Y


@pytest.fixture
def own(tmp_path, monkeypatch):
    """own.csv (features, one label per row), val_full.csv (full label sets), new.csv.
    The runs trained on them draw no curves.png (tests/practitioner/test_report.py checks the
    figure; a figure per run would be most of these tests' time)."""
    from spmlkit.practitioner import report

    monkeypatch.setattr(report, "write_curves", lambda rows, path, **kw: Path(path))
    X, Y = toy()
    rng = np.random.default_rng(1)
    feats = [f"f{i}" for i in range(X.shape[1])]
    with open(tmp_path / "own.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", *feats, "label"])
        for i in range(240):
            w.writerow([f"ex{i}", *X[i], NAMES[rng.choice(np.flatnonzero(Y[i]))]])
    with open(tmp_path / "val_full.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", *feats, "label"])
        for i in range(240, 280):
            w.writerow([f"ex{i}", *X[i], ";".join(NAMES[j] for j in np.flatnonzero(Y[i]))])
    with open(tmp_path / "new.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", *feats])
        for i in range(280, 300):
            w.writerow([f"ex{i}", *X[i]])
    return tmp_path, Y[240:280]


def test_the_printed_lines_give_each_number_with_what_it_was_computed_against():
    """What ``spml evaluate`` and report.md print, word for word: a full-label mAP (with the
    classes without positives and how they counted), or the observed-label numbers, each
    said to be on observed labels only."""
    from spmlkit.practitioner.evaluation import OBSERVED_NOTE, format_label_set_quality, format_scores

    full = {"labels": "full", "map": 41.2345, "n_empty_classes": 0, "empty_classes": "exclude"}
    assert format_scores(full) == "mAP 41.23"
    assert format_scores({**full, "n_empty_classes": 2}) == "mAP 41.23 (2 classes without positives excluded)"
    assert format_scores({**full, "n_empty_classes": 1, "empty_classes": "zero"}) == \
        "mAP 41.23 (1 classes without positives counted as 0)"
    assert format_scores({"labels": "full", "map": 7.0}) == "mAP 7.00"
    obs = {"labels": "observed", "observed_map": 12.345, "observed_recall@1": 50.0, "n_examples": 9,
           "observed_recall@3": 66.6666}
    assert format_scores(obs) == (f"{OBSERVED_NOTE}: observed-positive mAP 12.35, observed_recall@1 50.00, "
                                  "observed_recall@3 66.67")
    assert OBSERVED_NOTE == "observed labels only (no full labels): not comparable to a full-label mAP"
    sets = {"labels": "full", "micro_f1": 1.234, "macro_f1": 2.345, "example_f1": 3.456, "micro_precision": 4.567,
            "micro_recall": 5.678, "mean_predicted_labels": 1.5, "empty_sets": 0.0}
    assert format_label_set_quality(sets) == ("micro-F1 1.23, macro-F1 2.35, example-F1 3.46, precision 4.57, "
                                              "recall 5.68, 1.50 labels per example")
    seen = {"labels": "observed", "observed_recall": 75.0, "observed_negative_rate": 12.5,
            "mean_predicted_labels": 2.25, "empty_sets": 12.345}
    assert format_label_set_quality(seen) == (f"{OBSERVED_NOTE}: 75.00% of observed positives predicted, 12.50% of "
                                              "observed negatives predicted, 2.25 labels per example, 12.3% empty sets")
    assert format_label_set_quality({**seen, "observed_negative_rate": None}) == (
        f"{OBSERVED_NOTE}: 75.00% of observed positives predicted, 2.25 labels per example, 12.3% empty sets")
    assert format_label_set_quality({**seen, "observed_negative_rate": 0.0}).count("observed negatives") == 1


# --------------------------------- the streamed evaluation with a stub model (mutation survivors, issue 44)
class _Logits:
    """A model of fixed logits that records what the streamed evaluation asks of it."""

    label_names, info, input, takes_images = ["a", "b", "c"], {}, None, False

    def __init__(self, logits, rule):
        self.logits, self.label_sets, self.budgets, self.asked = logits, dict(rule), [], []

    def stream_rows(self, budget_bytes):
        self.budgets.append(budget_bytes)
        return 2

    def iter_decision_function(self, X, batch_rows=None):
        self.asked.append(batch_rows)
        step = batch_rows or len(X)
        for s in range(0, len(X), step):
            yield s, self.logits[s:s + step]

    def decision_function(self, X):
        return np.asarray(self.logits, dtype=np.float32)


def _Split(n, *, Y=None, Z=None):
    """The one split of a bundle that :func:`evaluate_model` reads (three labels, n rows)."""
    return OneSplitBundle(np.zeros((n, 2)), ["a", "b", "c"], Y=Y, Z=Z)


@pytest.mark.parametrize("rule, n, set_rows", [({"rule": "threshold", "threshold": 0.5}, 5, 2),
                                               ({"rule": "expected_k", "k": 1.5, "per": "batch"}, 5, 5),
                                               ({"rule": "expected_k", "k": 1.5, "per": "batch"}, 1, 1)])
def test_the_streamed_evaluation_asks_for_16_mib_blocks_and_a_batch_rules_whole_split(monkeypatch, rule, n,
                                                                                         set_rows):
    """Blocks of the rows that 16 MiB of scores hold, every pass in those blocks; the sets of a
    rule over the whole collection from one piece (of one row, for one row); float64 logits
    (another model's) are made float32 before a rule is applied to them."""
    from spmlkit.practitioner import evaluation
    from spmlkit.practitioner.labelsets import apply_rule_to_logits
    from spmlkit.sparse_labels import SparseLabels

    logits = np.random.default_rng(n).normal(size=(n, 3))  # float64
    Z = np.zeros((n, 3), dtype=np.int8)
    Z[:, 0], Z[n - 1, 2] = 1, -1
    model = _Logits(logits, rule)
    monkeypatch.setattr(evaluation, "needs_streaming", lambda *a: True)
    ev = evaluation.evaluate_model(model, _Split(n, Z=SparseLabels.from_dense(Z)), "test")
    assert model.budgets == [16 * 2 ** 20]
    assert model.asked[-1] == set_rows and set(model.asked[:-1]) == {2}
    S = apply_rule_to_logits(logits.astype(np.float32), rule)
    assert ev["label_sets"] == pytest.approx(evaluation.evaluate_label_sets(S, Z=Z))


@pytest.mark.parametrize("empty", ["exclude", "zero"])
def test_the_streamed_map_counts_a_class_without_positives_as_told(monkeypatch, empty):
    from spmlkit.practitioner import evaluation
    from spmlkit.sparse_labels import SparseLabels

    logits = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    Y = np.zeros((6, 3), dtype=bool)
    Y[:3, 0] = Y[2:, 1] = True  # no positive of c
    bundle = _Split(6, Y=SparseLabels.from_dense(Y))
    whole = evaluation.evaluate_model(_Logits(logits, {"rule": "top_k", "k": 1}), bundle, "test", empty=empty)
    monkeypatch.setattr(evaluation, "needs_streaming", lambda *a: True)
    model = _Logits(logits, {"rule": "top_k", "k": 1})
    streamed = evaluation.evaluate_model(model, bundle, "test", empty=empty)
    assert set(model.asked) == {2}
    assert (streamed["n_classes"], streamed["n_empty_classes"]) == ((3, 1) if empty == "zero" else (2, 1))
    assert streamed["map"] == pytest.approx(whole["map"]) and streamed["empty_classes"] == empty
    zero = evaluation.evaluate_model(model, bundle, "test", empty="zero")["map"]
    excluded = evaluation.evaluate_model(model, bundle, "test", empty="exclude")["map"]
    assert zero == pytest.approx(excluded * 2 / 3)  # the third class's AP counted as 0


def test_a_streamed_split_without_any_positive_has_no_map_and_says_no_warning(monkeypatch):
    import math
    import warnings

    from spmlkit.practitioner import evaluation
    from spmlkit.sparse_labels import SparseLabels

    monkeypatch.setattr(evaluation, "needs_streaming", lambda *a: True)
    model = _Logits(np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32), {"rule": "top_k", "k": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice" on the way
        ev = evaluation.evaluate_model(model, _Split(4, Y=SparseLabels.from_dense(np.zeros((4, 3), bool))))  # test
    assert math.isnan(ev["map"]) and math.isnan(ev["auc_mean"]) and math.isnan(ev["auc_median"])
    assert (ev["n_classes"], ev["n_empty_classes"], ev["n_auc_classes"]) == (0, 3, 0)
    assert ev["ap"] == ev["auc"] == {"a": None, "b": None, "c": None}

def test_the_features_meet_the_model_by_name_reordered_or_refused():
    """A model that records its input columns meets a bundle's features by name: in the
    bundle's order when it is the model's (the array itself), reordered when the same
    columns come in another order, refused in one line naming them when they differ; by
    position when either side has no names (or the bundle holds images)."""
    from spmlkit.data.formats.tabular import describe_name_difference
    from spmlkit.practitioner.evaluation import model_features

    class Features(OneSplitBundle):
        def __init__(self, names, kind="features"):
            super().__init__(np.arange(12.0).reshape(4, 3), ["a", "b", "c"])
            self.meta, self.kind, self.asked = {"feature_names": names}, kind, []

        def features(self, split, feature_set=None):
            self.asked.append((split, feature_set))
            return self.X

    model = _Logits(np.zeros((4, 3), np.float32), {"rule": "top_k", "k": 1})
    model.info, model.input = {"feature_set": "mix"}, {"feature_names": ["f2", "f0", "f1"]}
    b = Features(["f0", "f1", "f2"])
    assert (model_features(model, b, "val") == b.X[:, [2, 0, 1]]).all() and b.asked == [("val", "mix")]
    for names, kind in ((["f2", "f0", "f1"], "features"), (None, "features"), ([], "features"),
                        (["f0", "f1", "f2"], "images")):
        b = Features(names, kind)
        assert model_features(model, b, "test") is b.X, (names, kind)
    for inp in (None, {}, {"feature_names": None}, {"feature_names": []}, "columns"):
        model.input = inp
        assert model_features(model, Features(["f0", "f1", "f2"]), "test") is not None
        assert (model_features(model, Features(["f0", "f1", "f2"]), "test") == np.arange(12.0).reshape(4, 3)).all()
    model.input = {"feature_names": ["f0", "f1", "g"]}
    with pytest.raises(SpmlError) as e:
        model_features(model, Features(["f0", "f1", "f2"]), "test")
    assert str(e.value) == ("bundle: the bundle's feature columns differ from the model's: "
                            + describe_name_difference(["f0", "f1", "g"], ["f0", "f1", "f2"], "feature column")
                            + "; prepare the data with the columns the model was trained on")
    assert "'g'" in str(e.value) and "'f2'" in str(e.value)
    model.input = {"feature_names": ["f0", "f1"]}
    with pytest.raises(SpmlError) as e:
        model_features(model, Features(["f0", "f1", "f1"]), "test")
    assert str(e.value) == ("bundle: the bundle's feature columns differ from the model's: feature columns repeated; "
                            "prepare the data with the columns the model was trained on")

def test_the_tallied_micro_f1_of_a_low_precision_and_recall():
    """Micro-F1 = 2PR / (P + R) also when P + R < 1 (the floor only guards a zero sum)."""
    from spmlkit.practitioner.evaluation import SetTally, evaluate_label_sets

    Y = np.array([[1, 1, 0, 0], [0, 0, 0, 0]], dtype=bool)
    S = np.array([[1, 0, 1, 1], [1, 0, 0, 0]], dtype=bool)  # tp 1, fp 3, fn 1: P = 1/4, R = 1/2
    t = SetTally(4, observed=False)
    t.add(S[:1], Y[:1])
    t.add(S[1:], Y[1:])
    r = t.result()
    assert r["micro_f1"] == pytest.approx(100 / 3) and r["micro_precision"] == 25 and r["micro_recall"] == 50
    assert r == pytest.approx(evaluate_label_sets(S, Y=Y))

def test_evaluate_model_holds_small_splits_whole_and_refuses_in_one_line(monkeypatch):
    """A split whose scores fit (``needs_streaming`` asked for one member) is scored whole:
    the model is never asked for row blocks.  Labels in another order, or an empty split,
    are refused with one line saying what differs and what to do."""
    import warnings

    from spmlkit.practitioner import evaluation
    from spmlkit.sparse_labels import SparseLabels

    asked = []
    monkeypatch.setattr(evaluation, "needs_streaming", lambda *a: asked.append(a) or False)
    model = _Logits(np.random.default_rng(2).normal(size=(5, 3)).astype(np.float32), {"rule": "top_k", "k": 1})
    Y = np.eye(3, dtype=bool)[[0, 1, 2, 0, 1]]
    ev = evaluation.evaluate_model(model, _Split(5, Y=SparseLabels.from_dense(Y)), "test")
    assert asked == [(1, 5, 3)] and model.budgets == model.asked == [] and ev["n_classes"] == 3
    other = _Split(5, Y=SparseLabels.from_dense(Y))
    other.label_names = ["b", "a", "c"]
    with pytest.raises(SpmlError) as e:
        evaluation.evaluate_model(model, other, "test")
    assert str(e.value) == ("bundle: the model's labels differ from the bundle's: the same labels in another order "
                            "(position 1: 'a' expected, 'b' found)")
    with pytest.raises(SpmlError) as e:
        evaluation.evaluate_model(model, _Split(0, Y=SparseLabels.from_dense(Y[:0])), "test")
    assert str(e.value) == ("bundle has no test split (0 examples); evaluate another --split, or prepare the data "
                            "with a test split")
    with pytest.raises(ValueError, match="^evaluate_label_sets needs full labels Y or observations Z$"):
        evaluation.evaluate_label_sets(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the F1 means of no row are nan
        assert evaluation.evaluate_label_sets(Y[:0], Y=Y[:0])["empty_sets"] == 0.0  # no row: none empty, not nan

def test_observed_only_training_says_so_everywhere(capsys, own):
    d, _ = own
    assert run(capsys, "prepare", d / "own.csv", "--observed", "--label-column", "label", "--id-column", "id",
               "-o", d / "b")[0] == 0
    code, out, err = run(capsys, "train", d / "b", "-m", "an", "--epochs", 3, "--lr", "0.01", "-o", d / "r")
    assert code == 0, err
    assert "validation observed_map (observed labels only)" in out
    assert "test mAP" not in out and "observed labels only (no full labels)" in out
    res = json.loads((d / "r" / "result.json").read_text())
    assert res["selection"] == "observed_map" and res["test_map"] is None and res["labels"] == "observed"
    assert res["test_observed"]["labels"] == "observed" and 0 <= res["test_observed"]["observed_map"] <= 100
    assert res["expected_positives"] is None  # single positives say nothing about k
    code, out, err = run(capsys, "evaluate", d / "r", d / "b")
    assert code == 0 and "observed labels only" in out and "test mAP" not in out
    code, out, err = run(capsys, "evaluate", d / "r", d / "b", "--json")
    ev = json.loads(out)
    assert ev["labels"] == "observed" and "map" not in ev and ev["label_sets"]["labels"] == "observed"
    # another criterion by option; 'map' is refused with a clear message
    code, out, err = run(capsys, "train", d / "b", "-m", "an", "--epochs", 2, "--selection", "observed_recall@3", "-o", d / "r3")
    assert code == 0 and "validation observed_recall@3" in out
    code, out, err = run(capsys, "train", d / "b", "-m", "an", "--epochs", 2, "--selection", "map", "-o", d / "rm")
    assert code == 2 and "selection 'map' needs full validation labels" in err


def test_a_fully_labelled_validation_file_is_used_instead(capsys, own):
    d, Y_val = own
    assert run(capsys, "prepare", d / "own.csv", "--observed", "--label-column", "label", "--id-column", "id",
               "--val-file", d / "val_full.csv", "-o", d / "b")[0] == 0
    code, out, err = run(capsys, "train", d / "b", "-m", "an", "--epochs", 4, "--lr", "0.01", "-o", d / "r")
    assert code == 0, err
    res = json.loads((d / "r" / "result.json").read_text())
    assert res["selection"] == "map" and res["test_map"] is None  # the test split is still observed-only
    assert res["expected_positives"] == pytest.approx(Y_val.sum(1).mean())  # Cole Eq. A1 on the val file
    model = json.loads((d / "r" / "model" / "model.json").read_text())
    assert len(model["label_sets"]["thresholds"]) == 4 and len(model["label_sets"]["choice"]) == 5
    assert model["label_sets"]["rule"] == max(model["label_sets"]["choice"], key=lambda c: c["example_f1"])["rule"]
    assert model["label_sets"]["k"] == pytest.approx(Y_val.sum(1).mean())


def test_no_validation_keeps_the_last_epoch():
    X, Y = toy(n=120)
    Z = observe(Y, "single_positive", seed=0)
    data = ArrayBundle(X, Z)
    (r,) = train_linear(data, TrainConfig(method="an", epochs=3, lr=0.01))
    assert r.selection == "last" and r.best_epoch == 3 and np.isnan(r.val_score) and r.test_map is None


def test_methods_for_other_regimes_need_matching_observations():
    X, Y = toy(n=120)
    Z = observe(Y, "single_positive", seed=0)
    with pytest.raises(ConfigError, match="cannot be simulated from observed-only data"):
        train_linear(ArrayBundle(X, Z), TrainConfig(method="iun", epochs=1))
    Zn = observe(Y, "single_positive_one_negative", seed=0)
    rows = (Zn == -1).any(1)  # the user's data has a negative in every row
    (r,) = train_linear(ArrayBundle(X[rows], Zn[rows]), TrainConfig(method="iu", epochs=1))
    assert r.method == "iu"


def test_observed_criteria_order_models_like_the_true_map():
    """The property that justifies selecting on observed labels: under uniform single-
    positive sampling, observed-positive mAP is lower than the true mAP but orders a
    better and a worse model the same way; observed recall@k estimates the example-
    averaged true recall@k without bias."""
    rng = np.random.default_rng(0)
    Y = rng.random((4000, 8)) < 0.3
    Y[~Y.any(1), 0] = True
    good = Y + rng.normal(scale=0.6, size=Y.shape)
    bad = Y + rng.normal(scale=1.2, size=Y.shape)
    Z = observe(Y, "single_positive", seed=1)
    true_good, true_bad = mean_average_precision(Y, good).map, mean_average_precision(Y, bad).map
    obs_good, obs_bad = observed_positive_map(Z, good), observed_positive_map(Z, bad)
    assert true_good > true_bad and obs_good > obs_bad
    assert obs_good < true_good and obs_bad < true_bad  # biased down: unobserved positives count as negatives
    # recall@2: E[observed] = mean_n |top2 ∩ y_n| / |y_n|
    top = np.argsort(-good, axis=1)[:, :2]
    hit = np.zeros_like(Y)
    np.put_along_axis(hit, top, True, axis=1)
    true_recall = 100 * np.mean((hit & Y).sum(1) / Y.sum(1))
    draws = [observed_positive_recall_at_k(observe(Y, "single_positive", seed=s), good, 2) for s in range(20)]
    assert np.mean(draws) == pytest.approx(true_recall, abs=0.5)


# ------------------------------------------------------------ evaluate_model (spml evaluate)
def test_evaluate_model_with_full_labels(trained):
    from spmlkit.metrics import mean_average_precision, roc_auc
    from spmlkit.practitioner.evaluation import evaluate_model

    m, b = trained.model_full, trained.full
    ev = evaluate_model(m, b, "test")
    scores = m.decision_function(b.features("test"))
    assert ev["split"] == "test" and ev["map"] == pytest.approx(mean_average_precision(b.labels("test"), scores).map)
    assert list(ev["ap"]) == m.label_names and list(ev["auc"]) == m.label_names
    auc = roc_auc(b.labels("test"), scores)
    assert [ev["auc"][n] for n in m.label_names] == pytest.approx(list(auc))
    assert ev["auc_mean"] == pytest.approx(float(np.mean(auc))) and ev["masked"] is False
    assert "labels" not in ev and ev["empty_classes"] == "exclude"
    val = evaluate_model(m, b, "val", empty="zero")
    assert val["split"] == "val" and val["empty_classes"] == "zero"


def test_evaluate_model_on_observed_labels_is_never_a_full_label_map(trained):
    from spmlkit.metrics import observed_positive_map
    from spmlkit.practitioner.evaluation import evaluate_model

    m, b = trained.model_own, trained.own
    ev = evaluate_model(m, b, "test")
    assert ev["labels"] == "observed" and "map" not in ev and ev["split"] == "test"
    scores = m.decision_function(b.features("test"))
    assert ev["observed_map"] == pytest.approx(observed_positive_map(b.observations("test"), scores))
    assert ev["label_sets"]["labels"] == "observed"


def test_evaluate_model_refuses_other_labels(trained, tmp_path):
    from spmlkit.data import prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.practitioner.evaluation import evaluate_model

    other = prepare_bundle(MultiLabelDataset("o", ["x", "y"], {"train": Split(X=np.zeros((10, 6)), Y=np.eye(2)[
        np.arange(10) % 2])}), tmp_path / "o", log=lambda m: None)
    with pytest.raises(SpmlError, match=r"the model's labels differ from the bundle's: missing 'l0', 'l1', 'l2', "
                                        r"'l3', 'l4'; unexpected 'x', 'y'$"):
        evaluate_model(trained.model_full, other, "train")


@pytest.mark.parametrize("observed_only", [False, True])
def test_streamed_evaluation_equals_the_whole_one(trained, monkeypatch, observed_only):
    """``spml evaluate`` on a split too large to hold streams the model's scores in row
    blocks (issue 32): the same mAP, per-label AP and AUC, or observed-label metrics and
    label-set quality."""
    from spmlkit.practitioner.evaluation import evaluate_model

    # the user's own observations (val/test without full labels), or full labels
    model, bundle = (trained.model_own, trained.own) if observed_only else (trained.model_full, trained.full)
    assert bundle.has_full_labels is not observed_only
    whole = evaluate_model(model, bundle, "test")
    monkeypatch.setattr("spmlkit.practitioner.evaluation.needs_streaming", lambda *a: True)  # the name evaluate_model calls
    monkeypatch.setattr(type(model), "stream_rows", lambda self, budget_bytes=0: 7)
    streamed = evaluate_model(model, bundle, "test")
    assert streamed.keys() == whole.keys()

    def close(a, b):
        if isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                close(a[k], b[k])
        elif isinstance(a, float):
            assert b == pytest.approx(a, abs=1e-9, nan_ok=True)
        else:
            assert a == b

    close(whole, streamed)


# ----------------------------------------------- mutation survivors (issue 44): the streamed tally pinned
def test_the_set_tally_of_no_block_one_entry_and_float_sets():
    import math
    import warnings

    from spmlkit.practitioner.evaluation import SetTally

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean F1 of no example is nan
        r = SetTally(3, observed=False).result()
    assert (r["micro_precision"], r["micro_recall"], r["mean_predicted_labels"], r["empty_sets"]) == (0, 0, 0.0, 0.0)
    assert math.isnan(r["example_f1"])
    o = SetTally(3, observed=True).result()
    assert (o["mean_predicted_labels"], o["empty_sets"], o["observed_negative_rate"]) == (0.0, 0.0, None)
    t = SetTally(3, observed=False)
    t.add(np.array([[1.0, 0.0, 0.0]]), np.array([[1.0, 0.0, 0.0]]))  # one predicted label, the one true label
    r = t.result()
    assert r["micro_precision"] == r["micro_recall"] == r["example_f1"] == 100.0
    assert r["mean_predicted_labels"] == 1.0 and r["empty_sets"] == 0.0
