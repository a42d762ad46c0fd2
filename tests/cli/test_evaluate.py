"""``spml evaluate`` (spmlkit.cli.evaluate): mAP and AUC of a trained model on a bundle
split, as text or JSON; a bundle with other labels is refused in one line."""
import json

import pytest

from tests.helpers.cli import one_line_error, run_cli


@pytest.fixture
def trained(toy_bundle, tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", toy_bundle.path, "-m", "an", "--epochs", 2, "--lr", "0.01",
                           "-o", tmp_path / "run")
    assert code == 0, err
    return tmp_path / "run"


def test_json_reports_map_and_auc_per_label(trained, toy_bundle, capsys):
    code, out, err = run_cli(capsys, "evaluate", trained, toy_bundle.path, "--json")
    assert code == 0, err
    ev = json.loads(out)
    assert ev["split"] == "test" and 0 <= ev["map"] <= 100
    assert list(ev["ap"]) == list(ev["auc"]) == toy_bundle.label_names
    result = json.loads((trained / "result.json").read_text())
    assert ev["map"] == pytest.approx(result["test_map"])  # the same number the run reported


def test_text_lists_every_label_of_the_chosen_split(trained, toy_bundle, capsys):
    code, out, _ = run_cli(capsys, "evaluate", trained, toy_bundle.path, "--split", "val")
    assert code == 0
    assert out.startswith("val mAP ") and "val AUC-ROC per label: mean " in out
    assert all(f"  {name} " in out for name in toy_bundle.label_names)


def test_a_bundle_with_other_labels_is_one_line_exit_2(trained, yeast_bundle, capsys):
    code, out, err = run_cli(capsys, "evaluate", trained, yeast_bundle.path)
    assert code == 2 and out == ""
    msg = one_line_error(err)  # which labels differ, not only how many
    assert "the model's labels differ from the bundle's: missing 'l0'" in msg and "unexpected 'Class1'" in msg, msg


def test_help(capsys):
    code, out, _ = run_cli(capsys, "evaluate", "--help")
    assert code == 0 and "--empty-classes" in out and "--split" in out


def test_presence_only_train_and_evaluate_report_auc_against_background_per_species(tmp_path, capsys):
    """Records on rasters (no surveyed sites): `spml train` prints and stores, per species,
    records against background (AUC, TSS, Boyce, counts) and thresholds, not the observed
    mAP; `spml evaluate` prints the same row for its split, and the counts are the bundle's."""
    pytest.importorskip("rasterio")
    from spmlkit.data import Bundle
    from tests.helpers.rasters import located_records, make_stack, write_records

    env = make_stack(tmp_path / "env")
    rec = write_records(tmp_path / "r.csv", located_records(20))
    assert run_cli(capsys, "prepare", rec, "--rasters", env, "--background-points", "60", "-o", tmp_path / "b")[0] == 0
    code, out, err = run_cli(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 2, "-o", tmp_path / "run")
    assert code == 0, err
    assert "observed-positive mAP" not in out and "records against background" in out
    stored = json.loads((tmp_path / "run" / "sdm_metrics.json").read_text())
    b = Bundle(tmp_path / "b")
    Zt = b.observations("test")
    for k, name in enumerate(b.label_names):
        row = stored["species"][name]["test"]
        assert row["records"] == int(Zt.col_counts(1)[k]) and row["background"] == int((Zt.row_counts(1) == 0).sum())
        assert 0 <= row["auc"] <= 1 and f"{name:28s} test " in out
        assert "p10_training_presence" in stored["thresholds"][name]
    code, out, _ = run_cli(capsys, "evaluate", tmp_path / "run", tmp_path / "b")
    assert code == 0 and "records against background" in out and " val    " not in out  # the test split only
    ev = json.loads(run_cli(capsys, "evaluate", tmp_path / "run", tmp_path / "b", "--json")[1])
    assert ev["sdm"]["species"] == stored["species"]
