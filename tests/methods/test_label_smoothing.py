"""Cole et al.'s (2021) label smoothing methods (bce-ls, an-ls, an-ls-asym): registration,
regimes, defaults.  That every Cole method learns: tests/integration/test_paper_rows.py."""
from spmlkit.methods import METHODS, get_method_spec

ROWS = {"an-ls": "single_positive", "an-ls-asym": "single_positive", "bce-ls": "full"}


def test_registered_with_regimes_and_defaults():
    get_method_spec("an")
    for name, regime in ROWS.items():
        assert METHODS[name].regime == regime and METHODS[name].family == "cole2021"
    assert METHODS["an-ls"].hyperparameters == {"epsilon": 0.2}
    assert METHODS["an-ls-asym"].hyperparameters == {"epsilon_p": 0.0, "epsilon_n": 0.2}
