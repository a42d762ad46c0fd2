"""One rule for every label reader of a user's table (spmlkit.data.formats.label_rule): a
label-set column, a long (id, label) table and wide 0/1 columns whose rows are evidently
partial are read as observed, with a note giving the evidence; rows that may be complete
label sets are refused in one line (exit 2, nothing written) naming the option and the
evidence, unless --observed or --full-labels says which; the bundle records the reading,
and train/evaluate print no full-label number for labels nobody declared full."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from spmlkit.data import Bundle
from tests.helpers.cli import run_cli as run

L = 8
NAMES = [f"sp{j}" for j in range(L)]


def _label_sets(per_row, n=60, seed=0):
    rng = np.random.default_rng(seed)
    return [sorted(rng.choice(L, size=int(rng.integers(per_row[0], per_row[1] + 1)), replace=False).tolist())
            for _ in range(n)], rng.normal(size=(n, 3))


def _write(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _set_table(path, sets, X):
    return _write(path, ["f0", "f1", "f2", "labels"],
                  [[f"{v:.3f}" for v in x] + [";".join(NAMES[j] for j in s)] for x, s in zip(X, sets)])


def _long_table(path, sets, X):
    return _write(path, ["site", "f0", "f1", "f2", "species"],
                  [[f"s{i}"] + [f"{v:.3f}" for v in X[i]] + [NAMES[j]] for i, s in enumerate(sets) for j in s])


def _wide_table(path, sets, X):
    return _write(path, ["f0", "f1", "f2", *(f"lab_{n}" for n in NAMES)],
                  [[f"{v:.3f}" for v in x] + [int(j in s) for j in range(L)] for x, s in zip(X, sets)])


#: layout -> (writer, the options that name the labels, how the refusal names them, rows or examples)
LAYOUTS = {
    "label-set column": (_set_table, ["--label-set-column", "labels"], "--label-set-column 'labels'", "rows"),
    "long table": (_long_table, ["--label-column", "species", "--id-column", "site"], "--label-column 'species'",
                   "examples"),
    "wide 0/1 columns": (_wide_table, ["--label-columns", "lab_*"], "--label-columns 'lab_*'", "rows"),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_evidently_partial_rows_are_read_as_observed_with_the_evidence(tmp_path, capsys, layout):
    write, opts, _, rows = LAYOUTS[layout]
    src = write(tmp_path / "t.csv", *_label_sets((1, 2)))
    code, out, err = run(capsys, "prepare", src, *opts, "-o", tmp_path / "b")
    assert code == 0, err
    note = [line for line in err.splitlines() if "read as observed positives" in line]
    assert len(note) == 1 and f"training {rows} name 1-2 labels each (mean 1." in note[0] and f"of {L}" in note[0]
    assert "--observed" in note[0] and "--full-labels" in note[0]
    b = Bundle(tmp_path / "b")
    assert not b.has_full_labels and b.meta["label_reading"].startswith("observed: evidently partial (training")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rows_that_may_be_complete_are_refused_naming_the_option_and_the_evidence(tmp_path, capsys, layout):
    """(fails on the code before this rule for the long table and the wide columns, which
    were read without asking)"""
    write, opts, named, rows = LAYOUTS[layout]
    src = write(tmp_path / "t.csv", *_label_sets((1, 5)))
    code, out, err = run(capsys, "prepare", src, *opts, "-o", tmp_path / "b")
    assert code == 2 and len(err.strip().splitlines()) == 1 and not (tmp_path / "b").exists(), err
    assert f"{named} complete label sets or only the labels observed?" in err
    assert f"training {rows} name 1-5 labels each (mean " in err and f"of {L})" in err
    assert "pass --full-labels (observed=False) or --observed (observed=True)" in err
    assert out == "" and list(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("flag,full", [("--full-labels", True), ("--observed", False)])
def test_a_flag_says_which_and_the_bundle_records_it(tmp_path, capsys, layout, flag, full):
    write, opts, _, _ = LAYOUTS[layout]
    sets, X = _label_sets((1, 5))
    src = write(tmp_path / "t.csv", sets, X)
    code, out, err = run(capsys, "prepare", src, *opts, flag, "-o", tmp_path / "b")
    assert code == 0, err
    assert "read as observed" not in err and "complete label sets or" not in err
    b = Bundle(tmp_path / "b")
    assert b.has_full_labels is full
    assert b.meta["label_reading"] == ("full labels: declared (--full-labels)" if full
                                       else "observed: declared (--observed)")
    assert b.size("train") + b.size("val") + b.size("test") == len(sets)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_no_full_label_number_for_labels_not_declared_full(tmp_path, capsys, layout):
    """Evidently partial rows read as observed: train and evaluate print observed-label
    scores only — no "label recovery", no full-label "test mAP"."""
    write, opts, _, _ = LAYOUTS[layout]
    src = write(tmp_path / "t.csv", *_label_sets((1, 2), n=80))
    assert run(capsys, "prepare", src, *opts, "-o", tmp_path / "b")[0] == 0
    code, out, err = run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 2, "-o", tmp_path / "r")
    assert code == 0, err
    assert "label recovery" not in out + err and "test mAP " not in out
    assert any("observed" in line for line in out.splitlines() if "mAP" in line), out
    code, out, err = run(capsys, "evaluate", tmp_path / "r", tmp_path / "b")
    assert code == 0, err
    assert "label recovery" not in out + err and "test mAP " not in out


def test_one_positive_per_row_is_single_positive_data_in_every_layout(tmp_path, capsys):
    """Exactly one positive per row (of 2+ labels) is evidently partial too, whatever the
    layout: read as observed single positives, said in one line."""
    sets, X = _label_sets((1, 1))
    for k, (write, opts, _, _) in enumerate(LAYOUTS.values()):
        src = write(tmp_path / f"t{k}.csv", sets, X)
        code, out, err = run(capsys, "prepare", src, *opts, "-o", tmp_path / f"b{k}")
        assert code == 0, err
        assert len([line for line in err.splitlines() if "observed single positives" in line]) == 1, err
        b = Bundle(tmp_path / f"b{k}")
        assert not b.has_full_labels and b.meta["label_reading"].startswith("observed: every training row")


def test_observations_in_wide_columns_without_a_flag_point_at_observed(tmp_path, capsys):
    """-1 (an observed negative) read as a 0/1 full label: the one-line error says what it
    is and names --observed; with it the table reads."""
    src = _write(tmp_path / "w.csv", ["f0", "a", "b"], [["1", "1", "-1"], ["2", "0", "1"], ["3", "1", "0"]])
    code, out, err = run(capsys, "prepare", src, "--labels-last", 2, "-o", tmp_path / "b")
    assert code == 2 and len(err.strip().splitlines()) == 1 and not (tmp_path / "b").exists(), err
    assert "label column 'b' has value '-1'; expected 0 or 1; -1 and empty cells are observations" in err
    assert "pass --observed" in err
