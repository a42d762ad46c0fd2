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
