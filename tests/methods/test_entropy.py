"""The entropy methods of Zhou et al.'s (2022) Table 1 (em, em-apl, entmin): registration and
defaults.  APL's component: tests/methods/test_apl.py; every row on every regime:
tests/integration/test_paper_rows.py."""
from spmlkit.methods import METHODS, build_method, get_method_spec

NAMES = ["em", "em-apl", "entmin"]


def test_all_rows_registered():
    get_method_spec("an")
    for name in NAMES:
        spec = METHODS[name]
        assert spec.family == "zhou2022" and spec.regime == "single_positive" and spec.reference
        m = build_method(name)
        assert m.name == name and m.supports_members


def test_defaults():
    assert build_method("em").loss_params == {"alpha": 0.1}
    assert build_method("entmin").loss_params == {"weight": 0.1, "assume_negative": True}
