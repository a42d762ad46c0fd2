"""Hyper-parameter constraints (spmlkit.params): declared once, checked by one function that
the losses, the methods, the configuration, spml train and spml bench all call."""
import math

import numpy as np
import pytest

from spmlkit.errors import ConfigError
from spmlkit.params import ANY, TEXT, Interval, Options, check_params, constraints_from_signature, describe


@pytest.mark.parametrize("interval, good, bad", [
    (Interval(float, 0, None, closed="neither"), [1e-9, 3, np.float32(2.0)], [0, -1, math.inf, math.nan, True, "1"]),
    (Interval(float, 0, 1), [0, 0.5, 1], [-0.01, 1.01]),
    (Interval(float, 0, 1, closed="left"), [0, 0.99], [1]),
    (Interval(int, 1), [1, 7, np.int64(3)], [0, 2.5, 3.0, False]),
    (Interval(float), [-5, 5.5], [math.inf, None]),
])
def test_an_interval_accepts_its_range_only(interval, good, bad):
    assert all(interval.accepts(v) for v in good), [v for v in good if not interval.accepts(v)]
    assert not any(interval.accepts(v) for v in bad), [v for v in bad if interval.accepts(v)]


def test_options_and_the_plain_constraints():
    assert Options("a", "b").accepts("a") and not Options("a", "b").accepts("c")
    assert Options(1, 2).accepts(2.0) and not Options(1, 2).accepts(True) and not Options(True).accepts(1)
    assert check_params({"x": None, "y": object(), "z": 3, "w": "t"},
                        {"x": [None], "y": [ANY], "z": [TEXT], "w": [TEXT]})
    for constraint, value in ((bool, 1), (int, 1.5), (float, "2"), (str, 2), (TEXT, True), (None, 0)):
        with pytest.raises(ConfigError, match=f"v must be {describe(constraint)}, got"):
            check_params({"v": value}, {"v": [constraint]})


def test_unknown_names_and_bad_values_are_one_line_errors_naming_the_owner():
    with pytest.raises(ConfigError, match=r"^loss 'x' has no hyper-parameter\(s\) \['b'\]; it takes \['a'\]$"):
        check_params({"b": 1}, {"a": [float]}, owner="loss 'x'")
    with pytest.raises(ConfigError, match=r"^method 'm': a must be a finite number in \[0, 1\] or None, got 2$"):
        check_params({"a": 2}, {"a": [Interval(float, 0, 1), None]}, owner="method 'm'")
    assert check_params({}, {"a": [float]}) == {}


def test_constraints_come_from_the_signature_and_the_declaration():
    def f(a: float = 1.0, b: int | None = None, c: bool = False, d: str = "x", e=None, f=(1, 2), *, g: "list" = ()):
        pass

    c = constraints_from_signature(f, declared={"a": [Interval(float, 0)]})
    assert c == {"a": c["a"], "b": [int, None], "c": [bool], "d": [TEXT], "e": [ANY], "f": [ANY], "g": [ANY]}
    assert isinstance(c["a"][0], Interval)
    assert constraints_from_signature(f, ["d"], text=str) == {"d": [str]}
    with pytest.raises(TypeError, match="constraints declared for names it does not take"):
        constraints_from_signature(f, declared={"nope": [float]})


def test_every_registered_loss_and_method_has_a_constraint_for_each_hyper_parameter():
    """The registries derive them at registration: the one checker knows every name."""
    from spmlkit.losses import LOSSES
    from spmlkit.methods import METHODS

    for spec in [*LOSSES.values(), *METHODS.values()]:
        assert set(spec.constraints) == set(spec.hyperparameters), spec.name
        for name, default in spec.hyperparameters.items():  # every default meets its own constraints
            check_params({name: default}, spec.constraints, owner=spec.name)
