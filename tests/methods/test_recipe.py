"""The ``auto`` recipe method (spmlkit.methods.recipe, issue 16): registered, described,
and its bad hyperparameters refused in one line."""
from __future__ import annotations


import pytest

from spmlkit.methods.base import build_method, describe_methods, get_method_spec



def test_registered_and_described():
    spec = get_method_spec("auto")
    assert spec.family == "recipe" and spec.setting == "linear" and not spec.in_default_bench
    from spmlkit.methods.base import Method
    from spmlkit.methods.recipe import DEFAULT_MEMBERS, Recipe, is_recipe

    m = build_method("auto")
    assert isinstance(m, Recipe) and is_recipe(m) and not isinstance(m, Method)  # a meta-method, not a loss
    assert not is_recipe(build_method("an"))
    assert m.members == tuple((n, None) for n in DEFAULT_MEMBERS.split(",")) and m.lrs == (1e-2, 1e-3, 1e-4)
    assert m.combine == "ensemble_selection" and m.longer == 2
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
    ({"rounds": 0}, "rounds"),
    ({"presence_head": "conv"}, "presence_head"),
])
def test_bad_hyperparameters_are_one_clear_error(params, message):
    with pytest.raises(Exception) as e:
        build_method("auto", **params)
    assert message in str(e.value)
