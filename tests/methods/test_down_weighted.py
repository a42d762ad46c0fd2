"""Down-weighted assumed negatives, ``dw`` (Zhou et al. 2022, Table 1): registration and defaults."""
from spmlkit.methods import METHODS, build_method, get_method_spec


def test_registered():
    get_method_spec("an")
    spec = METHODS["dw"]
    assert spec.family == "zhou2022" and spec.regime == "single_positive" and spec.reference
    m = build_method("dw")
    assert m.name == "dw" and m.supports_members


def test_defaults():
    assert build_method("dw").loss_params == {"weight": None}
