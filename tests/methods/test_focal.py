"""The focal-type rows of Zhou et al.'s (2022) Table 1 (focal, asl): registration and defaults."""
from spmlkit.methods import METHODS, build_method, get_method_spec

NAMES = ["focal", "asl"]


def test_all_rows_registered():
    get_method_spec("an")
    for name in NAMES:
        spec = METHODS[name]
        assert spec.family == "zhou2022" and spec.regime == "single_positive" and spec.reference
        m = build_method(name)
        assert m.name == name and m.supports_members


def test_defaults():
    assert build_method("focal").loss_params == {"gamma": 2.0, "alpha": None}
    assert build_method("asl").loss_params == {"gamma_pos": 0.0, "gamma_neg": 4.0, "margin": 0.05}
