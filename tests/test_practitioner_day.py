"""A practitioner's day (issue 25): train the deployed model on all rows, auto by default,
progress in logs, experiment tracking, and the small things a new user trips over."""
import csv

import numpy as np
import pytest

from spmlkit.cli import main
from spmlkit.data import Bundle

LABELS = ["cat", "dog", "sofa", "tree"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def own_csv(tmp_path):
    """train.csv: 150 rows of 5 features and one observed label each (a user's own data)."""
    rng = np.random.default_rng(0)
    W = rng.normal(size=(5, len(LABELS)))
    path = tmp_path / "train.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"f{i}" for i in range(5)] + ["label"])
        for _ in range(150):
            x = rng.normal(size=5)
            w.writerow([f"{v:.3f}" for v in x] + [LABELS[int(np.argmax(x @ W))]])
    return path


# ------------------------------------------------------------ item 1: train on all rows
def test_test_fraction_zero_trains_on_every_row_but_validation(tmp_path, capsys, own_csv):
    code, out, err = run(capsys, "prepare", own_csv, "--label-column", "label", "--test-fraction", "0",
                         "-o", tmp_path / "b")
    assert code == 0, err
    b = Bundle(tmp_path / "b")
    assert (b.size("train"), b.size("val"), b.size("test")) == (120, 30, 0)
    assert "no test split (--test-fraction 0)" in out
    # every row is used exactly once
    rows = np.concatenate([np.load(b.path / s / "index.npy") for s in ("train", "val")])
    assert sorted(rows.tolist()) == list(range(150))
    # the validation split still serves auto's choices; no test score is claimed
    code, out, err = run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", "2", "-o", tmp_path / "r")
    assert code == 0, err
    assert "best epoch" in out and "test mAP" not in out
    from spmlkit.io import read_json

    res = read_json(tmp_path / "r" / "result.json")
    assert res["test_map"] is None and res["selection"] == "observed_map"


def test_val_fraction_zero_keeps_the_last_epoch_and_auto_says_why(tmp_path, capsys, own_csv):
    code, out, err = run(capsys, "prepare", own_csv, "--label-column", "label", "--test-fraction", "0",
                         "--val-fraction", "0", "-o", tmp_path / "b")
    assert code == 0, err
    assert (Bundle(tmp_path / "b").size("train")) == 150
    code, out, err = run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", "2", "-o", tmp_path / "r")
    assert code == 0 and "final epoch 2 kept" in out
    code, out, err = run(capsys, "train", tmp_path / "b", "-m", "auto", "--epochs", "2", "-o", tmp_path / "r2")
    assert code == 2 and "--val-fraction > 0" in err


@pytest.mark.parametrize("option,value,words", [("--test-fraction", "1", "--test-fraction must be below 1"),
                                                ("--val-fraction", "0.001", "choose another --val-fraction")])
def test_hold_out_errors_name_the_option(tmp_path, capsys, own_csv, option, value, words):
    code, out, err = run(capsys, "prepare", own_csv, "--label-column", "label", option, value, "-o", tmp_path / "b")
    assert code == 2 and words in err and str(own_csv) in err
    assert len(err.strip().splitlines()) <= 2  # (the observed-labels note, then one error line)
    assert not (tmp_path / "b").exists()
