"""``auto``'s cost budget at scale (spmlkit.training.budget): the cheapest members while the
budget lasts, learning rates by successive halving after one epoch, no longer try — each
said and recorded — and nothing changed below the size."""
from __future__ import annotations

import json
import math

import pytest

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.methods.base import METHODS, build_method, get_method_spec, register_method
from spmlkit.training.budget import head_cost, member_cost, plan
from spmlkit.training.run import train

FAST = dict(epochs=3, batch_size=16)
#: the budget forced on at the toy's size (budget_from=0), learning rates halved
AT_SCALE = dict(members="an,l1r", lrs="1e-2,1e-3", longer=2, budget_from=0)


def test_plan_admits_the_cheapest_members_while_the_budget_lasts():
    members = (("em-apl", "linear"), ("gr", "linear"), ("wan", "linear"), ("l1r", "linear"), ("wan", "mlp"))
    p = plan(members, n_train=80_000, n_labels=10_000, epochs=3, n_lrs=2, in_features=64, hidden=512,
             budget=4, budget_from=2 ** 27)
    # each linear member: 1 epoch at 2 lrs + 2 epochs at the best = 4 of its epochs; 12 epochs of -m an allowed;
    # an epoch of l1r costs 1, wan 1.25, gr 3.4, em-apl 4.4 (their declared epoch_cost): l1r + wan = 9
    assert p.active and p.members == (("wan", "linear"), ("l1r", "linear")) and p.budget_epochs == 12
    assert p.spent_epochs == pytest.approx(4 * 1.0 + 4 * 1.25)
    assert [d["method"] for d in p.dropped] == ["em-apl", "gr", "wan:mlp"]  # (in the recipe's order)
    assert all("budget" in d["reason"] and "12.0" in d["reason"] for d in p.dropped)
    assert "13.6 epochs" in p.dropped[1]["reason"]  # gr: 4 epochs x 3.4
    # a larger budget keeps more, in the recipe's order; an expensive member is skipped while cheaper ones fit
    p = plan(members[:4], n_train=80_000, n_labels=10_000, epochs=3, n_lrs=2, in_features=64, hidden=512,
             budget=8, budget_from=2 ** 27)
    assert p.members == members[1:4] and [d["method"] for d in p.dropped] == ["em-apl"]
    p = plan((("an", "linear"), ("an", "mlp"), ("l1r", "linear")), n_train=10 ** 6, n_labels=10 ** 3, epochs=3,
             n_lrs=2, in_features=64, hidden=512, budget=3, budget_from=2 ** 27)
    assert p.members == (("an", "linear"), ("l1r", "linear")) and [d["method"] for d in p.dropped] == ["an:mlp"]
    # the cheapest member always trains, whatever it costs
    p = plan((("gr", "mlp"), ("an", "mlp")), n_train=10 ** 6, n_labels=10 ** 3, epochs=3, n_lrs=2, in_features=64,
             hidden=512, budget=0.5, budget_from=0)
    assert p.members == (("an", "mlp"),) and p.spent_epochs > p.budget_epochs
    # one learning rate: no halving to pay for
    p = plan((("an", "linear"),) * 2, n_train=10, n_labels=10, epochs=5, n_lrs=1, in_features=8, hidden=8,
             budget=2, budget_from=0)
    assert p.spent_epochs == 10 and len(p.members) == 2


def test_member_cost_adds_the_loss_work_beyond_an_to_the_head():
    assert member_cost("an", "linear", 64, 512) == 1.0
    gr = get_method_spec("gr").epoch_cost
    assert gr > 3 and member_cost("gr", "linear", 64, 512) == pytest.approx(gr)
    assert member_cost("gr", "mlp", 64, 512) == pytest.approx(head_cost("mlp", 64, 512) + gr - 1)
    assert all(spec.epoch_cost > 0 for spec in METHODS.values())
    with pytest.raises(ValueError, match="epoch_cost"):
        register_method("never-registered", epoch_cost=0.0)


def test_below_the_size_nothing_changes():
    members = (("gr", "linear"), ("wan", "mlp"))
    p = plan(members, n_train=2 ** 13, n_labels=2 ** 14 - 1, epochs=25, n_lrs=2, in_features=64, hidden=512,
             budget=1, budget_from=2 ** 27)
    assert not p.active and p.members == members and p.dropped == [] and p.notes() is None
    assert plan(members, n_train=2 ** 13, n_labels=2 ** 14, epochs=25, n_lrs=2, in_features=64, hidden=512,
                budget=1, budget_from=2 ** 27).active  # exactly the size: on


def test_head_cost_counts_the_output_layer_and_the_entry_work():
    assert head_cost("linear", 100, 512) == 1.0
    assert head_cost("mlp", 64, 512) == pytest.approx((512 + 32) / (64 + 32))
    assert head_cost("mlp", 1024, 512) < 1  # a hidden layer narrower than the features is cheaper per entry


def _member_rows(run_dir, member):
    return [json.loads(line) for line in (run_dir / "members" / member / "metrics.jsonl").read_text().splitlines()]


def test_at_scale_the_learning_rates_are_halved_after_one_epoch_said_and_recorded(toy_bundle, tmp_path):
    said = []
    recipe = build_method("auto", **AT_SCALE)
    recipe.log = said.append
    from spmlkit.training.recipe import train_recipe

    cfg = TrainConfig(method="auto", **FAST)
    (r,) = train_recipe(toy_bundle, cfg, recipe, lrs=[1e-3], seeds=[0], run_dir=tmp_path / "run", keep_state=True)
    for name in ("an", "l1r"):
        rows = _member_rows(tmp_path / "run", name)
        first = {row["member"]: row["val_score"] for row in rows if row["epoch"] == 1}
        assert len(first) == 2  # both learning rates trained the first epoch, stacked
        later = {row["member"] for row in rows if row["epoch"] > 1}
        valid = {g: s for g, s in first.items() if not math.isnan(s)}
        winner = max(valid, key=lambda g: (valid[g], -g))
        assert later == {winner}  # only the best of epoch 1 went on
    assert not list((tmp_path / "run" / "members").glob("*-x2-*"))  # no longer try at scale
    assert r.notes["budget"]["halving"] == "learning rates after epoch 1" and r.notes["budget"]["longer"] == "skipped"
    assert r.notes["budget"]["budget_epochs"] == 12.0
    assert any("successive halving" in line and "no longer try" in line for line in said)
    chosen = {m["method"]: m for m in r.notes["members"]}
    assert all(m["epochs_run"] == 3 for m in chosen.values())  # the chosen run is the one that went on


def test_members_past_the_budget_are_dropped_said_and_recorded(toy_bundle):
    said = []
    recipe = build_method("auto", **{**AT_SCALE, "budget": 1.0})
    recipe.log = said.append
    from spmlkit.training.recipe import train_recipe

    (r,) = train_recipe(toy_bundle, TrainConfig(method="auto", **FAST), recipe, lrs=[1e-3], seeds=[0])
    assert [m["method"] for m in r.notes["members"]] == ["an"]  # 4 epochs of 3 allowed: the first always trains
    assert [d["method"] for d in r.notes["dropped"]] == ["l1r"]
    assert any("member 'l1r' dropped" in line and "budget" in line for line in said)


def test_below_the_size_the_recipe_is_unchanged(toy_bundle):
    """The default size leaves the toy data (and every committed table) as before: both
    learning rates train every epoch, and a member that peaks last gets its longer try."""
    params = {"members": "an,l1r", "lrs": "1e-2,1e-3", "longer": 1}
    cfg = TrainConfig(method="auto", params=params, **FAST)
    (default,) = train(toy_bundle, cfg)
    (explicit,) = train(toy_bundle, cfg.replace(params={**params, "budget": 0.1, "budget_from": 2 ** 27}))
    assert "budget" not in default.notes and default.notes == explicit.notes
    assert default.test_map == explicit.test_map


def test_a_run_stopped_after_the_halving_resumes_to_the_same_end(toy_bundle, tmp_path):
    cfg = TrainConfig(method="auto", params=AT_SCALE, batch_size=16, epochs=3)
    train(toy_bundle, cfg.replace(epochs=1), run_dir=tmp_path / "run")
    (resumed,) = train(toy_bundle, cfg, run_dir=tmp_path / "run")
    (fresh,) = train(toy_bundle, cfg)
    assert resumed.test_map == pytest.approx(fresh.test_map, abs=1e-9) and resumed.notes == fresh.notes


@pytest.mark.parametrize("params", [{"budget": 0}, {"budget": -1.0}, {"budget": float("inf")}, {"budget": True},
                                    {"budget_from": -1}, {"budget_from": 1.5}])
def test_bad_budgets_are_refused(params):
    with pytest.raises(ConfigError, match="budget"):
        build_method("auto", **params)


def test_at_scale_a_member_that_peaks_at_its_last_epoch_gets_no_longer_try(toy_bundle, monkeypatch):
    import spmlkit.training.recipe as recipe

    real, calls = recipe.train_linear, []

    def spy(bundle, cfg, **kw):
        runs = real(bundle, cfg, **kw)
        calls.append((cfg.epochs, list(kw["lrs"])))
        for r in runs:  # pretend every run peaked at its last epoch
            r.best_epoch = r.epochs_run = cfg.epochs
        return runs

    monkeypatch.setattr(recipe, "train_linear", spy)
    (r,) = train(toy_bundle, TrainConfig(method="auto", params={**AT_SCALE, "members": "an"}, **FAST))
    assert calls == [(3, [1e-2, 1e-3])] and r.notes["budget"]["longer"] == "skipped"
    (r,) = train(toy_bundle, TrainConfig(method="auto", params={**AT_SCALE, "members": "an", "budget_from": 10 ** 9},
                                         **FAST))
    assert len(calls) == 3 and calls[1] == (3, [1e-2, 1e-3]) and calls[2][0] == 6  # below the size: the longer try
    assert "budget" not in r.notes
