"""Zhou et al.'s (2022) label smoothing rows (ls, n-ls): registration and defaults."""
from spmlkit.methods import METHODS, build_method, get_method_spec

NAMES = ["ls", "n-ls"]


def test_all_rows_registered():
    get_method_spec("an")
    for name in NAMES:
        spec = METHODS[name]
        assert spec.family == "zhou2022" and spec.regime == "single_positive" and spec.reference
        m = build_method(name)
        assert m.name == name and m.supports_members


def test_defaults():
    assert build_method("ls").loss_params == {"epsilon": 0.2}
    assert build_method("n-ls").loss_params == {"epsilon": 0.2}
