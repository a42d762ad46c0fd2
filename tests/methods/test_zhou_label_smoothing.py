"""Zhou et al.'s (2022) label smoothing rows (ls, n-ls): registration and defaults."""
from spmlkit.methods import build_method
from tests.helpers.training_checks import assert_rows_registered

NAMES = ["ls", "n-ls"]


def test_all_rows_registered():
    assert_rows_registered(NAMES, family="zhou2022")


def test_defaults():
    assert build_method("ls").loss_params == {"epsilon": 0.2}
    assert build_method("n-ls").loss_params == {"epsilon": 0.2}
