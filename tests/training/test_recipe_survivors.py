"""The recipe's helpers pinned on tiny stubs (no training), for the survivors of its
mutation measurement (benchmarks/mutation.py, ``training/recipe.py``): how the members are
weighed (which rows, which labels, which criterion, what is said and where), the
members' probabilities, their validation logits scored again from their heads, and the
tree members' memory budget.  The end-to-end behaviour is in test_recipe.py."""
from __future__ import annotations

import types
import warnings
import zlib

import numpy as np
import pytest
import torch

import spmlkit.training.recipe as R
from spmlkit import metrics
from spmlkit.config import TrainConfig
from spmlkit.methods.recipe import TREES_INSTALLED
from spmlkit.models.heads import build_head
from spmlkit.sparse_labels import as_sparse
from spmlkit.training import ensemble
from spmlkit.training.trees import working_bytes

N, D, L = 12, 3, 4


def _head_state(kind: str, seed: int, hidden: int = 5) -> dict:
    """One run's head (unstacked, as a member run keeps it) of ``kind``, drawn by ``seed``."""
    head = build_head(kind, D, L, [torch.Generator(device="cpu").manual_seed(seed)], hidden=hidden)
    with torch.no_grad():  # (a linear head starts at zero: a drawn state tells the members apart)
        for v in head.parameters():
            v.copy_(torch.randn(v.shape, generator=torch.Generator().manual_seed(100 + seed)))
    return {k: v[0].clone() for k, v in head.state_dict().items()}


def _logits(state: dict, kind: str, X: np.ndarray, hidden: int = 5) -> np.ndarray:
    head = build_head(kind, D, L, [torch.Generator(device="cpu").manual_seed(0)], hidden=hidden)
    head.load_state_dict({k: v[None] for k, v in state.items()})
    with torch.no_grad():
        return head(torch.as_tensor(X))[0].numpy()


def _data(n_members: int = 3, kinds=None, score=0.5):
    """A validation split of ``N`` rows (single positives; label 3 never observed), a stub
    bundle that serves its features, and ``n_members`` runs whose heads give their logits."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D)).astype(np.float32)
    Z = np.zeros((N, L), dtype=np.int8)
    Z[np.arange(N), np.arange(N) % 3] = 1  # labels 0, 1, 2 observed; label 3 without a positive
    kinds = kinds or ["linear"] * n_members
    runs = []
    for j, kind in enumerate(kinds):
        head = _head_state(kind, j)
        runs.append(types.SimpleNamespace(val_score=score, state={"head": head, "val_logits": _logits(head, kind, X)}))
    bundle = types.SimpleNamespace(n_labels=L, features=lambda split, fs=None: X)
    return bundle, X, as_sparse(Z, dtype=np.int8), runs, kinds


def _recipe(said=None, combine="ensemble_selection"):
    return types.SimpleNamespace(combine=combine, rounds=3, steps=2, log=None if said is None else said.append)


def _weigh(bundle, runs, kinds, Z, criterion, *, held=True, config=None, recipe=None, seed=7):
    zeros, ones = np.zeros(D, np.float32), np.ones(D, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a recipe with a log says it there, never as a warning)
        return R._weigh(bundle, config or TrainConfig(), recipe or _recipe([]), runs, kinds, Z, criterion, seed,
                        held, zeros, ones, torch.device("cpu"))


@pytest.fixture
def weighed(monkeypatch):
    """Every call of ``weigh`` from the recipe: ``(rule, P, Z, criterion, keywords)``."""
    calls = []

    def spy(rule, P, Z, criterion=ensemble.observed_map, **kw):
        calls.append((rule, np.asarray(P), np.asarray(Z), criterion, kw))
        return ensemble.weigh(rule, P, Z, criterion, **kw)

    monkeypatch.setattr(R, "weigh", spy)
    return calls


def test_one_member_has_one_weight_and_nothing_to_weigh(weighed):
    bundle, X, Z, runs, kinds = _data(1)
    w, where = _weigh(bundle, runs, kinds, Z, metrics.observed_positive_map)
    assert w.tolist() == [1.0] and where is None and weighed == []


@pytest.mark.parametrize("criterion", [metrics.observed_positive_map, metrics.presence_target_group_auc])
def test_held_logits_are_weighed_with_the_recipes_criterion_rounds_steps_and_seed(weighed, criterion):
    """Runs that kept their validation logits are weighed on them, over every label, by the
    recipe's rule with its own rounds and steps, seeded by the seed, under the run's criterion
    (a presence criterion is not replaced by the observed mAP)."""
    bundle, X, Z, runs, kinds = _data()
    said = []
    w, where = _weigh(bundle, runs, kinds, Z, criterion, recipe=_recipe(said))
    assert where is None and said == []
    ((rule, P, Zw, crit, kw),) = weighed
    assert rule == "ensemble_selection" and crit is criterion and kw == {"rounds": 3, "steps": 2, "seed": 7}
    np.testing.assert_array_equal(Zw, np.asarray(Z))
    np.testing.assert_allclose(P, 1 / (1 + np.exp(-np.stack([r.state["val_logits"] for r in runs]).astype(float))))
    assert w.tolist() == ensemble.weigh("ensemble_selection", P, Zw, criterion, rounds=3, steps=2, seed=7).tolist()


@pytest.mark.parametrize("observed", [True, False])
def test_logits_scored_again_are_weighed_on_the_labels_the_criterion_counts(weighed, observed):
    """Runs without their validation logits are scored again from their heads on every row:
    under the observed mAP (counted by ``ensemble.observed_map``) only the labels with an
    observed positive are weighed; a presence criterion keeps every label, and itself.
    Said through the recipe's log (no warning), and recorded."""
    bundle, X, Z, runs, kinds = _data()
    criterion = metrics.observed_positive_map if observed else metrics.presence_target_group_auc
    said = []
    w, where = _weigh(bundle, runs, kinds, Z, criterion, held=False, recipe=_recipe(said))
    labels = [0, 1, 2] if observed else [0, 1, 2, 3]
    assert where == {"rows": N, "of": N, "seed": 7, "labels": len(labels), "within_validation_subsample": False}
    assert said == [f"auto: members weighed by ensemble_selection on the {N} validation rows scored again from "
                    "their heads"]
    ((rule, P, Zw, crit, kw),) = weighed
    assert crit is (ensemble.observed_map if observed else criterion)
    assert kw == {"rounds": 3, "steps": 2, "seed": 7}
    np.testing.assert_array_equal(Zw, np.asarray(Z)[:, labels])
    expected = np.stack([r.state["val_logits"][:, labels] for r in runs]).astype(np.float64)
    np.testing.assert_allclose(P, 1 / (1 + np.exp(-expected)), rtol=1e-6)


def test_the_held_weighing_is_kept_up_to_the_selections_entries_inclusive(weighed, monkeypatch):
    """Held logits are weighed as they are while the split has at most ``SELECTION_ENTRIES``
    entries (rows x labels); one entry fewer allowed and they are scored again from the heads."""
    bundle, X, Z, runs, kinds = _data()
    monkeypatch.setattr(R, "SELECTION_ENTRIES", N * L)
    assert _weigh(bundle, runs, kinds, Z, metrics.observed_positive_map)[1] is None
    monkeypatch.setattr(R, "SELECTION_ENTRIES", N * L - 1)
    where = _weigh(bundle, runs, kinds, Z, metrics.observed_positive_map)[1]
    assert where is not None and where["rows"] == N


@pytest.mark.parametrize("criterion, observed", [(metrics.observed_positive_map, True),
                                                 (metrics.presence_target_group_auc, False),
                                                 (metrics.presence_background_auc, False)])
def test_the_selection_subsample_counts_positives_only_under_the_observed_criterion(monkeypatch, criterion,
                                                                                     observed):
    bundle, X, Z, runs, kinds = _data()
    asked = []
    real = ensemble.selection_subsample

    def spy(Zs, **kw):
        asked.append(kw.get("observed", True))  # (the value it reads: its default when not given)
        return real(Zs, **kw)

    monkeypatch.setattr(R, "selection_subsample", spy)
    Zb = np.asarray(Z).copy()
    Zb[-2:] = 0  # (background rows, for the background AUC)
    _weigh(bundle, runs, kinds, as_sparse(Zb, dtype=np.int8), criterion)
    assert asked == [observed]


def test_a_subsample_under_a_presence_criterion_is_said_without_observed_positives(monkeypatch):
    bundle, X, Z, runs, kinds = _data()
    monkeypatch.setattr(R, "selection_subsample", lambda Zs, **kw: np.array([0, 2, 5, 7, 9]))
    said = []
    w, where = _weigh(bundle, runs, kinds, Z, metrics.presence_target_group_auc, recipe=_recipe(said))
    assert where == {"rows": 5, "of": N, "seed": 7, "labels": L, "within_validation_subsample": False}
    assert said == [f"auto: members weighed by ensemble_selection on 5 of the {N} validation rows (a subsample "
                    f"seeded by 7; {L} labels): the whole split is over the selection's size or memory budget"]


def test_weighing_within_the_rows_validation_scores_is_said_so(monkeypatch):
    """With ``--val-rows`` the members are weighed on the rows validation scored, said as
    such (not as a split over the selection's budget)."""
    from spmlkit.training.validation import validation_rows

    bundle, X, Z, runs, kinds = _data()
    cfg = TrainConfig(val_rows=8)
    policy = validation_rows(N, L, cfg)
    assert policy.subsampled and len(policy.rows) == 8
    seen = []
    real = R._rows_logits
    monkeypatch.setattr(R, "_rows_logits", lambda b, c, rs, ks, rows, *a: seen.append(rows) or real(b, c, rs, ks,
                                                                                                     rows, *a))
    said = []
    w, where = _weigh(bundle, runs, kinds, Z, metrics.observed_positive_map, config=cfg, recipe=_recipe(said))
    (rows,) = seen
    assert rows.tolist() == policy.rows.tolist()
    n_labels = int((np.asarray(Z)[policy.rows] == 1).any(0).sum())
    assert where == {"rows": 8, "of": N, "seed": 7, "labels": n_labels, "within_validation_subsample": True}
    assert said == [f"auto: members weighed by ensemble_selection on 8 of the {N} validation rows (a subsample "
                    f"seeded by 7; {n_labels} labels with an observed positive): the rows validation scores (its "
                    "fixed subsample), within the selection's size and memory budget"]


def test_a_recipe_without_a_log_warns_at_its_callers_caller(monkeypatch):
    bundle, X, Z, runs, kinds = _data()
    warned = []
    monkeypatch.setattr(warnings, "warn", lambda msg, *a, **kw: warned.append((msg, kw)))
    R._weigh(bundle, TrainConfig(), _recipe(None), runs, kinds, Z, metrics.observed_positive_map, 0, False,
             np.zeros(D, np.float32), np.ones(D, np.float32), torch.device("cpu"))
    assert warned == [(f"auto: members weighed by ensemble_selection on the {N} validation rows scored again "
                       "from their heads", {"stacklevel": 3})]


def test_probabilities_are_float64_sigmoids_and_nan_for_a_run_without_a_score():
    """sigmoid(logit) in float64 (a float32 logit of -100 is not squashed to 0, which would
    tie it with others), and NaN for every entry of a run without a valid score."""
    x = np.array([[-100.0, 0.0, 3.0]], dtype=np.float32)
    runs = [types.SimpleNamespace(val_score=0.5), types.SimpleNamespace(val_score=float("nan")),
            types.SimpleNamespace(val_score=None)]
    P = R._probabilities(runs, [x, x, x])
    assert P.dtype == np.float64 and P.shape == (3, 1, 3)
    np.testing.assert_array_equal(P[0], 1.0 / (1.0 + np.exp(-x.astype(np.float64))))
    assert 0 < P[0, 0, 0] < 1e-40 and P[0, 0, 1] == 0.5
    assert np.isnan(P[1:]).all()


def test_rows_logits_are_each_runs_own_whatever_the_order_of_its_head_kinds(monkeypatch):
    """Each run's validation logits on the rows asked, from its own head, with members of
    several head kinds interleaved (stacked each kind together, given back in run order),
    over several row chunks."""
    import spmlkit.training.linear as linear

    monkeypatch.setattr(linear, "CHUNK_ROWS", 2)  # (5 rows: three chunks)
    kinds = ["mlp", "linear", "mlp", "linear"]
    bundle, X, Z, runs, _ = _data(kinds=kinds)
    rows = np.array([0, 3, 4, 8, 11])
    mean, std = np.full(D, 0.5, np.float32), np.full(D, 2.0, np.float32)
    out = R._rows_logits(bundle, TrainConfig(hidden=5), runs, kinds, rows, mean, std, torch.device("cpu"))
    assert len(out) == 4
    for r, k, got in zip(runs, kinds, out):
        assert got.shape == (5, L)
        np.testing.assert_allclose(got, _logits(r.state["head"], k, (X[rows] - 0.5) / 2.0), rtol=1e-5, atol=1e-6)


class _Observed:
    """What ``_trees_within_budget`` reads of the training observations: their shape."""

    def __init__(self, n, n_labels):
        self.shape = (n, n_labels)

    def __len__(self):
        return self.shape[0]


def _parts(n, n_labels):
    return types.SimpleNamespace(observed=_Observed(n, n_labels), device=torch.device("cpu"))


def test_tree_members_are_kept_while_their_working_arrays_fit_the_budget_exactly(monkeypatch):
    """A tree member holds ``working_bytes(n, L, runs)`` while it trains (one run per seed):
    kept at exactly the budget, dropped one byte over, whatever member comes first."""
    from spmlkit.training.recipe import _trees_within_budget

    need = working_bytes(100, 10, 3)
    assert need == 100 * 10 * 40 * 3
    members = (("an", "linear"), ("gr", "tree"))
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", repr(need / 2 ** 20))
    assert _trees_within_budget(members, _parts(100, 10), 3, log=print) == (members, [])
    said = []
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", repr((need - 1) / 2 ** 20))
    kept, dropped = _trees_within_budget(members, _parts(100, 10), 3, log=said.append)
    assert kept == (("an", "linear"),) and [d["method"] for d in dropped] == ["gr:tree"] and len(said) == 1
    # every member a tree: every one dropped
    kept, dropped = _trees_within_budget((("gr", "tree"), ("an", "tree")), _parts(100, 10), 3, log=said.append)
    assert kept == () and [d["method"] for d in dropped] == ["gr:tree", "an:tree"]
    # no tree member: nothing to drop, however far over
    assert _trees_within_budget(members[:1], _parts(10 ** 6, 10 ** 4), 3) == (members[:1], [])


def test_a_dropped_tree_member_is_said_with_its_size_in_gib(monkeypatch):
    from spmlkit.training.recipe import _trees_within_budget

    monkeypatch.setenv("SPML_STATE_BUDGET_MB", str(3 * 1024))
    said = []
    kept, dropped = _trees_within_budget((("gr", "tree"),), _parts(100_000, 10_000), 2, log=said.append)
    reason = ("a tree head holds dense gradients of 74.5 GiB for 2 run(s) x 100,000 examples x 10,000 labels, "
              "over the 3.0 GiB budget (SPML_STATE_BUDGET_MB)")
    assert working_bytes(100_000, 10_000, 2) / 2 ** 30 == pytest.approx(74.5, abs=0.05)
    assert dropped == [{"method": "gr:tree", "reason": reason}]
    assert said == [f"auto: member 'gr:tree' dropped: {reason}"]
    # without a log: a warning (its level read from the call, not from the frames: mutmut adds frames)
    warned = []
    monkeypatch.setattr(warnings, "warn", lambda msg, *a, **kw: warned.append((msg, a, kw)))
    _trees_within_budget((("gr", "tree"),), _parts(100_000, 10_000), 2)
    assert warned == [(f"auto: member 'gr:tree' dropped: {reason}", (), {"stacklevel": 3})]


def _planned(monkeypatch):
    """Every call of the cost budget's ``plan`` from the recipe: ``(members, keywords)``."""
    asked = []
    real = R.budgeting.plan
    monkeypatch.setattr(R.budgeting, "plan", lambda members, **kw: asked.append((members, kw)) or real(members, **kw))
    return asked, real


_MEMBERS = (("gr", "linear"), ("wan", "linear"), ("l1r", "linear"), ("wan", "mlp"))


def _scale_bundle():
    """A bundle whose training features are 5 wide in the feature set ``clip`` (its own
    columns: 2), each split 7 rows."""
    wide, own = np.zeros((7, 5), np.float32), np.zeros((7, 2), np.float32)
    return types.SimpleNamespace(features=lambda split, fs=None: wide if (split, fs) == ("train", "clip") else own)


def test_at_scale_the_cost_plan_reads_the_runs_sizes_and_says_each_decision(monkeypatch):
    """From ``budget_from`` training entries the members are planned within the recipe's
    budget on the run's sizes (training entries, epochs, the recipe's learning rates, the
    width of the feature set trained on, the hidden width): said in one line, and one line
    per dropped member, through the recipe's log."""
    asked, real = _planned(monkeypatch)
    said = []
    recipe = types.SimpleNamespace(lrs=(1e-2, 1e-3), budget=4.0, budget_from=2 ** 27, log=said.append)
    config = TrainConfig(feature_set="clip", epochs=3, hidden=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = R._cost_plan(_scale_bundle(), config, recipe, _MEMBERS, _parts(100_000, 10_000))
    kw = dict(n_train=100_000, n_labels=10_000, epochs=3, n_lrs=2, in_features=5, hidden=16, budget=4.0,
              budget_from=2 ** 27)
    assert asked == [(_MEMBERS, kw)]
    expected = real(_MEMBERS, **kw)
    assert plan.active and plan.members == expected.members and plan.dropped == expected.dropped != []
    assert said == ["auto: at 100,000 x 10,000 training entries the members train within 12 epochs of one run "
                    "(method param budget=4 runs): each member's learning rates 0.01, 0.001 train one epoch and the "
                    "best goes on (successive halving); no longer try",
                    *(f"auto: member {d['method']!r} dropped: {d['reason']}" for d in expected.dropped)]


def test_below_scale_the_cost_plan_changes_nothing_and_says_nothing(monkeypatch):
    said = []
    recipe = types.SimpleNamespace(lrs=(1e-2,), budget=4.0, budget_from=2 ** 27, log=said.append)
    plan = R._cost_plan(_scale_bundle(), TrainConfig(epochs=3), recipe, _MEMBERS, _parts(100, 10))
    assert not plan.active and plan.members == _MEMBERS and plan.dropped == [] and said == []


def test_a_cost_plan_without_a_log_warns_at_its_callers_caller(monkeypatch):
    warned = []
    monkeypatch.setattr(warnings, "warn", lambda msg, *a, **kw: warned.append((msg, kw)))
    recipe = types.SimpleNamespace(lrs=(1e-2, 1e-3), budget=1.0, budget_from=1)
    plan = R._cost_plan(_scale_bundle(), TrainConfig(epochs=2), recipe, _MEMBERS[1:3], _parts(10, 10))
    assert [d["method"] for d in plan.dropped] == ["wan"]  # (l1r is the cheaper)
    assert [kw for _, kw in warned] == [{"stacklevel": 3}] * 2
    assert warned[1][0] == f"auto: member 'wan' dropped: {plan.dropped[0]['reason']}"


def _combined_case(monkeypatch, Y_train):
    """Two linear members weighed 1:3, a stub bundle of every split (5 rows each), the
    splits' labels, and spies on the scorers: ``(args, scored)``."""
    rng = np.random.default_rng(3)
    X = {sp: rng.normal(size=(5, D)).astype(np.float32) for sp in ("train", "val", "test")}
    heads = [_head_state("linear", j) for j in range(2)]
    kept = [types.SimpleNamespace(state={"val_logits": _logits(h, "linear", X["val"]),
                                         "test_logits": _logits(h, "linear", X["test"])}) for h in heads]
    head_state = R._stacked_heads([types.SimpleNamespace(state={"head": h}) for h in heads], ["linear"] * 2)
    bundle = types.SimpleNamespace(n_labels=L, features=lambda split, fs=None: X[split], size=lambda split: 5)
    Y = (rng.random((5, L)) < 0.5).astype(np.int8)
    parts = types.SimpleNamespace(Y_test=Y, Z_test=Y.copy(), Y_train=Y_train, test_mask=np.ones((5, L), bool),
                                  device=torch.device("cpu"))
    calls = {}
    monkeypatch.setattr(R, "split_scores", lambda *a, **kw: calls.setdefault("split", (a, kw)) and "scored")
    monkeypatch.setattr(R, "streamed_split_scores", lambda *a, **kw: calls.setdefault("streamed", (a, kw)) and
                        ["scored"])
    evaluated = []
    evaluate = lambda logits: evaluated.append(logits) or [0.25]  # noqa: E731
    base = TrainConfig(empty_classes="zero")
    zeros, ones = np.zeros(D, np.float32), np.ones(D, np.float32)
    return (bundle, base, parts, kept, head_state, zeros, ones, evaluate), X, heads, calls, evaluated


@pytest.mark.parametrize("with_train", [True, False])
def test_the_combined_model_is_scored_with_the_members_weights_on_every_split(monkeypatch, with_train):
    """Held logits: the combined model's validation, test and (with training labels)
    training logits are the members' mean probability weighed 1:3, scored with the run's
    empty-class rule and test mask; streamed, the same splits' views."""
    Y_train = np.ones((5, L), np.int8) if with_train else None
    (bundle, base, parts, kept, head_state, mean, std, evaluate), X, heads, calls, evaluated = \
        _combined_case(monkeypatch, Y_train)
    w = [1.0, 3.0]

    def combined(split):
        return R._combine([_logits(h, "linear", X[split]) for h in heads], w)

    with torch.device("meta"):  # (a caller's default device: the validation logits are scored on the CPU)
        val, test, score, scored = R._combined_scores(bundle, base, parts, kept, ["linear"] * 2, head_state, w,
                                                      mean, std, evaluate, True)
    assert score == 0.25 and scored == "scored" and evaluated[0].device.type == "cpu"
    np.testing.assert_allclose(val, combined("val"), rtol=1e-6)
    np.testing.assert_allclose(test, combined("test"), rtol=1e-6)
    ((v,),) = [tuple(e) for e in evaluated]
    np.testing.assert_allclose(v.numpy(), combined("val"), rtol=1e-6)
    (test_arg, train_arg), kw = calls["split"]
    np.testing.assert_array_equal(test_arg, test)
    if with_train:
        np.testing.assert_allclose(train_arg, combined("train"), rtol=1e-5, atol=1e-6)
    else:
        assert train_arg is None
    assert kw.keys() == {"Y_test", "Z_test", "Y_train", "empty", "test_mask"} and kw["empty"] == "zero"
    assert kw["Y_test"] is parts.Y_test and kw["Z_test"] is parts.Z_test and kw["Y_train"] is Y_train
    assert kw["test_mask"] is parts.test_mask
    # streamed: the views of the same combined model
    evaluated.clear()
    out = R._combined_scores(bundle, base, parts, kept, ["linear"] * 2, head_state, w, mean, std, evaluate, False)
    assert out == (None, None, 0.25, "scored")
    ((view,),) = [tuple([e]) for e in evaluated]
    np.testing.assert_allclose(view.dense()[0].numpy(), combined("val"), rtol=1e-5, atol=1e-6)
    (test_view, train_view), kw = calls["streamed"]
    np.testing.assert_allclose(test_view.dense()[0].numpy(), combined("test"), rtol=1e-5, atol=1e-6)
    if with_train:
        np.testing.assert_allclose(train_view.dense()[0].numpy(), combined("train"), rtol=1e-5, atol=1e-6)
    else:
        assert train_view is None
    assert kw["empty"] == "zero" and kw["test_mask"] is parts.test_mask and kw["Y_train"] is Y_train
    assert kw["Y_test"] is parts.Y_test and kw["Z_test"] is parts.Z_test


class _ValBundle:
    """What ``_validation_observations`` reads of a bundle: the validation split's size and
    its selection observations in a regime (recorded)."""

    def __init__(self, Z):
        self.Z, self.asked = Z, []

    def size(self, split):
        return len(self.Z) if split == "val" else 9

    def selection_observations(self, split, regime):
        self.asked.append((split, regime))
        return self.Z


def test_the_validation_observations_are_the_runs_regimes_in_int8():
    from spmlkit.methods.base import build_method

    recipe = build_method("auto")
    one = _ValBundle(np.array([[0, 1, 0]], dtype=np.int64))  # one row, with a positive
    Z = R._validation_observations(one, TrainConfig(regime="single_positive_most_frequent"), recipe)
    assert one.asked == [("val", "single_positive_most_frequent")]
    assert Z.dtype == np.int8 and np.asarray(Z).tolist() == [[0, 1, 0]]
    R._validation_observations(one, TrainConfig(), recipe)
    assert one.asked[-1] == ("val", recipe.regime)


def test_the_validation_refusals_in_full():
    from spmlkit.errors import ConfigError
    from spmlkit.methods.base import build_method

    recipe = build_method("auto")
    ok = _ValBundle(np.array([[1, 0]], dtype=np.int8))
    with pytest.raises(ConfigError) as e:
        R._validation_observations(ok, TrainConfig(setting="finetune"), recipe)
    assert str(e.value) == ("method 'auto' is a recipe of the linear setting (it trains several heads on cached "
                            "features); for fine-tuning name one method")
    with pytest.raises(ConfigError) as e:
        R._validation_observations(_ValBundle(np.zeros((0, 2), np.int8)), TrainConfig(), recipe)
    assert str(e.value) == ("method 'auto' chooses each member's learning rate on held-out observations; this data "
                            "has no validation split (prepare it with --val-fraction > 0, or give SPMLClassifier "
                            "validation_data)")
    with pytest.raises(ConfigError) as e:
        R._validation_observations(_ValBundle(np.array([[0, -1]], np.int8)), TrainConfig(), recipe)
    assert str(e.value) == ("the validation split has no observed positive, so the recipe cannot compare learning "
                            "rates; prepare the bundle again with a larger --val-fraction")


class _SparseParts:
    """What the budgets read of a run's prepared splits: its training observations and device."""

    def __init__(self, n, n_labels):
        self.observed = as_sparse(np.zeros((n, n_labels), dtype=np.int8), dtype=np.int8)
        self.device = torch.device("cpu")


def test_members_within_every_budget_in_turn(monkeypatch):
    """The per-entry state budget for every stacked run, then the tree members' arrays for
    one run per seed, then (at scale) the cost budget: each drop said through the recipe's
    log, listed in that order, and the plan given back."""
    from spmlkit.methods.base import TrainContext, build_method

    parts = _SparseParts(100, 10)
    n_runs, n_seeds = 8, 2
    tree_need = working_bytes(100, 10, n_seeds)
    em = build_method("em-apl").state_bytes(TrainContext(n_train=100, n_labels=10, observed=parts.observed,
                                                         n_members=n_runs))
    assert em > tree_need  # (em-apl dropped, the tree member kept at exactly its need)
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", repr(tree_need / 2 ** 20))
    said = []
    recipe = types.SimpleNamespace(lrs=(1e-2, 1e-3, 1e-4), budget=12.0, budget_from=1, log=said.append)
    members = (("em-apl", "linear"), ("an", "linear"), ("gr", "tree"), ("wan", "linear"), ("an", "mlp"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept, dropped, plan = R._members_within_budgets(_scale_bundle(), TrainConfig(epochs=2), recipe, members,
                                                        parts, n_runs, n_seeds)
    assert plan.active and kept == plan.members and ("gr", "tree") in kept and ("em-apl", "linear") not in kept
    assert [d["method"] for d in dropped] == ["em-apl", *(d["method"] for d in plan.dropped)] != ["em-apl"]
    assert said[0] == f"auto: member 'em-apl' dropped: {dropped[0]['reason']}" and len(said) == 2 + len(plan.dropped)
    # one byte less: the tree member goes too, said after the state budget's drops
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", repr((tree_need - 1) / 2 ** 20))
    said.clear()
    recipe.budget_from = 10 ** 9
    kept, dropped, plan = R._members_within_budgets(_scale_bundle(), TrainConfig(epochs=2), recipe, members,
                                                    parts, n_runs, n_seeds)
    assert not plan.active and kept == (("an", "linear"), ("wan", "linear"), ("an", "mlp"))
    assert [d["method"] for d in dropped] == ["em-apl", "gr:tree"] and "for 2 run(s)" in dropped[1]["reason"]
    assert said == [f"auto: member {d['method']!r} dropped: {d['reason']}" for d in dropped]


class _FakeTraining:
    """``train_linear`` without training: each ``(lr, seed)`` gets a run with a drawn head
    of the member's kind, drawn validation and test logits, the score ``scores(method, lr,
    seed, epochs)`` and ``epochs`` run, best at ``best(method, epochs)``; records what it
    was asked and what the member's callbacks were told."""

    def __init__(self, bundle, hidden, scores, best):
        self.bundle, self.hidden, self.scores, self.best = bundle, hidden, scores, best
        self.D = np.asarray(bundle.features("train")).shape[1]
        self.calls, self.states = [], {}

    def __call__(self, bundle, cfg, *, lrs, seeds, run_dir, resume, callbacks, keep_state, device):
        from spmlkit.training.callbacks import Tagged

        for cb in callbacks:  # (one epoch told to the caller's callbacks)
            cb.on_epoch_end(None, {"epoch": 1, "rows": []}) if isinstance(cb, Tagged) else None
        self.calls.append({"method": cfg.method, "head": cfg.head, "params": cfg.params, "patience": cfg.patience,
                           "selection": cfg.selection, "epochs": cfg.epochs, "lrs": list(lrs),
                           "seeds": list(seeds), "run_dir": run_dir, "resume": resume, "keep_state": keep_state,
                           "device": device, "callbacks": callbacks})
        runs = []
        L, n_val, n_test = self.bundle.n_labels, self.bundle.size("val"), self.bundle.size("test")
        for lr, s in zip(lrs, seeds):
            key = zlib.crc32(repr((cfg.method, cfg.head, float(lr), int(s), cfg.epochs)).encode())
            g = torch.Generator().manual_seed(key)
            head = build_head(cfg.head, self.D, L, [g], hidden=self.hidden)
            with torch.no_grad():
                for v in head.parameters():
                    v.copy_(torch.randn(v.shape, generator=g))
            rng = np.random.default_rng(key)
            state = {"head": {k: v[0].clone() for k, v in head.state_dict().items()},
                     "mean": rng.normal(size=self.D).astype(np.float32),
                     "std": rng.uniform(0.5, 2.0, size=self.D).astype(np.float32),
                     "val_logits": rng.normal(size=(n_val, L)).astype(np.float32),
                     "test_logits": rng.normal(size=(n_test, L)).astype(np.float32)}
            self.states[(cfg.method, cfg.head, float(lr), int(s), cfg.epochs)] = state
            runs.append(types.SimpleNamespace(method=cfg.method, lr=float(lr), seed=int(s), state=state,
                                              val_score=self.scores(cfg.method, lr, s, cfg.epochs),
                                              best_epoch=self.best(cfg.method, cfg.epochs), epochs_run=cfg.epochs))
        return runs


def test_a_recipe_records_its_members_choices_weights_and_result_fields(toy_bundle, monkeypatch, tmp_path):
    """With the members' training stubbed: each member is asked for its runs with the run's
    settings (its head, the recipe's patience, the observed criterion, every learning rate
    for every distinct seed, its own folder, the caller's resume, its state kept), tagged;
    a run peaking at its last epoch trains again longer and wins when it scores higher; the
    result of each caller's (lr, seed) records the chosen runs, their weights and the
    combined model (members of two head kinds side by side)."""
    from spmlkit.methods.base import build_method
    from spmlkit.training.recipe import train_recipe

    def scores(method, lr, s, epochs):
        return {("an", 1e-2): 0.3, ("an", 1e-3): 0.6, ("l1r", 1e-2): 0.5, ("l1r", 1e-3): 0.2, ("wan", 1e-2): 0.1,
                ("wan", 1e-3): 0.4}[(method, lr)] + \
            0.1 * s + (0.05 if epochs == 4 else 0.0)

    fake = _FakeTraining(toy_bundle, hidden=6, scores=scores, best=lambda method, epochs: 2 if method == "an" else 1)
    monkeypatch.setattr(R, "train_linear", fake)
    recipe = build_method("auto", members="an,l1r:mlp,wan", lrs="1e-2,1e-3", combine="mean_probability", longer=2)
    cfg = TrainConfig(method="auto", params={"members": "an,l1r:mlp,wan"}, epochs=2, batch_size=16, hidden=6,
                      expected_positives=1.5)
    heard = []
    clock = iter([100.0, 107.5, 109.0, 110.25])  # (the recipe's clock: its start, then each result's end)
    monkeypatch.setattr(R, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    results = train_recipe(toy_bundle, cfg, recipe, lrs=[0.5, 0.25, 0.125], seeds=[0, 0, 1], run_dir=tmp_path / "run",
                           resume=False, keep_state=True, on_epoch=heard.append)
    assert [r.seconds for r in results] == [7.5, 9.0, 10.25]  # (each from the start)
    assert len(results) == 3 and [(r.lr, r.seed) for r in results] == [(0.5, 0), (0.25, 0), (0.125, 1)]
    members = tmp_path / "run" / "members"
    asked = [{k: c[k] for k in ("method", "head", "params", "patience", "selection", "epochs", "lrs", "seeds",
                                "run_dir", "resume", "keep_state")} for c in fake.calls]
    grid = dict(lrs=[1e-2, 1e-2, 1e-3, 1e-3], seeds=[0, 1, 0, 1])
    common = dict(params=(), patience=recipe.patience, selection="observed_map", resume=False, keep_state=True)
    assert asked == [
        dict(method="an", head="linear", epochs=2, run_dir=members / "an", **grid, **common),
        # an peaked at its last epoch (2 of 2) for both seeds: each trains again for 4 epochs at its lr
        dict(method="an", head="linear", epochs=4, lrs=[1e-3], seeds=[0], run_dir=members / "an-x2-lr0.001-s0",
             **common),
        dict(method="an", head="linear", epochs=4, lrs=[1e-3], seeds=[1], run_dir=members / "an-x2-lr0.001-s1",
             **common),
        dict(method="l1r", head="mlp", epochs=2, run_dir=members / "l1r-mlp", **grid, **common),
        dict(method="wan", head="linear", epochs=2, run_dir=members / "wan", **grid, **common)]
    assert all(c["device"] == torch.device("cpu") for c in fake.calls)
    tags = [{k: v for k, v in cb.info.items()} for c in fake.calls for cb in c["callbacks"]]
    assert tags == [{"member": "an (1/3)", "member_index": 0, "member_count": 3, "member_epochs": 2},
                    {"member": "an-x2-lr0.001-s0 (1/3)", "member_index": 0, "member_count": 3, "member_epochs": 4},
                    {"member": "an-x2-lr0.001-s1 (1/3)", "member_index": 0, "member_count": 3, "member_epochs": 4},
                    {"member": "l1r-mlp (2/3)", "member_index": 1, "member_count": 3, "member_epochs": 2},
                    {"member": "wan (3/3)", "member_index": 2, "member_count": 3, "member_epochs": 2}]
    third = 1 / 3
    first = fake.states[("an", "linear", 1e-3, 0, 4)]  # (seed 0's first member: an's longer run)
    for r in results:
        s = r.seed
        assert r.method == "auto" and r.params == dict(recipe.params) and r.batch_size == 16
        assert r.selection == "observed_map" and r.val_history == [] and r.expected_positives == 1.5
        assert r.notes["members"] == [
            {"method": "an", "label": "an", "head": "linear", "lr": 1e-3, "best_epoch": 2, "epochs_run": 4,
             "val_observed_map": scores("an", 1e-3, s, 4), "weight": third, "longer_from": 2},
            {"method": "l1r", "label": "l1r-mlp", "head": "mlp", "lr": 1e-2, "best_epoch": 1, "epochs_run": 2,
             "val_observed_map": scores("l1r", 1e-2, s, 2), "weight": third},
            {"method": "wan", "label": "wan", "head": "linear", "lr": 1e-3, "best_epoch": 1, "epochs_run": 2,
             "val_observed_map": scores("wan", 1e-3, s, 2), "weight": third}]
        assert r.notes["patience"] == recipe.patience and r.notes["combine"] == "mean_probability"
        assert set(r.notes) == {"members", "patience", "combine"}
        assert r.best_epoch == 2 and r.epochs_run == 4
        st = r.state
        assert st["members"] == 3 and st["member_weights"] == [third] * 3 and st["method"] == {}
        assert st["head_kind"] == "mixed" and st["member_heads"] == ["linear", "linear", "mlp"]  # each kind together
        assert st["mean"] is first["mean"] and st["std"] is first["std"]
        chosen = [fake.states[k] for k in (("an", "linear", 1e-3, s, 4), ("wan", "linear", 1e-3, s, 2),
                                            ("l1r", "mlp", 1e-2, s, 2))]  # (each head kind's members together)
        for split in ("val", "test"):
            np.testing.assert_allclose(st[f"{split}_logits"], R._combine([c[f"{split}_logits"] for c in chosen],
                                                                         [third] * 3), rtol=1e-6)
        runs = [types.SimpleNamespace(state=fake.states[k]) for k in
                (("an", "linear", 1e-3, s, 4), ("wan", "linear", 1e-3, s, 2), ("l1r", "mlp", 1e-2, s, 2))]
        expected = R._stacked_heads(runs, ["linear", "linear", "mlp"])
        assert st["head"].keys() == expected.keys()
        assert all(torch.equal(st["head"][k], v) for k, v in expected.items())
    assert results[0].notes == results[1].notes and results[0].notes != results[2].notes
    assert heard == [{"epoch": 1, "rows": [], **tag} for tag in tags]  # (on_epoch: the member's epochs, tagged)


def test_at_scale_a_recipe_halves_its_learning_rates_tries_nothing_longer_and_records_the_budget(toy_bundle,
                                                                                                   monkeypatch):
    """From ``budget_from`` entries each member's learning rates are halved after one epoch
    (a stacked member only), no run trains longer, the plan is in the notes with what was
    dropped; ``select`` keeps one member, whose head is saved unstacked."""
    from spmlkit.methods.base import build_method
    from spmlkit.training.budget import LearningRateHalving
    from spmlkit.training.recipe import train_recipe

    fake = _FakeTraining(toy_bundle, hidden=6, scores=lambda m, lr, s, e: {"an": 0.2, "l1r": 0.4}[m] + lr,
                         best=lambda method, epochs: epochs)
    monkeypatch.setattr(R, "train_linear", fake)
    recipe = build_method("auto", members="an,l1r,wan:mlp", lrs="1e-2,1e-3", combine="select", longer=2,
                          budget_from=0, budget=4)
    said = []
    recipe.log = said.append
    cfg = TrainConfig(method="auto", epochs=2, batch_size=16, hidden=6, selection="observed_map")
    (r,) = train_recipe(toy_bundle, cfg, recipe, lrs=[1e-3], seeds=[0], keep_state=True)
    assert [(c["method"], c["epochs"]) for c in fake.calls] == [("an", 2), ("l1r", 2)]  # no longer try
    assert all(c["run_dir"] is None and c["resume"] is True for c in fake.calls)
    for c in fake.calls:
        assert [type(cb).__name__ for cb in c["callbacks"]] == ["LearningRateHalving"]
        assert c["callbacks"][0].at == 1 and isinstance(c["callbacks"][0], LearningRateHalving)
    assert sorted(m["weight"] for m in r.notes["members"]) == [0.0, 1.0] and r.state["member_weights"] == [1.0]
    assert r.notes["budget"]["halving"] == "learning rates after epoch 1" and r.notes["budget"]["longer"] == "skipped"
    assert [d["method"] for d in r.notes["dropped"]] == ["wan:mlp"] and len(said) == 2
    assert r.state["members"] == 1 and r.state["head_kind"] == "linear" and "member_heads" not in r.state
    assert r.state["head"]["weight"].shape == (fake.D, toy_bundle.n_labels)  # (one member: its own head)
    assert r.best_epoch == 2 and r.epochs_run == 2
    # one learning rate: nothing to halve
    fake.calls.clear()
    recipe = build_method("auto", members="an", lrs="1e-2", budget_from=0)
    recipe.log = said.append
    train_recipe(toy_bundle, cfg, recipe, lrs=[1e-3], seeds=[0])
    assert [c["callbacks"] for c in fake.calls] == [[]]


def test_another_selection_is_refused_in_full(toy_bundle):
    from spmlkit.errors import ConfigError
    from spmlkit.methods.base import build_method
    from spmlkit.training.recipe import train_recipe

    with pytest.raises(ConfigError) as e:
        train_recipe(toy_bundle, TrainConfig(method="auto", selection="map"), build_method("auto"), lrs=[1e-3],
                     seeds=[0])
    assert str(e.value) == ("method 'auto' selects with observed_map only (observed labels) on this data; "
                            "--selection map is not used by it \N{EM DASH} leave --selection at auto")


@pytest.mark.skipif(not TREES_INSTALLED, reason="a tree member needs the trees extra")
def test_at_scale_a_tree_member_trains_its_boosting_rounds_without_halving(toy_bundle, monkeypatch):
    """A tree member trains with ``train_trees`` (boosting rounds, not epochs of stacked
    learning rates): at scale it gets no learning-rate halving."""
    from spmlkit.methods.base import build_method
    from spmlkit.training.recipe import train_recipe

    asked = []

    def trees(bundle, cfg, *, lrs, seeds, callbacks, **kw):
        asked.append((cfg.method, cfg.head, list(lrs), [type(cb).__name__ for cb in callbacks]))
        raise KeyboardInterrupt  # (stop there: what it was given is what is tested)

    monkeypatch.setattr(R, "train_trees", trees)
    monkeypatch.setattr(R, "train_linear", lambda *a, **kw: pytest.fail("a tree member trained as a linear one"))
    recipe = build_method("auto", members="wan:tree", lrs="1e-2,1e-3", budget_from=0)
    recipe.log = lambda line: None
    with pytest.raises(KeyboardInterrupt):
        train_recipe(toy_bundle, TrainConfig(method="auto", epochs=2, batch_size=16), recipe, lrs=[1e-3], seeds=[0])
    assert asked == [("wan", "tree", [1e-2, 1e-3], [])]


def test_tree_members_states_stack_padded_to_the_longest_booster():
    """Tree members keep byte strings of their own lengths: stacked zero-padded (the
    other heads' states stack as they are)."""
    trees = [{"booster": torch.tensor([1, 2, 3], dtype=torch.uint8), "length": 3, "intercept": torch.zeros(2),
              "n_features": 4},
             {"booster": torch.tensor([4, 5, 6, 7, 8], dtype=torch.uint8), "length": 5, "intercept": torch.ones(2),
              "n_features": 4}]
    out = R._stack(trees)
    assert out["booster"].tolist() == [[1, 2, 3, 0, 0], [4, 5, 6, 7, 8]] and out["length"].tolist() == [3, 5]
    assert out["intercept"].tolist() == [[0, 0], [1, 1]] and out["n_features"].tolist() == [4, 4]
