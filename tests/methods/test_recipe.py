"""The ``auto`` recipe method (spmlkit.methods.recipe, issue 16): registered, described,
and its bad hyperparameters refused in one line."""
from __future__ import annotations


import pytest

from spmlkit.methods.base import build_method, describe_methods, get_method_spec
from spmlkit.methods.recipe import TREES_INSTALLED



def test_registered_and_described():
    spec = get_method_spec("auto")
    assert spec.family == "recipe" and spec.setting == "linear" and not spec.in_default_bench
    from spmlkit.methods.base import Method
    from spmlkit.methods.recipe import DEFAULT_MEMBERS, Recipe, is_recipe

    m = build_method("auto")
    assert isinstance(m, Recipe) and is_recipe(m) and not isinstance(m, Method)  # a meta-method, not a loss
    assert not is_recipe(build_method("an"))
    expected = tuple((n.partition(":")[0], n.partition(":")[2] or None) for n in DEFAULT_MEMBERS.split(","))
    assert m.members == expected and m.lrs == (1e-2, 1e-3)
    assert m.combine == "ensemble_selection" and m.longer == 2 and m.patience == 5
    assert build_method("auto", members="an,wan:mlp").members == (("an", None), ("wan", "mlp"))
    assert any(d["name"] == "auto" for d in describe_methods())


@pytest.mark.parametrize("params, message", [
    ({"members": "an,nope"}, "nope"),
    ({"members": "bce"}, "regime"),
    ({"members": "lac"}, "fine-tuning"),
    ({"members": "auto"}, "recipe"),
    ({"members": " , "}, "empty"),
    ({"lrs": "fast"}, "numbers"),
    ({"lrs": "-1e-3"}, "positive"),
    ({"combine": "vote"}, "combine"),
    ({"members": "an:conv"}, "head"),
    ({"members": "an,an"}, "twice"),
    ({"longer": 0}, "longer"),
    ({"patience": 0}, "patience"),
    ({"patience": 2.5}, "patience"),
    ({"rounds": 0}, "rounds"),
    ({"presence_head": "conv"}, "presence_head"),
    ({"mlp": "sometimes"}, "mlp"),
])
def test_bad_hyperparameters_are_one_clear_error(params, message):
    with pytest.raises(Exception) as e:
        build_method("auto", **params)
    assert message in str(e.value)


def test_mlp_members_train_on_tabular_features_only():
    """``:mlp`` members are left out on a backbone's cached image features (mlp="tabular",
    the default), kept with mlp="always", left out everywhere with mlp="never"; presence-only
    data has its own members."""
    m = build_method("auto", members="an,wan:mlp,l1r")
    assert m.members_for(False, backbone_features=False) == (("an", None), ("wan", "mlp"), ("l1r", None))
    assert m.members_for(False, backbone_features=True) == (("an", None), ("l1r", None))
    assert build_method("auto", members="an,wan:mlp", mlp="always").members_for(False, True) == (
        ("an", None), ("wan", "mlp"))
    assert build_method("auto", members="an,wan:mlp", mlp="never").members_for(False, False) == (("an", None),)
    trees = (("full-weighted", "tree"),) if TREES_INSTALLED else ()  # (with the trees extra)
    assert m.members_for(True) == (("full-weighted", "mlp"), ("an-full", "mlp"), *trees)
