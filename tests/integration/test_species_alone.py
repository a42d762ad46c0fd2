"""``spml prepare --species`` (spmlkit.data.formats.occurrences.select_species): a species'
bundle and model from a shared multi-species file are those of a file holding its records
alone — its map does not depend on which other species share the file."""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.cli import one_line_error, run_cli

pytest.importorskip("rasterio")


@pytest.mark.parametrize("split", [(), ("--val-blocks", "3", "--folds", "3")])
@pytest.mark.parametrize("method", [("-m", "full-weighted"), ()], ids=["full-weighted", "auto"])
def test_a_species_from_a_shared_file_trains_as_from_its_own_file(tmp_path, capsys, split, method):
    """(``auto``: its one-species members, the MaxEnt-feature head among them, whose ranges and
    penalties are fitted on the training rows: the same rows, the same model.)"""
    from spmlkit.data import Bundle
    from spmlkit.practitioner.evaluation import model_features
    from spmlkit.practitioner.saved import load_model
    from tests.helpers.rasters import located_records, make_stack, write_records

    env = make_stack(tmp_path / "env")
    rows = located_records(20)
    both = write_records(tmp_path / "both.csv", rows)
    alone = write_records(tmp_path / "alone.csv", [r for r in rows if r[0] == "Aus alpha"])
    common = ("--rasters", env, "--background-points", "60", "--min-train-records", "1", *split)
    assert run_cli(capsys, "prepare", alone, *common, "-o", tmp_path / "bA")[0] == 0
    code, _, err = run_cli(capsys, "prepare", both, *common, "--species", "Aus alpha", "-o", tmp_path / "bS")
    assert code == 0 and "--species: the records of 'Aus alpha' only (20 of 40" in err
    a, s = Bundle(tmp_path / "bA"), Bundle(tmp_path / "bS")
    assert a.label_names == s.label_names == ["Aus alpha"]
    for sp in ("train", "val", "test"):
        np.testing.assert_array_equal(np.asarray(a.features(sp)), np.asarray(s.features(sp)))
        np.testing.assert_array_equal(a.observations(sp).dense(), s.observations(sp).dense())
    scores = []
    for b in ("bA", "bS"):
        assert run_cli(capsys, "train", tmp_path / b, *method, "--epochs", 2, "--seed", 1,
                       "-o", tmp_path / f"run_{b}")[0] == 0
        m = load_model(tmp_path / f"run_{b}")
        scores.append(m.decision_function(model_features(m, a, "test")))
    np.testing.assert_array_equal(scores[0], scores[1])
    # the same species trained with the other in the file: another bundle (the default, one model for both)
    assert run_cli(capsys, "prepare", both, *common, "-o", tmp_path / "bB")[0] == 0
    assert Bundle(tmp_path / "bB").label_names == ["Aus alpha", "Bus beta"]


def test_species_not_in_the_file_or_without_rasters_is_one_line(tmp_path, capsys):
    from tests.helpers.rasters import located_records, make_stack, write_records

    env = make_stack(tmp_path / "env")
    both = write_records(tmp_path / "both.csv", located_records(5))
    code, _, err = run_cli(capsys, "prepare", both, "--rasters", env, "--species", "Aus betta", "-o", tmp_path / "b")
    msg = one_line_error(err)
    assert code == 2 and "'Aus betta'" in msg and "'Aus alpha', 'Bus beta'" in msg and not (tmp_path / "b").exists()
    code, _, err = run_cli(capsys, "prepare", both, "--species", "Aus alpha", "-o", tmp_path / "b")
    assert code == 2 and "--species goes with --rasters" in one_line_error(err)
