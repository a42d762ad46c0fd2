"""The pinned method order (src/spmlkit/methods/order.py) holds whatever order the method
modules register in: the registry re-seats every entry by the pin, and a method that is
not pinned (a plug-in) follows the pinned ones."""
from __future__ import annotations

import random

import pytest

from spmlkit.methods import METHODS, ORDER, Method, get_method_spec, register_method
from spmlkit.registry import Registry

get_method_spec("an")  # discovers every method module


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_the_pin_holds_for_any_registration_order(seed):
    names = list(ORDER)
    if seed is None:
        names.reverse()
    else:
        random.Random(seed).shuffle(names)
    reg = Registry("method", package=None, order=ORDER)
    for name in names:
        reg.add(name, METHODS[name], owner=METHODS[name].factory)
    assert list(reg) == list(ORDER)


def test_an_unpinned_method_follows_the_pinned_ones_in_registration_order():
    reg = Registry("method", package=None, order=("b", "a"))
    for name in ("z", "a", "y", "b"):
        reg.add(name, name, owner=None)
    assert list(reg) == ["b", "a", "z", "y"]
    reg.remove("z")
    reg.add("z", "z", owner=None)  # withdrawn and registered again: now the last one
    assert list(reg) == ["b", "a", "y", "z"]


def test_a_plug_in_method_is_listed_after_spmlkits_own():
    @register_method("zz-order-test", reference="a test")
    def build() -> Method:
        """A test method."""
        return Method("zz-order-test", "an")

    try:
        assert list(METHODS)[-1] == "zz-order-test"
        assert list(METHODS)[:len(ORDER)] == list(ORDER)
    finally:
        METHODS.remove("zz-order-test")
