"""The ``auto`` recipe method (spmlkit.methods.recipe, issue 16): registered, described,
and its bad hyperparameters refused in one line."""
from __future__ import annotations


import pytest

from spmlkit.methods.base import build_method, describe_methods, get_method_spec



def test_registered_and_described():
    spec = get_method_spec("auto")
    assert spec.family == "recipe" and spec.setting == "linear" and not spec.in_default_bench
    m = build_method("auto")
    assert m.candidates == ("l1r", "em-apl", "wan", "ll-ct") and m.candidate_lrs == (1e-2, 1e-3, 1e-4)
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
])
def test_bad_hyperparameters_are_one_clear_error(params, message):
    with pytest.raises(Exception) as e:
        build_method("auto", **params)
    assert message in str(e.value)
