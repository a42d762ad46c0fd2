"""The focal-type rows of Zhou et al.'s (2022) Table 1 (focal, asl): registration and defaults."""
from spmlkit.methods import build_method
from tests.helpers.training_checks import assert_rows_registered

NAMES = ["focal", "asl"]


def test_all_rows_registered():
    assert_rows_registered(NAMES, family="zhou2022")


def test_defaults():
    assert build_method("focal").loss_params == {"gamma": 2.0, "alpha": None}
    assert build_method("asl").loss_params == {"gamma_pos": 0.0, "gamma_neg": 4.0, "margin": 0.05}
