"""The entropy methods of Zhou et al.'s (2022) Table 1 (em, em-apl, entmin): registration and
defaults.  APL's component: tests/methods/test_apl.py; every row on every regime:
tests/integration/test_paper_rows.py."""
from spmlkit.methods import build_method
from tests.helpers.training_checks import assert_rows_registered

NAMES = ["em", "em-apl", "entmin"]


def test_all_rows_registered():
    assert_rows_registered(NAMES, family="zhou2022")


def test_defaults():
    assert build_method("em").loss_params == {"alpha": 0.1}
    assert build_method("entmin").loss_params == {"weight": 0.1, "assume_negative": True}
