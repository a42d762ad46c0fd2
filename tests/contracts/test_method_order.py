"""The methods' order is pinned (``ORDER`` in src/spmlkit/methods/order.py): the registry
lists spmlkit's methods exactly in that order, every one of them is pinned, and ``spml
bench``'s default method lists (whose committed tables were written in that order) are
as committed, so moving or renaming a method module reorders nothing."""
from __future__ import annotations

from spmlkit.experiments.bench import default_methods
from spmlkit.methods import METHODS, ORDER, get_method_spec

get_method_spec("an")  # discovers every method module

#: ``spml bench``'s default method lists when the order was pinned
LINEAR_DEFAULT = ["bce", "bce-ls", "iun", "iu", "an", "ll-r", "ll-ct", "ll-cp", "an-ls", "an-ls-asym", "wan", "epr",
                  "pr", "zlpr", "opml", "opml-hr", "opml-soft", "opml-lc", "opml-sp", "role", "em", "em-apl", "dw",
                  "l1r", "l2r", "ls", "n-ls", "entmin", "focal", "asl"]
FINETUNE_DEFAULT = LINEAR_DEFAULT[:13] + ["lac"] + LINEAR_DEFAULT[13:]


def _in_tree() -> list[str]:
    """spmlkit's own methods, in the registry's order (plug-ins and tests' methods left out)."""
    return [n for n, s in METHODS.items() if getattr(s.factory, "__module__", "").startswith("spmlkit.")]


def test_the_pin_names_each_method_once():
    assert len(set(ORDER)) == len(ORDER), sorted(n for n in set(ORDER) if ORDER.count(n) > 1)


def test_every_registered_method_is_pinned():
    missing = [n for n in _in_tree() if n not in ORDER]
    assert not missing, f"registered methods missing from ORDER in src/spmlkit/methods/order.py: {missing}"


def test_every_pinned_name_is_registered():
    gone = [n for n in ORDER if n not in METHODS]
    assert not gone, f"ORDER in src/spmlkit/methods/order.py names methods no module registers: {gone}"


def test_the_registry_lists_the_methods_in_the_pinned_order():
    assert _in_tree() == list(ORDER)


def test_the_bench_default_lists_are_as_committed():
    """(spmlkit's own methods: other test files register stand-ins of their own)"""
    own = set(_in_tree())
    assert [n for n in default_methods("linear") if n in own] == LINEAR_DEFAULT
    assert [n for n in default_methods("finetune") if n in own] == FINETUNE_DEFAULT
