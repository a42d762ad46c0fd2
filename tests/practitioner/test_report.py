"""Every run folder gets report.md (configuration, per-epoch table, final metrics,
label-set quality) and curves.png, with the numbers of the run."""
import json

import numpy as np
from PIL import Image

from spmlkit.config import TrainConfig
from spmlkit.data import MultiLabelDataset, Split, prepare_bundle
from spmlkit.practitioner.run_folder import run_training
from tests.helpers.factories import single_positive


def test_report_and_curves_with_full_labels(toy_bundle, tmp_path):
    out = tmp_path / "r"
    run_training(toy_bundle, TrainConfig(method="an", epochs=4, lr=0.02, seed=3), out)
    report = (out / "report.md").read_text()
    result = json.loads((out / "result.json").read_text())
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    with Image.open(out / "curves.png") as im:
        assert im.format == "PNG" and im.size[0] > 400 and im.size[1] > 200
    assert "# Run report: r — an on toy" in report and "| lr | 0.02 |" in report and "| seed | 3 |" in report
    assert "![training loss and validation score per epoch](curves.png)" in report
    for r in rows:  # the per-epoch table holds the logged numbers
        assert f"| {r['epoch']} | {r['train_loss']:.5f} | {r['val_score']:.4g} |" in report
    assert f"test mAP (full labels): **{result['test_map']:.2f}**" in report
    assert f"best epoch: **{result['best_epoch']}** of 4" in report
    assert "Observed labels only" not in report
    # label-set quality at the model's rule (per-label thresholds tuned on the full validation labels)
    default = [q for q in result["label_set_quality"] if q["default"]][0]
    assert default["labels"] == "full"
    assert "It was chosen on the fully labelled validation split by example-based F1" in report
    assert "per-label thresholds (tuned for F1 on validation) (out of fold) |" in report
    assert f"| {default['rule']} (default) | {default['micro_f1']:.2f} | {default['macro_f1']:.2f} |" in report
    assert "| threshold 0.5 |" in report and "| top-1 |" in report and "| expected-k (k=" in report


def test_report_on_observed_labels_says_so(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    Z = np.zeros((150, 3), dtype=np.int8)
    Z[np.arange(150), (X[:, :3]).argmax(1)] = 1
    b = prepare_bundle(MultiLabelDataset("own", ["a", "b", "c"], {"train": Split(X=X, Z=Z)}), tmp_path / "b",
                       log=lambda m: None)
    out = tmp_path / "r"
    run_training(b, TrainConfig(method="an", epochs=3, lr=0.02), out)
    report = (out / "report.md").read_text()
    result = json.loads((out / "result.json").read_text())
    assert (out / "curves.png").exists()
    assert "**Observed labels only.**" in report and "test mAP (full labels)" not in report
    t = result["test_observed"]
    assert f"observed-positive mAP **{t['observed_map']:.2f}**" in report
    assert "validation observed_map (observed)" in report
    default = [q for q in result["label_set_quality"] if q["default"]][0]
    # without full labels the default rule is expected-k with k estimated from observations (issue 15)
    assert default["labels"] == "observed" and default["rule"].startswith("expected-k (k=")
    assert f"| {default['rule']} (default) | {default['observed_recall']:.2f}% |" in report
    assert "| threshold 0.5 |" in report and "1 / observed recall@1 on" in report
    assert "precision cannot be measured" in report


# Issue 15 §3: the default label-set rule without full labels is expected-k with k
# known or estimated from the observations (1 / observed recall@1), not a fixed 0.5;
# implausible sets (mean size > 2x away from k, > 50% empty) are warned about in the
# Python API (LabelSetWarning), in `spml predict --labels` (one stderr line) and in the
# run report.  Explicit `--threshold-rule threshold --threshold 0.5` stays available and
# saved models keep their stored rule.


def test_run_report_warns_about_implausible_default_sets(tmp_path):
    from spmlkit.practitioner.report import label_set_quality, run_summary_lines, write_run_report

    rng = np.random.default_rng(0)
    P = rng.random((50, 6)) * 0.3  # no score reaches 0.5: every set empty under threshold 0.5
    Z = single_positive(50, 6, rng)
    rule = {"rule": "threshold", "threshold": 0.5, "k": 2.0, "k_estimate": 2.0, "k_source": "given"}
    rows = label_set_quality(P, Z=Z, spec=rule)
    assert rows[0]["default"] and rows[0]["empty_sets"] == 100.0
    record = {"selection": "observed_map", "best_epoch": 1, "epochs_run": 1, "val_score": 1.0, "seconds": 0.0,
              "label_sets": rule, "label_set_quality": rows}
    write_run_report(tmp_path, result=record, config={"method": "an"}, bundle_meta={"has_full_labels": False},
                     label_set_rows=rows, label_rule=rule)
    report = (tmp_path / "report.md").read_text()
    assert "> **Warning (threshold 0.5, the default rule, on the test split):** label sets look implausible" in report
    assert any(line.startswith("warning: label sets look implausible") for line in run_summary_lines(record, tmp_path))


def test_a_note_when_the_best_epoch_is_the_last_one():
    """Issue 37: best epoch = last epoch (yeast an 25/25, disdat NZ 30/30) says training
    may have been too short and how to train longer; not otherwise."""
    from spmlkit.practitioner.report import last_epoch_note, run_summary_lines

    rec = {"method": "an", "selection": "map", "best_epoch": 25, "epochs_run": 25, "val_score": 40.0}
    note = last_epoch_note(rec)
    assert note.startswith("note: the best epoch is the last one (25 of 25)") and "--epochs 50" in note
    assert note in run_summary_lines(rec, "runs/x")
    assert last_epoch_note({**rec, "best_epoch": 24}) is None
    assert last_epoch_note({**rec, "selection": "last"}) is None  # no validation: last kept by definition
    assert note not in run_summary_lines({**rec, "best_epoch": 24}, "runs/x")
    auto = {"method": "auto", "selection": "observed_map", "epochs_run": 25,
            "notes": {"members": [{"method": "l1r", "lr": 1e-2, "best_epoch": 25},
                                  {"method": "wan", "lr": 1e-3, "best_epoch": 7}]}}
    assert last_epoch_note(auto).startswith("note: l1r's best epoch is the last one (25 of 25)")
