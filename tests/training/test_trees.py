"""Training the tree head (spmlkit.training.trees): a tiny problem at the single-positive
optimum, determinism, early stopping by round, save/load/predict round trips through
SPMLClassifier (auto with tree members included), refusals, and the tree member of
``auto``.  The objective: test_tree_objective.py; the head's state: tests/models/test_trees.py."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.data.memory import ArrayBundle
from spmlkit.errors import ConfigError
from spmlkit.methods.base import TrainContext, build_method
from spmlkit.methods.recipe import build_auto

pytest.importorskip("xgboost")

from spmlkit.models.heads import build_head  # noqa: E402
from spmlkit.models.trees import stack_member_states  # noqa: E402
from spmlkit.training import trees  # noqa: E402
from spmlkit.training.tree_objective import TreeObjective  # noqa: E402


def test_the_tree_fits_the_single_positive_optimum():
    """Assume-negative on two cells of one binary feature: the loss is minimised at the
    cell's fraction of observed positives per label, which the boosted margins reach."""
    rng = np.random.default_rng(0)
    n, L = 400, 2
    x = (rng.random(n) < 0.5).astype(np.float32)
    Z = np.zeros((n, L), dtype=np.int8)
    p = np.where(x[:, None] == 1, [0.8, 0.2], [0.3, 0.6])
    Z[rng.random((n, L)) < p] = 1
    m = build_method("an")
    ctx = TrainContext(n_train=n, n_labels=L, observed=Z)
    m.setup(ctx)
    obj = TreeObjective(m, ctx, Z)
    booster, icept, _, best = trees.train_booster(x[:, None], obj, X_val=None, evaluate=None, seed=0, rounds=150)
    assert best == 150
    prob = 1 / (1 + np.exp(-trees.predict_margins(booster, icept, np.array([[0.0], [1.0]], dtype=np.float32))))
    target = np.array([[Z[x == c, j].mean() for j in range(L)] for c in (0, 1)])
    np.testing.assert_allclose(prob, target, atol=0.02)


def _bundle(seed=0, n=160, L=3, D=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)).astype(np.float32)
    Y = (X[:, :L] + 0.5 * rng.normal(size=(n, L)) > 0.2).astype(np.int8)
    Y[Y.sum(1) == 0, 0] = 1
    Z = np.zeros_like(Y)
    for i in range(n):
        Z[i, rng.choice(np.flatnonzero(Y[i]))] = 1
    a, b = n // 2, 3 * n // 4
    return ArrayBundle(X[:a], Z[:a], X_val=X[a:b], Z_val=Z[a:b], X_test=X[b:], Y_test=Y[b:]), X


def test_a_run_is_deterministic_under_its_seed_and_stops_by_round():
    bundle, _ = _bundle()
    cfg = TrainConfig(method="wan", head="tree")
    r1, r2 = (trees.train_trees(bundle, cfg, seeds=[3], keep_state=True)[0] for _ in range(2))
    r3 = trees.train_trees(bundle, cfg, seeds=[4], keep_state=True)[0]
    assert torch.equal(r1.state["head"]["booster"], r2.state["head"]["booster"])
    assert r1.val_history == r2.val_history and r1.test_map == r2.test_map
    assert not torch.equal(r1.state["head"]["booster"], r3.state["head"]["booster"])  # (row draws differ)
    assert r1.val_score == max(r1.val_history) and r1.val_history.index(r1.val_score) + 1 == r1.best_epoch
    assert r1.epochs_run <= r1.best_epoch + trees.PATIENCE


def test_trained_heads_stack_load_and_predict_their_test_logits():
    bundle, X = _bundle()
    res = trees.train_trees(bundle, TrainConfig(method="an", head="tree"), lrs=[1e-3, 1e-3], seeds=[0, 1],
                            keep_state=True)
    stacked = stack_member_states([r.state["head"] for r in res])
    head = build_head("tree", X.shape[1], 3, [torch.Generator()] * 2)
    head.load_state_dict(stacked)
    x = torch.from_numpy((X[-40:] - res[0].state["mean"]) / res[0].state["std"])
    out = head(x)
    assert out.shape == (2, 40, 3)
    for g in range(2):
        np.testing.assert_allclose(out[g].numpy(), res[g].state["test_logits"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method,params", [
    ("wan", None),
    ("auto", {"members": "wan,wan:tree", "combine": "mean_probability"}),  # linear and tree members side by side
    ("auto", {"members": "an:tree,wan:tree", "combine": "mean_probability"}),  # tree members stacked
])
def test_classifier_saves_loads_and_predicts(tmp_path, method, params):
    from spmlkit.practitioner.estimator import SPMLClassifier

    _, X = _bundle()
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, len(X))
    clf = SPMLClassifier(method, head="tree" if method == "wan" else "linear", epochs=2, seed=0,
                         method_params=params).fit(X, y)
    P = clf.predict_proba(X[:9])
    back = SPMLClassifier.load(clf.save(tmp_path / "m"))
    np.testing.assert_allclose(back.predict_proba(X[:9]), P, rtol=1e-6, atol=1e-7)


def test_refusals_name_the_alternative():
    bundle, _ = _bundle()
    for name in ("role", "em-apl", "ll-r", "l1r", "epr"):
        with pytest.raises(ConfigError, match="--head linear or mlp"):
            trees.train_trees(bundle, TrainConfig(method=name, head="tree"))
    with pytest.raises(ConfigError, match="for fine-tuning use"):
        TrainConfig(method="an", head="tree", setting="finetune")

    rng = np.random.default_rng(0)
    images = ArrayBundle(rng.normal(size=(20, 4)), np.eye(3, dtype=np.int8)[rng.integers(0, 3, 20)])
    images.kind = "images"  # (a backbone's cached image features)
    with pytest.raises(ConfigError, match="image features use --head linear or mlp"):
        trees.train_trees(images, TrainConfig(method="an", head="tree"))


def test_auto_has_tree_members_on_tabular_data_only():
    recipe = build_auto()
    assert ("wan", "tree") in recipe.members_for(False, backbone_features=False)
    assert all(h != "tree" for _, h in recipe.members_for(False, backbone_features=True))
    assert ("full-weighted", "tree") in recipe.members_for(True)


def test_auto_drops_a_tree_member_whose_dense_gradients_do_not_fit_the_budget(monkeypatch):
    """A tree head holds its (N, L) gradients whole: over the state budget auto leaves the
    tree member out, says so and records it in the notes; the other members train (under
    the budget the tree member stays)."""
    import warnings

    from spmlkit.practitioner.estimator import SPMLClassifier
    from spmlkit.training import recipe as R

    members = (("wan", "linear"), ("wan", "tree"))
    parts = type("Parts", (), {"device": torch.device("cpu"), "observed": np.zeros((120, 3), np.int8)})()
    lines = []
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "0.001")  # 1,048 bytes: below the tree's 120 x 3 x 40
    kept, dropped = R._trees_within_budget(members, parts, 1, log=lines.append)
    assert kept == (("wan", "linear"),) and [d["method"] for d in dropped] == ["wan:tree"]
    assert "dense gradients" in dropped[0]["reason"] and "SPML_STATE_BUDGET_MB" in lines[0]
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "100")
    assert R._trees_within_budget(members, parts, 1) == (members, [])

    _, X = _bundle()
    y = np.random.default_rng(1).integers(0, 3, len(X))
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "0.01")  # fits no tree member, and the linear one's (no state)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = SPMLClassifier("auto", epochs=2, seed=0, method_params={"members": "wan,wan:tree"}).fit(X, y)
    assert any("'wan:tree' dropped" in str(w.message) for w in caught)
    assert clf.model_.members == 1 and clf.model_.head != "tree"  # the linear member alone
