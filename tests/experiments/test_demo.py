"""``spml demo`` (spmlkit.experiments.demo): which methods it trains, in which order, and
the takeaway for a user without full labels.  The demo end to end is tested in
tests/cli/test_demo.py and tests/integration/test_practitioner_day.py."""
import pytest

from spmlkit.errors import ConfigError
from spmlkit.experiments.demo import RECIPE, demo_methods, run_demo, takeaway
from spmlkit.labels import REGIME_ORDER
from spmlkit.methods import METHODS


def test_methods_grouped_by_regime_with_bce_first_an_first_of_its_regime_and_auto_last():
    names = demo_methods()
    assert names[0] == "bce" and names[-1] == RECIPE == "auto"
    regimes = [REGIME_ORDER.index(METHODS[n].regime) for n in names[:-1]]
    assert regimes == sorted(regimes)
    single = [n for n in names[:-1] if METHODS[n].regime == "single_positive"]
    assert single[0] == "an" and single[1:] == sorted(single[1:])
    assert all(METHODS[n].in_default_bench and METHODS[n].setting != "finetune" for n in names[:-1])


def _row(method, regime, test, val):
    return {"method": method, "regime": regime, "test_map": test, "val_map": val}


def test_takeaway_compares_auto_with_an_and_full_labels():
    rows = [_row("bce", "full", 70.0, 71.0), _row("an", "single_positive", 50.0, 52.0),
            _row("role", "single_positive", 58.0, 60.0), _row("auto", "single_positive", 55.5, 40.0)]
    lines = takeaway(rows)
    assert lines[0] == ("Takeaway: with one positive label per example and no full labels, spml train's default "
                        "(auto, tuned on observed labels only) reaches 55.5 test mAP vs 50.0 for assume-negative "
                        "(an) and 70.0 with full labels (bce).")
    assert lines[1].startswith("(role scores 58.0 here, but it was picked on full validation labels")
    assert lines[-1].startswith("Next: 'spml prepare yeast -o bundles/yeast'")


def test_takeaway_without_auto_names_the_best_single_positive_method_as_chosen_on_full_labels():
    lines = takeaway([_row("an", "single_positive", 50.0, 52.0), _row("role", "single_positive", 58.0, 60.0)])
    assert lines[0] == ("Takeaway: with one positive label per example, role (best on full-label validation) "
                        "reaches 58.0 test mAP vs 50.0 for assume-negative (an).")
    assert len(takeaway([])) == 1  # only the next step


def test_a_folder_of_the_users_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="refusing to write into"):
        run_demo(str(tmp_path), quick=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
