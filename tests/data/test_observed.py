"""A practitioner's own observed-only data (spmlkit.data.observed): the small fully
labelled validation file is read in the training file's layout and vocabulary."""
import numpy as np
import pytest

from spmlkit.data import load_any
from spmlkit.data.observed import read_validation_file
from spmlkit.errors import DataFormatError


def _write(path, header, rows):
    path.write_text("\n".join(",".join(map(str, r)) for r in [header, *rows]) + "\n")
    return path


@pytest.fixture
def train(tmp_path):
    """A wide table of observations (+1 observed positive, 0 unobserved) with labels a, b, c."""
    rows = [(0.1 * i, 1.0 - 0.1 * i, *[1 if j == i % 3 else 0 for j in range(3)]) for i in range(9)]
    f = _write(tmp_path / "own.csv", ["f1", "f2", "a", "b", "c"], rows)
    return load_any(str(f), observed=True, labels_last=3)


def test_wide_validation_columns_are_matched_by_name(tmp_path, train):
    f = _write(tmp_path / "val.csv", ["f1", "f2", "c", "a", "b"], [(1, 2, 1, 0, 1), (3, 4, 0, 1, 0)])
    val = read_validation_file(f, train, labels_last=3)
    assert train.label_names == ["a", "b", "c"]
    assert val.Y.astype(int).tolist() == [[0, 1, 1], [1, 0, 0]]  # reordered as a, b, c
    assert np.allclose(val.X, [[1, 2], [3, 4]])


def test_refusals_name_the_file(tmp_path, train):
    with pytest.raises(DataFormatError, match="validation file not found"):
        read_validation_file(tmp_path / "missing.csv", train, labels_last=3)
    f = _write(tmp_path / "other.csv", ["f1", "f2", "a", "b", "zebra"], [(1, 2, 1, 0, 1)])
    with pytest.raises(DataFormatError, match=r"other.csv: labels differ from the training file's \(missing: \['c'\], "
                                              r"unknown: \['zebra'\]\)"):
        read_validation_file(f, train, labels_last=3)


def test_a_label_column_may_name_several_labels_and_repeat_an_example(tmp_path):
    own = _write(tmp_path / "own.csv", ["f1", "label"], [(0.0, "a"), (1.0, "b"), (2.0, "c"), (3.0, "a")])
    train = load_any(str(own), label_column="label")
    val = read_validation_file(_write(tmp_path / "val.csv", ["f1", "label"], [(5.0, "a;c"), (6.0, "b")]),
                               train, label_column="label")
    assert val.Y.astype(int).tolist() == [[1, 0, 1], [0, 1, 0]]
    with pytest.raises(DataFormatError, match="unknown label 'zebra'"):
        read_validation_file(_write(tmp_path / "bad.csv", ["f1", "label"], [(5.0, "zebra")]), train,
                             label_column="label")
