"""The ``auto`` recipe (issues 16, 35): registered, usable from the CLI, SPMLClassifier and
bench, chooses and weighs with observed labels only (a test hides every full label and
gets identical choices), never lets a failed member win, and combines exactly what it
says."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError, SpmlError
from spmlkit.io import read_json
from spmlkit.methods.base import build_method
from spmlkit.methods.recipe import TREES_INSTALLED
from spmlkit.metrics import observed_positive_map
from spmlkit.training.run import train
from spmlkit.training.ensemble import bagged_ensemble_selection
from spmlkit.training.recipe import mean_probability_logits
from tests.helpers.factories import one_species_bundle


FAST = dict(epochs=3, batch_size=16)
SMALL = dict(members="an,l1r", lrs="1e-2,1e-3", longer=1)


def _member_runs(bundle, name, lrs, seeds, **cfg):
    c = TrainConfig(method=name, selection="observed_map", **{**FAST, **cfg})
    return train(bundle, c, lrs=[lr for lr in lrs for _ in seeds], seeds=[s for _ in lrs for s in seeds],
                        keep_state=True)


def test_equals_its_members_chosen_and_weighed_by_observed_validation_map(toy_bundle):
    """Per seed: each member's lr is the one with the best observed-label validation mAP
    (simulated single positives, never the full labels), the members' weights are the
    bagged ensemble selection on those observations (seeded by the seed), and the
    recipe's scores are the logit of the weighted mean of the runs' probabilities."""
    cfg = TrainConfig(method="auto", params=SMALL, **FAST)
    res = train(toy_bundle, cfg, lrs=[1e-3, 1e-3], seeds=[0, 1], keep_state=True)
    Z_val = toy_bundle.selection_observations("val", "single_positive")
    assert ((Z_val == 1).sum(1) <= 1).all() and (Z_val == 1).any()  # single positives, not the full labels
    for r in res:
        chosen = []
        for name in ("an", "l1r"):
            runs = [x for x in _member_runs(toy_bundle, name, (1e-2, 1e-3), (0, 1)) if x.seed == r.seed]
            best = max(runs, key=lambda x: x.val_score)
            assert best.val_score == pytest.approx(observed_positive_map(Z_val, best.state["val_logits"]))
            chosen.append(best)
        assert [(m["method"], m["lr"]) for m in r.notes["members"]] == [("an", chosen[0].lr), ("l1r", chosen[1].lr)]
        P = np.stack([1 / (1 + np.exp(-c.state["val_logits"].astype(np.float64))) for c in chosen])
        w = bagged_ensemble_selection(P, Z_val, seed=r.seed)
        assert [m["weight"] for m in r.notes["members"]] == pytest.approx(w.tolist())
        kept = [j for j in range(2) if w[j] > 0]
        expected = mean_probability_logits(torch.stack([torch.as_tensor(chosen[j].state["val_logits"]) for j in kept]),
                                           [w[j] for j in kept])
        np.testing.assert_allclose(r.state["val_logits"], expected.numpy(), rtol=1e-5, atol=1e-5)
        assert r.selection == "observed_map" and r.state["members"] == len(kept)
        assert r.state["member_weights"] == pytest.approx([w[j] for j in kept])
        assert r.val_score == pytest.approx(observed_positive_map(Z_val, r.state["val_logits"]))
        assert r.test_map is not None and 0 < r.test_map <= 100


def test_select_keeps_the_one_best_member(toy_bundle):
    cfg = TrainConfig(method="auto", params={**SMALL, "combine": "select"}, **FAST)
    (r,) = train(toy_bundle, cfg, keep_state=True)
    assert r.state["members"] == 1 and sum(m["weight"] > 0 for m in r.notes["members"]) == 1


def _reported_scores(monkeypatch, scores):
    """The members' runs keep their own weights and logits but report the validation
    scores ``scores[(method, lr)]``, so the recipe's choice is known in advance (on the
    toy data an and l1r score alike, which hid a recipe that kept the first run)."""
    import spmlkit.training.recipe as recipe

    real = recipe.train_linear

    def reporting(bundle, cfg, **kw):
        runs = real(bundle, cfg, **kw)
        for r in runs:
            r.val_score = scores[(cfg.method, r.lr)]
        return runs

    monkeypatch.setattr(recipe, "train_linear", reporting)


@pytest.mark.parametrize("scores", [
    {("an", 1e-2): 0.2, ("an", 1e-3): 0.3, ("l1r", 1e-2): 0.9, ("l1r", 1e-3): 0.4},
    {("an", 1e-2): 0.2, ("an", 1e-3): 0.8, ("l1r", 1e-2): 0.5, ("l1r", 1e-3): 0.6},
    {("an", 1e-2): 0.9, ("an", 1e-3): 0.3, ("l1r", 1e-2): 0.1, ("l1r", 1e-3): 0.7},
])
def test_each_member_keeps_its_best_run_not_the_first(toy_bundle, monkeypatch, scores):
    """Within a member, the lr with the best validation score wins (whatever its place);
    ``select`` then keeps the one member whose chosen run has the best observed mAP."""
    _reported_scores(monkeypatch, scores)
    cfg = TrainConfig(method="auto", params={**SMALL, "combine": "select"}, **FAST)
    (r,) = train(toy_bundle, cfg, keep_state=True)
    for m in r.notes["members"]:
        best = max((lr for (name, lr) in scores if name == m["method"]), key=lambda lr: scores[(m["method"], lr)])
        assert m["lr"] == best and m["val_observed_map"] == scores[(m["method"], best)]
    kept = [m for m in r.notes["members"] if m["weight"] > 0]
    assert len(kept) == 1 and kept[0]["weight"] == 1 and r.state["members"] == 1
    Z_val = toy_bundle.selection_observations("val", "single_positive")
    assert r.val_score == pytest.approx(observed_positive_map(Z_val, r.state["val_logits"]))


@pytest.mark.parametrize("combine", ["ensemble_selection", "mean_probability", "select"])
def test_a_run_without_a_valid_score_never_wins(toy_bundle, monkeypatch, combine):
    """A NaN validation score (no epoch ever scored, a diverged run) loses to any number,
    whichever comes first: within a member method (its lrs), and a member whose every run
    is NaN gets weight 0 under every rule."""
    nan = float("nan")
    _reported_scores(monkeypatch, {("l1r", 1e-2): nan, ("l1r", 1e-3): nan, ("an", 1e-2): nan, ("an", 1e-3): 0.1})
    cfg = TrainConfig(method="auto", params={"members": "l1r,an", "lrs": "1e-2,1e-3", "combine": combine}, **FAST)
    (r,) = train(toy_bundle, cfg, keep_state=True)
    chosen = {m["method"]: m for m in r.notes["members"]}
    assert chosen["an"]["lr"] == 1e-3 and chosen["an"]["weight"] == 1 and chosen["l1r"]["weight"] == 0
    assert r.state["members"] == 1 and np.isfinite(r.val_score)


def test_choices_never_read_a_full_label(toy_bundle):
    """The same data with every full label but the test split's hidden (an in-memory
    bundle holding only the training observations and the validation split's simulated
    single positives) gives the same choices, weights and test scores."""
    from spmlkit.data.memory import ArrayBundle

    b = toy_bundle
    hidden = ArrayBundle(np.asarray(b.features("train")), np.asarray(b.observations("train")),
                         X_val=np.asarray(b.features("val")), Z_val=b.selection_observations("val", "single_positive"),
                         X_test=np.asarray(b.features("test")), Y_test=np.asarray(b.labels("test")),
                         label_names=b.label_names)
    cfg = TrainConfig(method="auto", params={"members": "an,wan,l1r", "lrs": "1e-2,1e-3"}, **FAST)
    full = train(b, cfg, lrs=[1e-3, 1e-3], seeds=[0, 1], keep_state=True)
    blind = train(hidden, cfg, lrs=[1e-3, 1e-3], seeds=[0, 1], keep_state=True)
    for a, h in zip(full, blind):
        assert a.notes == h.notes and a.val_score == h.val_score
        assert a.test_map == pytest.approx(h.test_map, abs=1e-9)
        np.testing.assert_array_equal(a.state["val_logits"], h.state["val_logits"])
    assert blind[0].train_map is None and full[0].train_map is not None  # reported only where labels exist


def test_a_member_that_peaks_at_its_last_epoch_gets_a_longer_try(toy_bundle, monkeypatch):
    """Training length by the same criterion: a chosen run whose best epoch is its last
    trains again at that lr for ``longer`` x the epochs, and the longer run is kept only
    when its observed validation mAP is higher."""
    import spmlkit.training.recipe as recipe

    real = recipe.train_linear
    calls = []

    def spy(bundle, cfg, **kw):
        runs = real(bundle, cfg, **kw)
        calls.append((cfg.method, cfg.epochs, list(kw["lrs"])))
        for r in runs:  # pretend every run peaked at its last epoch
            r.best_epoch = r.epochs_run
            r.val_score = 10.0 * cfg.epochs + r.lr  # longer is better here
        return runs

    monkeypatch.setattr(recipe, "train_linear", spy)
    cfg = TrainConfig(method="auto", params={"members": "an", "lrs": "1e-2,1e-3", "longer": 2}, **FAST)
    (r,) = train(toy_bundle, cfg, keep_state=True)
    assert calls == [("an", 3, [1e-2, 1e-3]), ("an", 6, [1e-2])]
    (m,) = r.notes["members"]
    assert m["epochs_run"] == 6 and m["lr"] == 1e-2 and m["longer_from"] == 3  # the longer try, and from what
    calls.clear()
    (r1,) = train(toy_bundle, cfg.replace(params={"members": "an", "lrs": "1e-2,1e-3", "longer": 1}))
    assert calls == [("an", 3, [1e-2, 1e-3])] and r1.notes["members"][0]["epochs_run"] == 3
    assert "longer_from" not in r1.notes["members"][0]


def test_members_stop_early_on_the_observed_criterion_unless_the_run_says_otherwise(toy_bundle, monkeypatch):
    """Each member's runs stop after ``patience`` epochs (default 5) without a better
    observed validation score — the run's own ``--patience`` takes precedence — and a
    stopped run keeps its best epoch."""
    import spmlkit.training.recipe as recipe

    real, seen = recipe.train_linear, []

    def spy(bundle, cfg, **kw):
        seen.append(cfg.patience)
        return real(bundle, cfg, **kw)

    monkeypatch.setattr(recipe, "train_linear", spy)
    params = {"members": "an,l1r", "lrs": "1e-2,1e-3", "longer": 1}
    (r,) = train(toy_bundle, TrainConfig(method="auto", params=params, **FAST))
    assert seen == [5, 5] and r.notes["patience"] == 5
    seen.clear()
    (r,) = train(toy_bundle, TrainConfig(method="auto", params={**params, "patience": 2}, **FAST))
    assert seen == [2, 2] and r.notes["patience"] == 2
    seen.clear()
    cfg = TrainConfig(method="auto", params={**params, "patience": 2}, epochs=30, batch_size=16, patience=1)
    (r,) = train(toy_bundle, cfg)
    assert seen == [1, 1] and r.notes["patience"] == 1
    for m in r.notes["members"]:  # stopped one epoch after no improvement, best epoch kept
        assert m["best_epoch"] <= m["epochs_run"] < 30 and m["epochs_run"] - m["best_epoch"] <= 2


def test_seeds_are_independent_of_grouping(toy_bundle):
    cfg = TrainConfig(method="auto", params=SMALL, **FAST)
    both = train(toy_bundle, cfg, lrs=[1e-3, 1e-3], seeds=[0, 1])
    (one,) = train(toy_bundle, cfg, seeds=[1])
    assert both[1].test_map == pytest.approx(one.test_map, abs=1e-9)
    assert both[1].notes == one.notes


def test_refusals(toy_bundle):
    from spmlkit.data.memory import ArrayBundle

    b = toy_bundle
    cfg = TrainConfig(method="auto", params=SMALL, **FAST)
    none = ArrayBundle(np.asarray(b.features("train")), np.asarray(b.observations("train")))
    with pytest.raises(ConfigError, match="validation"):
        train(none, cfg)
    with pytest.raises(ConfigError, match="observed_map only"):
        train(b, cfg.replace(selection="map"))
    with pytest.raises(ConfigError, match="linear setting"):
        from spmlkit.training.recipe import train_recipe

        train_recipe(b, cfg.replace(setting="finetune"), build_method("auto", **SMALL), lrs=[1e-3], seeds=[0])


def test_cli_train_predict_saved_ensemble(toy_bundle, tmp_path, capsys):
    from spmlkit.cli import main
    from spmlkit.practitioner.saved import load_model

    out = tmp_path / "run"
    assert main(["train", str(toy_bundle.path), "-m", "auto", "--param", "members=an,l1r,wan", "--param",
                 "lrs=1e-2,1e-3", "--epochs", "3", "-o", str(out)]) == 0
    model = load_model(out)
    result = json.loads((out / "result.json").read_text())
    assert [m["method"] for m in result["notes"]["members"]] == ["an", "l1r", "wan"]
    w = [m["weight"] for m in result["notes"]["members"] if m["weight"] > 0]
    G = len(w)
    assert model.members == G and model.method == "auto" and model.member_weights == pytest.approx(w)
    meta = json.loads((out / "model" / "model.json").read_text())
    assert meta.get("members", 1) == G and meta.get("member_weights", [1.0]) == pytest.approx(w)
    X = np.asarray(toy_bundle.features("test"))
    from spmlkit.metrics import mean_average_precision

    assert mean_average_precision(toy_bundle.labels("test"), model.decision_function(X)).map == \
        pytest.approx(result["test_map"], abs=1e-3)
    # the saved ensemble predicts the weighted mean of its members' probabilities
    P = model.predict_proba(X)
    heads = [{k: (v[g] if G > 1 else v) for k, v in model.state.items()} for g in range(G)]
    Xs = (torch.from_numpy(np.array(X)) - torch.from_numpy(model.mean)) / torch.from_numpy(model.std)
    probs = torch.stack([torch.sigmoid(Xs @ h["weight"] + h["bias"]) for h in heads])
    expected = (torch.as_tensor(w, dtype=probs.dtype)[:, None, None] * probs).sum(0) / sum(w)
    np.testing.assert_allclose(P, expected.numpy(), rtol=1e-4, atol=1e-5)


def test_saved_member_weights_are_checked(toy_bundle, tmp_path):
    from spmlkit.cli import main
    from spmlkit.errors import CorruptFileError
    from spmlkit.practitioner.saved import load_model

    out = tmp_path / "run"
    assert main(["train", str(toy_bundle.path), "-m", "auto", "--param", "members=an,l1r", "--param",
                 "combine=mean_probability", "--param", "lrs=1e-3", "--epochs", "2", "-o", str(out)]) == 0
    meta_path = out / "model" / "model.json"
    meta = json.loads(meta_path.read_text())
    assert meta["members"] == 2 and meta["member_weights"] == [0.5, 0.5]
    for bad in ([1.0], [0.5, -1.0], [0, 0], [0.5, "x"], [float("nan"), 1.0]):
        (out / "model" / "model.json").write_text(json.dumps({**meta, "member_weights": bad}))
        with pytest.raises(CorruptFileError, match="member_weights"):
            load_model(out)


def test_cli_says_that_lr_is_not_used(toy_bundle, tmp_path, capsys):
    from spmlkit.cli import main

    assert main(["train", str(toy_bundle.path), "-m", "auto", "--param", "members=an", "--param", "lrs=1e-3",
                 "--lr", "0.5", "--epochs", "1", "-o", str(tmp_path / "run")]) == 0
    assert "--lr is not used" in capsys.readouterr().err


def test_damaged_members_field_is_refused(toy_bundle, tmp_path):
    from spmlkit.cli import main
    from spmlkit.errors import CorruptFileError
    from spmlkit.practitioner.saved import load_model

    out = tmp_path / "run"
    assert main(["train", str(toy_bundle.path), "-m", "auto", "--param", "members=an,l1r", "--param",
                 "lrs=1e-3", "--epochs", "2", "-o", str(out)]) == 0
    meta = json.loads((out / "model" / "model.json").read_text())
    meta["members"] = "two"
    (out / "model" / "model.json").write_text(json.dumps(meta))
    with pytest.raises(CorruptFileError, match="members"):
        load_model(out)


def test_bench_runs_auto_once_per_seed(toy_bundle, tmp_path):
    from spmlkit.experiments.bench import BenchSpec, run_bench

    spec = BenchSpec(datasets=[str(toy_bundle.path)], methods=["an", "auto"], lrs=(1e-2, 1e-3), batch_sizes=(16,),
                     seeds=(0, 1), epochs=2, params={"auto": dict(SMALL)}, histograms=False)
    run_bench(spec, tmp_path / "bench", figures=False)
    runs = read_json(tmp_path / "bench" / "runs.json.gz")["runs"]
    auto = [r for r in runs if r["method"] == "auto"]
    assert sorted(r["seed"] for r in auto) == [0, 1] and {r["selection"] for r in auto} == {"observed_map"}
    assert len([r for r in runs if r["method"] == "an"]) == 4
    table = (tmp_path / "bench" / "table.md").read_text()
    assert "own lr per member on observed labels" in table  # not the bench lr it did not use


def test_selection_observations_simulate_the_training_regime(toy_bundle):
    Y = np.asarray(toy_bundle.labels("val"), dtype=bool)
    Z = toy_bundle.selection_observations("val", "single_positive")
    assert ((Z == 1) <= Y).all() and ((Z == 1).sum(1) == Y.any(1)).all() and not (Z == -1).any()
    np.testing.assert_array_equal(Z, toy_bundle.selection_observations("val", "single_positive"))  # seeded
    most = toy_bundle.selection_observations("val", "single_positive_most_frequent")
    freq = Y.sum(0)
    for row, y in zip(most, Y):
        if y.any():
            assert freq[np.flatnonzero(row == 1)[0]] == freq[y].max()
    full = toy_bundle.selection_observations("val", "full")
    assert ((full == 1) == Y).all()


def test_observed_map_selection_works_on_fully_labelled_bundles(toy_bundle):
    """--selection observed_map used to need an observed-only bundle; it now scores the
    simulated single positives of the validation split."""
    (r,) = train(toy_bundle, TrainConfig(method="an", selection="observed_map", **FAST), keep_state=True)
    Z_val = toy_bundle.selection_observations("val", "single_positive")
    assert r.val_score == pytest.approx(observed_positive_map(Z_val, r.state["val_logits"]))


def test_a_stopped_recipe_resumes_each_member(toy_bundle, tmp_path):
    """Each member method checkpoints in RUN/members/NAME/: a run stopped after one epoch
    and started again with 3 epochs gives the uninterrupted run's result."""
    cfg = TrainConfig(method="auto", params=SMALL, batch_size=16, epochs=3)
    train(toy_bundle, cfg.replace(epochs=1), run_dir=tmp_path / "run")
    assert {"an", "l1r"} <= {p.name for p in (tmp_path / "run" / "members").iterdir()}
    (resumed,) = train(toy_bundle, cfg, run_dir=tmp_path / "run")
    (fresh,) = train(toy_bundle, cfg)
    assert resumed.test_map == pytest.approx(fresh.test_map, abs=1e-9) and resumed.notes == fresh.notes


# ------------------------------------------------------------ presence-only data
# On a bundle with background rows the members are the background losses, the choice is
# by ``target_group_auc``, and each species is scored on its own surveyed test rows (the
# label mask).
def test_auto_trains_the_presence_members_by_target_group_auc(presence_bundle):
    cfg = TrainConfig(method="auto", epochs=2, batch_size=32, threads=1)
    (r,) = train(presence_bundle, cfg, lrs=[1e-3], seeds=[0])
    assert r.selection == "target_group_auc"
    trees = ["full-weighted"] if TREES_INSTALLED else []  # its tree member, with the trees extra
    assert [m["method"] for m in r.notes["members"]] == ["full-weighted", "an-full", *trees]
    assert all("val_target_group_auc" in m for m in r.notes["members"])
    assert 0 <= r.val_score <= 100
    assert r.test_auc is not None and 0 <= r.test_auc["mean"] <= 1  # the label mask reached the recipe's scores
    masked_label = r.test_auc["per_label"][-1]  # surveyed on half of the test rows only
    assert masked_label is not None


def test_auto_keeps_its_general_members_on_ordinary_data(toy_bundle):
    (r,) = train(toy_bundle, TrainConfig(method="auto", epochs=1, batch_size=32, threads=1), lrs=[1e-3], seeds=[0])
    assert r.selection == "observed_map"
    from spmlkit.methods.recipe import DEFAULT_MEMBERS

    assert [(m["method"], m["head"]) for m in r.notes["members"]] == [
        (n.partition(":")[0], n.partition(":")[2] or "linear") for n in DEFAULT_MEMBERS.split(",")]  # tabular: MLPs too
    assert getattr(r, "test_auc", None) is None


def test_presence_members_are_checked_and_other_criteria_refused(presence_bundle):
    assert build_method("auto", presence_members="an-full").presence_members == (("an-full", None),)
    with pytest.raises(SpmlError, match="full-weightd"):
        build_method("auto", presence_members="full-weightd")
    with pytest.raises(ConfigError, match="selects with target_group_auc only"):
        train(presence_bundle, TrainConfig(method="auto", epochs=1, selection="background_auc", threads=1),
              lrs=[1e-3], seeds=[0])


def test_linear_and_mlp_members_side_by_side_save_and_predict(toy_bundle, tmp_path):
    """Members of two head kinds (linear and MLP) are stacked per kind and saved as one
    model that predicts the weighted mean of all members' probabilities."""
    from spmlkit.cli import main
    from spmlkit.metrics import mean_average_precision
    from spmlkit.practitioner.saved import load_model

    out = tmp_path / "run"
    assert main(["train", str(toy_bundle.path), "-m", "auto", "--param", "members=an,wan:mlp,l1r",
                 "--param", "combine=mean_probability", "--param", "lrs=1e-2", "--hidden", "8", "--epochs", "2",
                 "-o", str(out)]) == 0
    model = load_model(out)
    assert model.members == 3 and model.member_heads == ["linear", "linear", "mlp"]
    assert model.member_weights == pytest.approx([1 / 3] * 3)
    result = json.loads((out / "result.json").read_text())
    assert [(m["method"], m["head"]) for m in result["notes"]["members"]] == [("an", "linear"), ("wan", "mlp"),
                                                                              ("l1r", "linear")]
    X = np.asarray(toy_bundle.features("test"))
    assert mean_average_precision(toy_bundle.labels("test"), model.decision_function(X)).map == \
        pytest.approx(result["test_map"], abs=1e-3)
    meta = json.loads((out / "model" / "model.json").read_text())
    for bad in (["linear", "mlp", "linear"], ["linear", "linear"], ["linear", "linear", "conv"]):
        (out / "model" / "model.json").write_text(json.dumps({**meta, "member_heads": bad}))
        with pytest.raises(Exception, match="member_heads"):
            load_model(out)


# ------------------------------------------------ at scale (issue 32)
def test_a_streamed_recipe_equals_the_whole_one(toy_bundle, monkeypatch):
    """When the members' logits are too large to keep, the combined model streams its
    validation and test scores: the same result as the run that keeps them (with equal
    weights: without the members' probabilities in memory there is nothing to weigh)."""
    import spmlkit.metrics as metrics

    cfg = TrainConfig(method="auto", epochs=2, batch_size=8, params={"combine": "mean_probability"})
    (whole,) = train(toy_bundle, cfg)
    monkeypatch.setattr(metrics, "DENSE_SCORE_BYTES", 0)
    monkeypatch.setattr("spmlkit.training.linear.needs_streaming", lambda *a: True)
    (streamed,) = train(toy_bundle, cfg)
    assert streamed.val_score == pytest.approx(whole.val_score, abs=1e-9)
    assert streamed.test_map == pytest.approx(whole.test_map, abs=1e-9)
    for a, b in zip(whole.notes["members"], streamed.notes["members"]):  # the same choices
        assert (a["method"], a["lr"], a["best_epoch"]) == (b["method"], b["lr"], b["best_epoch"])
        assert a["val_observed_map"] == pytest.approx(b["val_observed_map"], abs=1e-9)


def test_members_over_the_state_budget_are_dropped_and_said(toy_bundle, monkeypatch):
    """A member whose per-entry state does not fit (em-apl's pseudo-labels, at a tiny
    budget here) is left out with the reason in the result's notes; the others train."""
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "0.001")
    with pytest.warns(UserWarning, match="member 'em-apl' dropped"):
        (r,) = train(toy_bundle, TrainConfig(method="auto", epochs=1, batch_size=8))
    # (with the trees extra, the tree member's dense gradients do not fit this budget either)
    assert [d["method"] for d in r.notes["dropped"]] == ["em-apl", *(["wan:tree"] if TREES_INSTALLED else [])]
    assert [m["label"] for m in r.notes["members"]] == ["gr", "wan", "l1r", "wan-mlp"]  # both em-apl heads left out
    assert "GiB budget" in r.notes["dropped"][0]["reason"]


def test_a_feature_table_declared_a_backbones_trains_no_mlp_member(tmp_path):
    """A dataset that declares its features a backbone's (``feature_source``: the embedded
    VOC 2007 features) is recorded so in its bundle, and ``auto`` treats it as image
    features (no ``:mlp`` member with ``mlp=tabular``), as it does a named feature set; the
    data's own features are tabular."""
    import dataclasses

    from spmlkit.data import load_dataset, prepare_bundle
    from spmlkit.training.recipe import backbone_features
    from tests.conftest import make_toy_dataset

    plain = prepare_bundle(make_toy_dataset(), tmp_path / "plain", log=lambda m: None)
    declared = prepare_bundle(dataclasses.replace(make_toy_dataset(), feature_source="some-backbone-224"),
                              tmp_path / "declared", log=lambda m: None)
    cfg = TrainConfig(method="auto", **FAST)
    assert "feature_source" not in plain.meta and declared.meta["feature_source"] == "some-backbone-224"
    assert not backbone_features(plain, cfg) and backbone_features(declared, cfg)
    assert backbone_features(plain, cfg.replace(feature_set="x"))
    assert load_dataset("voc2007-lite0").feature_source == "efficientnet-lite0-224"
    params = {"members": "an,wan:mlp", "lrs": "1e-2", "longer": 1}
    (r,) = train(declared, TrainConfig(method="auto", params=params, **FAST))
    assert [m["label"] for m in r.notes["members"]] == ["an"]
    (r,) = train(plain, TrainConfig(method="auto", params=params, **FAST))
    assert [m["label"] for m in r.notes["members"]] == ["an", "wan-mlp"]


# ------------------------------------------------ mutation testing of training/recipe.py (issue 39)
def test_callbacks_hear_each_member_tagged_and_a_direct_call_keeps_no_state(toy_bundle, tmp_path):
    """``on_epoch`` and ``callbacks`` hear every epoch of every member, tagged with the
    member's label, its place ``(i/n)`` and ``member_index``; the run folder is a ``run``
    folder; a direct call keeps no state unless asked."""
    from spmlkit import ownership
    from spmlkit.training.callbacks import Callback
    from spmlkit.training.recipe import train_recipe

    heard, seen = [], []

    class Hear(Callback):
        def on_epoch_end(self, fit, info):
            seen.append((info["member"], info["member_index"]))

    recipe = build_method("auto", **SMALL)
    cfg = TrainConfig(method="auto", params=SMALL, epochs=2, batch_size=16)
    (r,) = train_recipe(toy_bundle, cfg, recipe, lrs=[1e-3], seeds=[0], run_dir=tmp_path / "run",
                        on_epoch=lambda info: heard.append((info["member"], info["member_index"])),
                        callbacks=[Hear()])
    assert heard == seen and sorted(set(heard)) == [("an (1/2)", 0), ("l1r (2/2)", 1)]
    assert len(heard) == 2 * 2  # 2 members x 2 epochs (a member's lrs train stacked)
    assert r.state is None and ownership.folder_kind(tmp_path / "run") == "run"


def test_a_direct_call_resumes_its_members_unless_told_not_to(toy_bundle, tmp_path):
    """``train_recipe`` resumes each member from its checkpoint by default (only the
    missing epochs train), and ``resume=False`` trains every epoch again."""
    from spmlkit.training.recipe import train_recipe

    recipe = build_method("auto", **{**SMALL, "members": "an"})
    cfg = TrainConfig(method="auto", params=SMALL, batch_size=16, epochs=1)
    train_recipe(toy_bundle, cfg, recipe, lrs=[1e-3], seeds=[0], run_dir=tmp_path / "run")
    epochs = []
    (resumed,) = train_recipe(toy_bundle, cfg.replace(epochs=3), recipe, lrs=[1e-3], seeds=[0],
                              run_dir=tmp_path / "run", on_epoch=lambda info: epochs.append(info["epoch"]))
    assert epochs == [2, 3]  # the missing epochs only
    epochs.clear()
    (again,) = train_recipe(toy_bundle, cfg.replace(epochs=3), recipe, lrs=[1e-3], seeds=[0], resume=False,
                            run_dir=tmp_path / "run", on_epoch=lambda info: epochs.append(info["epoch"]))
    assert epochs == [1, 2, 3] and again.notes == resumed.notes


def test_a_longer_try_trains_the_seed_it_was_chosen_for_and_a_tie_keeps_the_shorter(toy_bundle, monkeypatch):
    import spmlkit.training.recipe as recipe

    real, calls = recipe.train_linear, []

    def spy(bundle, cfg, **kw):
        runs = real(bundle, cfg, **kw)
        calls.append((cfg.epochs, list(kw["lrs"]), list(kw["seeds"])))
        for r in runs:  # every run peaks at its last epoch, and the longer one scores the same
            r.best_epoch = r.epochs_run
            r.val_score = 1.0 + r.lr
        return runs

    monkeypatch.setattr(recipe, "train_linear", spy)
    cfg = TrainConfig(method="auto", params={"members": "an", "lrs": "1e-2,1e-3", "longer": 2}, epochs=2,
                      batch_size=16)
    (r,) = train(toy_bundle, cfg, seeds=[1])
    assert calls == [(2, [1e-2, 1e-3], [1, 1]), (4, [1e-2], [1])]
    assert r.notes["members"][0]["epochs_run"] == 2  # not better: the shorter run stays


def test_refusals_say_what_to_do(toy_bundle):
    from spmlkit.data.memory import ArrayBundle
    from spmlkit.training.recipe import train_recipe

    b = toy_bundle
    cfg = TrainConfig(method="auto", params=SMALL, **FAST)
    none = ArrayBundle(np.asarray(b.features("train")), np.asarray(b.observations("train")))
    with pytest.raises(ConfigError, match=r"this data has no validation split \(prepare it with --val-fraction > 0, "
                                          r"or give SPMLClassifier validation_data\)$"):
        train(none, cfg)
    with pytest.raises(ConfigError, match=r"\(it trains several heads on cached features\); for fine-tuning name one "
                                          "method$"):
        train_recipe(b, cfg.replace(setting="finetune"), build_method("auto", **SMALL), lrs=[1e-3], seeds=[0])
    X_val = np.asarray(b.features("val"))
    blank = ArrayBundle(np.asarray(b.features("train")), np.asarray(b.observations("train")), X_val=X_val,
                        Z_val=np.zeros((len(X_val), b.n_labels), dtype=np.int8))
    with pytest.raises(ConfigError, match=r"^the validation split has no observed positive, so the recipe cannot "
                                          "compare learning rates; prepare the bundle again with a larger "
                                          "--val-fraction$"):
        train(blank, cfg)


class _Parts:
    """What ``_within_state_budget`` reads of a run's prepared splits."""

    def __init__(self, n, L):
        from spmlkit.sparse_labels import as_sparse

        self.observed = as_sparse(np.zeros((n, L), dtype=np.int8), dtype=np.int8)
        self.device = torch.device("cpu")


def test_the_state_budget_keeps_what_fits_exactly_and_says_what_it_drops(monkeypatch):
    """em-apl reads the training set's predictions (4 bytes per member and entry): at
    ``n_members`` runs it needs ``4 x n_members x N x L`` bytes; a member that needs
    exactly the budget is kept; the reason gives both sizes in GiB and names the
    setting; ``log`` hears it, else a warning points at the caller."""
    import warnings

    from spmlkit.training.recipe import _within_state_budget

    from spmlkit.methods.base import TrainContext

    parts = _Parts(100, 10)
    need = build_method("em-apl").state_bytes(TrainContext(n_train=100, n_labels=10, observed=parts.observed,
                                                           n_members=7))
    assert need >= 4 * 7 * 100 * 10
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", repr(need / 2 ** 20))
    assert _within_state_budget(["em-apl", "an"], parts, 7, log=print) == (("em-apl", "an"), [])
    said = []
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", repr((need - 1) / 2 ** 20))
    kept, dropped = _within_state_budget(["em-apl", "an"], parts, 7, log=said.append)
    assert kept == ("an",) and [d["method"] for d in dropped] == ["em-apl"] and len(said) == 1
    # sizes in GiB: 2^20 runs x 1000 x 100 labels
    big = _Parts(1000, 100)
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", str(3 * 1024))
    warned = []
    monkeypatch.setattr(warnings, "warn", lambda msg, *a, **kw: warned.append((msg, a, kw)))
    kept, dropped = _within_state_budget(["an", "em-apl"], big, 2 ** 20)
    need = build_method("em-apl").state_bytes(TrainContext(n_train=1000, n_labels=100, observed=big.observed,
                                                           n_members=2 ** 20))
    assert need > 1000 * 2 ** 30  # (its sizes told apart at 0.1 GiB)
    assert dropped[0]["reason"] == (f"its per-entry state needs {need / 2 ** 30:.1f} GiB for 1048576 runs x 1,000 "
                                    "examples x 100 labels, over the 3.0 GiB budget (SPML_STATE_BUDGET_MB)")
    # the warning names the caller of train_recipe (_within_state_budget <- train_recipe <- caller); the level
    # is read from the call, not from the frames (a mutation tool's trampolines add frames)
    assert warned == [(f"auto: member 'em-apl' dropped: {dropped[0]['reason']}", (), {"stacklevel": 3})]


def test_when_no_member_fits_the_refusal_lists_each_with_its_reason(monkeypatch):
    from spmlkit.training.recipe import _within_state_budget

    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "0.0001")
    said = []
    with pytest.raises(ConfigError) as e:
        _within_state_budget(["em-apl", "ll-cp"], _Parts(100, 10), 2, log=said.append)
    reasons = [s.split(" dropped: ", 1)[1] for s in said]
    assert str(e.value) == ("no member of the recipe fits the per-entry state budget on this data: "
                            f"em-apl: {reasons[0]}; ll-cp: {reasons[1]}")


def test_a_recipe_says_dropped_members_through_its_log(toy_bundle, monkeypatch):
    import warnings

    from spmlkit.training.recipe import train_recipe

    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "0.001")
    recipe = build_method("auto", members="an,em-apl", lrs="1e-3", longer=1)
    said = []
    recipe.log = said.append
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (r,) = train_recipe(toy_bundle, TrainConfig(method="auto", epochs=1, batch_size=16), recipe, lrs=[1e-3],
                            seeds=[0])
    assert len(said) == 1 and said[0].startswith("auto: member 'em-apl' dropped: its per-entry state needs")
    assert [m["method"] for m in r.notes["members"]] == ["an"]


def test_backbone_features_and_the_members_they_leave_out():
    """A backbone's cached features (an images bundle, or a named feature set) leave out
    the recipe's MLP members; tabular data keeps them; one background row makes the data
    presence-only, and presences of a single species are scored by ``background_auc``."""
    import types

    import spmlkit.training.recipe as R
    from spmlkit.metrics import presence_background_auc

    images, tabular = types.SimpleNamespace(kind="images"), types.SimpleNamespace(kind="features")
    assert R.backbone_features(images, TrainConfig()) is True
    assert R.backbone_features(tabular, TrainConfig(feature_set="clip")) is True
    assert R.backbone_features(tabular, TrainConfig()) is False
    assert R.backbone_features(types.SimpleNamespace(), TrainConfig()) is False  # no kind: features
    recipe = build_method("auto", members="an,wan:mlp")
    Z = np.zeros((4, 3), dtype=np.int8)
    Z[0, 0] = Z[1, 1] = 1
    for bundle, config, members in ((images, TrainConfig(), [("an", None)]),
                                    (images, None, [("an", None), ("wan", "mlp")]),
                                    (tabular, TrainConfig(), [("an", None), ("wan", "mlp")])):
        bundle.meta = {}
        sel, _, crit, m = R.recipe_selection(bundle, recipe, Z, config)
        assert sel == "observed_map" and list(m) == members
    one = types.SimpleNamespace(kind="features", meta={"background_rows": 1})
    sel, _, crit, m = R.recipe_selection(one, recipe, Z, TrainConfig())
    assert sel == "target_group_auc" and list(m) == list(recipe.members_for(True, False))
    Z1 = np.zeros((4, 3), dtype=np.int8)
    Z1[:2, 0] = 1
    sel, _, crit, _ = R.recipe_selection(one, recipe, Z1, TrainConfig())
    assert sel == "background_auc" and crit is presence_background_auc


def test_a_recipe_on_backbone_features_trains_no_mlp_member(toy_bundle, monkeypatch):
    import spmlkit.training.recipe as R

    monkeypatch.setattr(R, "backbone_features", lambda bundle, config: config is not None)
    (r,) = train(toy_bundle, TrainConfig(method="auto", params={"members": "an,wan:mlp", "lrs": "1e-3", "longer": 1},
                                         epochs=1, batch_size=16))
    assert [m["label"] for m in r.notes["members"]] == ["an"]


def test_the_combination_helpers_ignore_a_default_device_and_weights_are_relative():
    """The combined logits are built on the CPU whatever default device the caller set
    (``torch.set_default_device``), member weights count relative to their sum, one
    member's certainty stays a finite logit, and equal weights are the plain mean."""
    from spmlkit.training.recipe import _combine, _stack

    x = torch.tensor([[[0.0, 2.0, 1000.0, -1000.0]], [[1.0, -2.0, 1000.0, -1000.0]]], dtype=torch.float64)
    mean = torch.sigmoid(x).mean(0)
    expected = torch.log(mean) - torch.log1p(-mean)
    got = mean_probability_logits(x)
    assert got.shape == (1, 4) and torch.isfinite(got).all()
    torch.testing.assert_close(got[:, :2], expected[:, :2])
    assert got[0, 2].item() == pytest.approx(np.log(1e12), abs=1e-3) and got[0, 3].item() == pytest.approx(-np.log(1e12), abs=1e-3)
    torch.testing.assert_close(mean_probability_logits(x, [2.0, 2.0]), got)
    torch.testing.assert_close(mean_probability_logits(x, [3.0, 1.0]),
                               mean_probability_logits(x, [0.75, 0.25]))
    states = [{"w": torch.ones(2)}, {"w": torch.zeros(2)}]
    with torch.device("meta"):
        out = _combine([x[0].numpy(), x[1].numpy()], [1.0, 3.0])
        both = _stack(states)
        direct = mean_probability_logits(x, [1.0, 3.0])
    np.testing.assert_allclose(out, mean_probability_logits(x, [1.0, 3.0]).float().numpy())
    assert both["w"].device.type == "cpu" and both["w"].tolist() == [[1, 1], [0, 0]] and direct.device.type == "cpu"


def test_the_combined_mlp_head_has_the_runs_hidden_width():
    from spmlkit.training.recipe import combined_head

    head = combined_head(["mlp", "mlp"], 6, 5, hidden=7)
    assert {d for v in head.state_dict().values() for d in v.shape} - {1, 2, 6, 5} == {7}  # 2 members, 6 -> 7 -> 5


def _expected_train_map(bundle, r, feature_set=None):
    """The training-set mAP of ``r``'s combined linear members, from its saved state."""
    from spmlkit.metrics import mean_average_precision

    st = r.state
    X = (torch.from_numpy(np.array(bundle.features("train", feature_set))) - torch.as_tensor(st["mean"])) / torch.as_tensor(st["std"])
    logits = torch.stack([X @ st["head"]["weight"][g] + st["head"]["bias"][g] for g in range(st["members"])])
    combined = mean_probability_logits(logits, st["member_weights"]).float().numpy()
    return mean_average_precision(bundle.labels("train"), combined).map


def test_the_training_score_is_the_combined_models_within_the_memory_cap(toy_bundle, monkeypatch):
    """The reported training-set mAP is the combined model's on the standardised training
    features; under ``--max-memory-mb`` the features are read in chunks that fit it (the
    same score), and they stay in memory when they fit."""
    import spmlkit.training.recipe as R

    stores = []

    class Recorded(R.FeatureStore):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            stores.append(self)

    monkeypatch.setattr(R, "FeatureStore", Recorded)
    params = {"members": "an,l1r", "lrs": "1e-2", "longer": 1, "combine": "mean_probability"}
    (r,) = train(toy_bundle, TrainConfig(method="auto", params=params, **FAST), keep_state=True)
    assert r.train_map == pytest.approx(_expected_train_map(toy_bundle, r), abs=1e-9)
    nbytes = np.asarray(toy_bundle.features("train")).size * 4
    for cap, in_memory in ((nbytes, True), (nbytes - 1, False), (200, False)):
        stores.clear()
        cfg = TrainConfig(method="auto", params=params, max_memory_mb=cap / 2 ** 20, **FAST)
        (c,) = train(toy_bundle, cfg, keep_state=True)
        assert c.train_map == pytest.approx(_expected_train_map(toy_bundle, c), abs=1e-9)
        (store,) = stores
        assert store.in_memory == in_memory and store.peak_buffer_bytes <= cap


def test_the_streamed_view_reads_the_memory_map_in_chunks_of_at_most_64_mib_of_logits(toy_bundle, monkeypatch):
    """The combined model's streamed scores read the features from the memory map (never
    whole), in chunks of as many rows as keep the members' float64 logits within 64 MiB
    (at least one row), and give the weighted mean's logits."""
    import types

    import spmlkit.training.recipe as R
    from spmlkit.training.recipe import _combined_view, combined_head

    asked = []

    class Recorded(R.FeatureStore):
        def chunks(self, rows=None, **kw):
            asked.append((self, rows))
            return super().chunks(rows, **kw)

    monkeypatch.setattr(R, "FeatureStore", Recorded)
    cfg = TrainConfig(method="auto", hidden=4)

    def view(bundle, kinds, weights):
        D, L = np.asarray(bundle.features("test")[:1]).shape[1], bundle.n_labels
        head = combined_head(kinds, D, L, 4).state_dict()
        mean, std = np.zeros(D, np.float32) + 0.5, np.ones(D, np.float32) * 2
        asked.clear()
        v = _combined_view(bundle, "test", cfg, head, kinds, weights, mean, std, torch.device("cpu"))
        first = next(iter(v.chunks()))
        (store, rows), = asked
        assert not store.in_memory
        return v, first, rows, head, mean, std

    G, L = 3, toy_bundle.n_labels
    v, _, rows, head, mean, std = view(toy_bundle, ["linear"] * G, [1.0, 2.0, 1.0])
    assert rows * 8 * G * L <= 64 * 2 ** 20 < (rows + 1) * 8 * G * L
    X = (torch.from_numpy(np.array(toy_bundle.features("test"))) - 0.5) / 2
    expected = mean_probability_logits(torch.stack([X @ head["weight"][g] + head["bias"][g] for g in range(G)]),
                                       [1.0, 2.0, 1.0]).float()
    torch.testing.assert_close(v.dense()[0], expected, rtol=1e-5, atol=1e-5)
    for n_labels in (1, 2 ** 23 + 1):  # one label; one row's logits over 64 MiB
        X1 = np.ones((3, 1), np.float32)
        stub = types.SimpleNamespace(n_labels=n_labels, features=lambda split, fs=None: X1, size=lambda split: 3)
        _, first, rows, *_ = view(stub, ["linear"], [1.0])
        assert rows == max(1, 64 * 2 ** 20 // (8 * n_labels)) and first[1].shape == (1, min(rows, 3), n_labels)


def test_the_combined_validation_score_uses_the_runs_regime(toy_bundle):
    """With ``--regime`` the validation observations are simulated under that regime (as
    the members' are): the recipe's weights and score are on those, not the default's."""
    cfg = TrainConfig(method="auto", params={**SMALL, "lrs": "1e-2"}, regime="single_positive_most_frequent", **FAST)
    (r,) = train(toy_bundle, cfg, keep_state=True)
    Z = toy_bundle.selection_observations("val", "single_positive_most_frequent")
    other = toy_bundle.selection_observations("val", "single_positive")
    assert r.val_score == pytest.approx(observed_positive_map(Z, r.state["val_logits"]))
    assert r.val_score != pytest.approx(observed_positive_map(other, r.state["val_logits"]))


def test_a_bundle_without_a_test_split_and_the_device_argument(toy_bundle):
    """Without a test split the members keep their validation logits only and the recipe
    still combines them; ``device=`` of a direct call is the one every member trains on
    (the config's device is not resolved again)."""
    from spmlkit.data.memory import ArrayBundle
    from spmlkit.training.recipe import train_recipe

    b = toy_bundle
    no_test = ArrayBundle(np.asarray(b.features("train")), np.asarray(b.observations("train")),
                          X_val=np.asarray(b.features("val")), Z_val=b.selection_observations("val", "single_positive"))
    cfg = TrainConfig(method="auto", params={**SMALL, "lrs": "1e-2"}, **FAST)
    (r,) = train(no_test, cfg)
    assert np.isfinite(r.val_score) and r.test_map is None
    recipe = build_method("auto", **{**SMALL, "lrs": "1e-2"})
    (d,) = train_recipe(b, cfg.replace(device="cuda"), recipe, lrs=[1e-3], seeds=[0], device=torch.device("cpu"))
    (c,) = train_recipe(b, cfg, recipe, lrs=[1e-3], seeds=[0])
    assert d.notes == c.notes and d.test_map == c.test_map


def test_members_are_weighed_on_their_probabilities_not_another_squashing(toy_bundle, monkeypatch):
    """The weighing sees each member's validation probabilities sigmoid(logit): on logits
    where the mean of another increasing squashing (1 / (2 + e^-x)) ranks the examples
    differently, the weights are those of the sigmoid's."""
    import spmlkit.training.recipe as recipe

    Z = np.asarray(toy_bundle.selection_observations("val", "single_positive"))
    # an: every unobserved entry far above the observed positives; l1r: far below
    crafted = {"an": np.where(Z == 1, -0.5, 10.0).astype(np.float32),
               "l1r": np.where(Z == 1, -0.5, -10.0).astype(np.float32)}
    real = recipe.train_linear

    def crafting(bundle, cfg, **kw):
        runs = real(bundle, cfg, **kw)
        for r in runs:
            r.state["val_logits"] = crafted[cfg.method].copy()
        return runs

    monkeypatch.setattr(recipe, "train_linear", crafting)
    cfg = TrainConfig(method="auto", params={**SMALL, "lrs": "1e-2"}, epochs=1, batch_size=16)
    (r,) = train(toy_bundle, cfg)
    P = 1 / (1 + np.exp(-np.stack([crafted["an"], crafted["l1r"]]).astype(np.float64)))
    w = bagged_ensemble_selection(P, Z, seed=0)
    assert [m["weight"] for m in r.notes["members"]] == pytest.approx(w.tolist())
    assert w.tolist() != pytest.approx(bagged_ensemble_selection(1 / (2 + np.exp(-np.log(P / (1 - P)))), Z,
                                                                 seed=0).tolist())


def test_a_named_feature_set_is_what_the_combined_model_scores(toy_bundle, monkeypatch):
    """With ``--feature-set`` the combined model's training scores and its streamed
    scores read that feature cache (not the bundle's own columns)."""
    import hashlib

    import spmlkit.metrics as metrics
    from spmlkit import ownership

    b = toy_bundle
    rng = np.random.default_rng(1)
    mix = rng.normal(size=(6, 4)).astype(np.float32)
    ownership.folder(b.path, "bundle")
    for split in ("train", "val", "test"):
        f = b.path / "features" / "mix" / f"{split}.npy"
        ownership.save_npy(f, np.tanh(np.asarray(b.features(split)) @ mix))
        ownership.write_text(f.with_name(f.name + ".sha256"), hashlib.sha256(f.read_bytes()).hexdigest() + "\n")
    params = {"members": "an,l1r", "lrs": "1e-2", "longer": 1, "combine": "mean_probability"}
    cfg = TrainConfig(method="auto", params=params, feature_set="mix", epochs=2, batch_size=16)
    (whole,) = train(b, cfg, keep_state=True)
    assert whole.state["head"]["weight"].shape[1] == 4
    assert whole.train_map == pytest.approx(_expected_train_map(b, whole, "mix"), abs=1e-9)
    monkeypatch.setattr(metrics, "DENSE_SCORE_BYTES", 0)
    monkeypatch.setattr("spmlkit.training.linear.needs_streaming", lambda *a: True)
    (streamed,) = train(b, cfg)
    assert streamed.val_score == pytest.approx(whole.val_score, abs=1e-9)
    assert streamed.test_map == pytest.approx(whole.test_map, abs=1e-9)
    assert streamed.train_map == pytest.approx(whole.train_map, abs=1e-9)


def test_members_whose_validation_logits_alone_were_too_large_are_combined_streamed(toy_bundle, monkeypatch):
    """A member keeps its test logits but not its validation logits when only the
    validation split is too large to hold: the recipe then scores the members again on the
    validation rows to weigh them and streams the combined model, the same scores as the
    run that holds them."""
    params = {**SMALL, "lrs": "1e-2", "combine": "mean_probability"}
    cfg = TrainConfig(method="auto", params=params, **FAST)
    (whole,) = train(toy_bundle, cfg)
    n_val = toy_bundle.size("val")
    monkeypatch.setattr("spmlkit.training.linear.needs_streaming", lambda G, n, L: n == n_val)
    (streamed,) = train(toy_bundle, cfg)
    assert streamed.notes["combine"] == "mean_probability"  # the rule itself, on the rows scored again
    assert {k: streamed.notes["weighed_on"][k] for k in ("rows", "of", "seed")} == {"rows": n_val, "of": n_val,
                                                                                      "seed": 0}
    assert streamed.val_score == pytest.approx(whole.val_score, abs=1e-9)
    assert streamed.test_map == pytest.approx(whole.test_map, abs=1e-9)


def test_auto_on_one_species_trains_its_one_species_members_and_saves_them(tmp_path):
    """Presence-only data with one species: auto trains ``presence_single`` (full-weighted:
    SINR's λ = 2048 would call nearly every cell suitable; with MaxEnt's own head), chosen by
    background_auc, and the members it keeps are saved as heads that load and predict."""
    from spmlkit.practitioner.run_folder import run_training
    from spmlkit.practitioner.saved import load_model

    bundle = one_species_bundle(tmp_path / "b", n=260, d=4, n_records=60, shift=2.0)  # lives where x0 is high
    assert build_method("auto").members_for(True, False, n_labels=1) == (
        ("full-weighted", "maxent"), ("full-weighted", "maxent-x2"), ("full-weighted", "maxent-x4"))
    cfg = TrainConfig(method="auto", epochs=3, batch_size=16, threads=1, params={"lrs": "1e-2"})
    run_training(bundle, cfg, tmp_path / "run", log=lambda m: None)
    model = load_model(tmp_path / "run")
    assert 1 <= model.members <= 3 and model.n_features == 4
    assert set(model.member_heads or [model.head]) <= {"maxent", "maxent-x2", "maxent-x4"}
    p = model.predict_proba(np.array([[3.0, 0, 0, 0], [-3.0, 0, 0, 0]], dtype=np.float32))[:, 0]
    assert p[0] > p[1]


def test_auto_keeps_maxent_at_each_regularisation_multiplier_as_its_own_saved_member(tmp_path):
    """One species, every member kept (``combine=mean_probability``): the saved model holds
    MaxEnt at regmult 1, 2 and 4 as three heads of their own kinds, each its own fit (a
    larger multiplier, a smaller L1 norm of λ: the multiplier reached the recipe's fits and
    the refit), and it loads and ranks the species' side of x0 first."""
    from spmlkit.practitioner.run_folder import run_training
    from spmlkit.practitioner.saved import load_model

    bundle = one_species_bundle(tmp_path / "b", n=260, d=3, n_records=60, shift=2.0)
    cfg = TrainConfig(method="auto", epochs=2, batch_size=16, threads=1,
                      params={"lrs": "1e-2", "combine": "mean_probability"})
    run_training(bundle, cfg, tmp_path / "run", log=lambda m: None)
    model = load_model(tmp_path / "run")
    assert model.members == 3 and model.member_heads == ["maxent", "maxent-x2", "maxent-x4"]
    norms = [float(model.state[f"{k}.out.weight"].abs().sum()) for k in model.member_heads]
    assert norms[0] > norms[1] > norms[2] > 0
    p = model.predict_proba(np.array([[3.0, 0, 0], [-3.0, 0, 0]], dtype=np.float32))[:, 0]
    assert p[0] > p[1]


@pytest.mark.parametrize("head", ["linear", "mlp"])
def test_a_saved_auto_that_keeps_one_member_records_its_feature_width(toy_bundle, tmp_path, head):
    """``combine=select`` keeps one member: its saved model records the features' width (not
    the stacked members' count, 1) and predicts what the run scored."""
    from spmlkit.cli import main
    from spmlkit.metrics import mean_average_precision
    from spmlkit.practitioner.saved import load_model

    out = tmp_path / "run"
    assert main(["train", str(toy_bundle.path), "-m", "auto", "--param", "members=an,l1r", "--param", "lrs=1e-2",
                 "--param", "combine=select", "--head", head, "--hidden", "8", "--epochs", "2", "-o",
                 str(out)]) == 0
    model = load_model(out)
    X = np.asarray(toy_bundle.features("test"))
    assert model.members == 1 and model.n_features == X.shape[1]
    result = json.loads((out / "result.json").read_text())
    assert mean_average_precision(toy_bundle.labels("test"), model.decision_function(X)).map == \
        pytest.approx(result["test_map"], abs=1e-3)


def test_a_runs_patience_of_zero_is_honoured_not_replaced_by_the_recipes(toy_bundle, monkeypatch):
    """``patience=0`` from the run is a value, not "unset": every member trains with it
    (``config.patience or recipe.patience`` would give the recipe's 5)."""
    import spmlkit.training.recipe as recipe

    real, seen = recipe.train_linear, []

    def spy(bundle, cfg, **kw):
        seen.append(cfg.patience)
        return real(bundle, cfg, **kw)

    monkeypatch.setattr(recipe, "train_linear", spy)
    cfg = TrainConfig(method="auto", params={"members": "an,l1r", "lrs": "1e-2", "longer": 1}, epochs=2,
                      batch_size=16, patience=0)
    (r,) = train(toy_bundle, cfg)
    assert seen == [0, 0] and r.notes["patience"] == 0


def test_the_state_budget_counts_learning_rates_times_seeds(toy_bundle, monkeypatch):
    """Each member stacks one run per learning rate and seed: the budget is checked for
    ``len(lrs) x len(seeds)`` runs (3 x 2 here), not for the runs of one seed."""
    import spmlkit.training.recipe as recipe

    asked = []

    def spy(candidates, parts, n_members, log=None):
        asked.append(n_members)
        raise KeyboardInterrupt  # (stop before training: the count is what is tested)

    monkeypatch.setattr(recipe, "_within_state_budget", spy)
    cfg = TrainConfig(method="auto", params={"members": "an,em-apl", "lrs": "1e-2,1e-3,1e-4"}, **FAST)
    with pytest.raises(KeyboardInterrupt):
        train(toy_bundle, cfg, lrs=[1e-3, 1e-3], seeds=[0, 1])
    assert asked == [6]


def test_a_recipe_weighs_on_a_seeded_subsample_says_it_and_records_it(toy_bundle, monkeypatch):
    """Over the selection's bound the members are weighed by the same rule on a seeded
    subsample of the validation rows: said in one line, recorded in the notes, the same
    rows for the same seed; when the subsample is every row the weights are the whole
    set's."""
    import spmlkit.training.ensemble as ensemble

    params = {"members": "an,l1r,wan", "lrs": "1e-2", "longer": 1}
    cfg = TrainConfig(method="auto", params=params, **FAST)
    (whole,) = train(toy_bundle, cfg)
    assert "weighed_on" not in whole.notes and whole.notes["combine"] == "ensemble_selection"
    n_val = toy_bundle.size("val")
    real = ensemble.selection_subsample
    monkeypatch.setattr("spmlkit.training.recipe.selection_subsample",
                        lambda Z, **kw: real(Z, **{**kw, "max_entries": 10 * 10}))
    said = []
    monkeypatch.setattr("warnings.warn", lambda msg, *a, **kw: said.append(msg))
    (sub,) = train(toy_bundle, cfg)
    w = sub.notes["weighed_on"]
    assert w["of"] == n_val and 1 <= w["rows"] < n_val and w["seed"] == 0 and not w["within_validation_subsample"]
    assert said == [f"auto: members weighed by ensemble_selection on {w['rows']:,} of the {n_val:,} validation "
                    f"rows (a subsample seeded by 0; {w['labels']:,} labels with an observed positive): the "
                    "whole split is over the selection's size or memory budget"]
    assert sub.notes["combine"] == "ensemble_selection"
    assert sum(m["weight"] for m in sub.notes["members"]) == pytest.approx(1.0)
    (again,) = train(toy_bundle, cfg)
    assert again.notes["weighed_on"] == w and [m["weight"] for m in again.notes["members"]] == \
        [m["weight"] for m in sub.notes["members"]]
    # every row "subsampled" (the members scored again from their heads): the whole set's weights
    monkeypatch.setattr("spmlkit.training.recipe.selection_subsample", lambda Z, **kw: np.arange(len(Z)))
    (every,) = train(toy_bundle, cfg)
    assert every.notes["weighed_on"]["rows"] == n_val
    assert [m["weight"] for m in every.notes["members"]] == [m["weight"] for m in whole.notes["members"]]


def test_members_are_weighed_within_the_rows_validation_scores(toy_bundle, monkeypatch):
    """One validation policy: when validation scores a fixed subsample (``--val-rows``, or
    the size rule), the members are weighed on those rows (or a seeded part of them), not
    on rows their early stopping never saw."""
    from spmlkit.training.validation import validation_rows

    import spmlkit.training.recipe as recipe

    seen = []
    real = recipe._rows_logits

    def spy(bundle, config, runs, kinds, rows, *a):
        seen.append(np.asarray(rows).copy())
        return real(bundle, config, runs, kinds, rows, *a)

    monkeypatch.setattr(recipe, "_rows_logits", spy)
    params = {"members": "an,l1r,wan", "lrs": "1e-2", "longer": 1}
    n_val = toy_bundle.size("val")
    cfg = TrainConfig(method="auto", params=params, val_rows=n_val // 2, **FAST)
    (r,) = train(toy_bundle, cfg)
    policy = validation_rows(n_val, toy_bundle.n_labels, cfg)
    assert policy.subsampled and len(seen) == 1
    assert set(seen[0].tolist()) == set(policy.rows.tolist())  # exactly the rows validation scored
    w = r.notes["weighed_on"]
    assert w["rows"] == n_val // 2 and w["within_validation_subsample"]
    # over the selection's bound as well: a seeded part of those rows
    seen.clear()
    real_sub = recipe.selection_subsample
    monkeypatch.setattr(recipe, "selection_subsample", lambda Z, **kw: real_sub(Z, **{**kw, "max_entries": 5 * 5}))
    (r,) = train(toy_bundle, cfg)
    assert set(seen[0].tolist()) < set(policy.rows.tolist()) and r.notes["weighed_on"]["rows"] == len(seen[0])
