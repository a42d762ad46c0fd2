"""The in-memory containers every loader returns (spmlkit.data.dataset): a Split holds
features or image paths and full labels or observations, a MultiLabelDataset checks
that its splits agree, and check_features names the bad value's row and column."""
import numpy as np
import pytest

from spmlkit.data.dataset import MultiLabelDataset, Split, check_features, resolve_path
from spmlkit.errors import DataFormatError


def test_a_split_holds_features_or_paths_and_labels_or_observations():
    s = Split(X=np.zeros((3, 2)), Y=[[1, 0], [0, 1], [1, 1]], ids=["a", "b", "c"])
    assert len(s) == 3 and s.n_labels == 2 and s.Y.dtype == bool
    sub = s.subset([2, 0])
    assert sub.ids == ["c", "a"] and sub.Y.tolist() == [[True, True], [True, False]]
    images = Split(paths=["x.png", "y.png"], Z=[[1, 0, 0], [0, 0, 1]])
    assert len(images) == 2 and images.n_labels == 3 and images.Z.dtype == np.int8
    with pytest.raises(ValueError, match="exactly one of X"):
        Split(X=np.zeros((1, 2)), paths=["x.png"], Y=[[1]])
    with pytest.raises(ValueError, match="needs full labels Y or observations Z"):
        Split(X=np.zeros((1, 2)))
    with pytest.raises(DataFormatError, match="ids has 2 rows but the inputs have 3"):
        Split(X=np.zeros((3, 2)), Y=np.zeros((3, 1)), ids=["a", "b"])


def test_a_dataset_checks_its_splits_agree():
    tr = Split(X=np.zeros((2, 3)), Y=[[1, 0], [0, 1]])
    ds = MultiLabelDataset("d", ["a", "b"], {"train": tr, "test": Split(X=np.ones((1, 3)), Y=[[1, 1]])})
    assert ds.is_features and ds.kind == "features" and ds.has_full_labels and ds.n_labels == 2
    assert not MultiLabelDataset("o", ["a", "b"], {"train": Split(X=np.zeros((1, 3)), Z=[[1, 0]])}).has_full_labels
    with pytest.raises(ValueError, match="needs a 'train' split"):
        MultiLabelDataset("d", ["a", "b"], {"test": tr})
    with pytest.raises(DataFormatError, match="split 'train' has 2 label columns; expected 3"):
        MultiLabelDataset("d", ["a", "b", "c"], {"train": tr})
    with pytest.raises(DataFormatError, match=r"duplicate label names: \['a'\]"):
        MultiLabelDataset("d", ["a", "a"], {"train": tr})
    with pytest.raises(DataFormatError, match="splits mix feature vectors and image paths"):
        MultiLabelDataset("d", ["a", "b"], {"train": tr, "test": Split(paths=["x.png"], Y=[[1, 0]])})
    with pytest.raises(DataFormatError, match=r"splits have different feature dimensions \[3, 4\]"):
        MultiLabelDataset("d", ["a", "b"], {"train": tr, "test": Split(X=np.ones((1, 4)), Y=[[1, 0]])})


def test_check_features():
    X = check_features(np.arange(6, dtype=np.int64).reshape(3, 2))
    assert X.dtype == np.float32 and X.tolist() == [[0, 1], [2, 3], [4, 5]]
    bad = np.zeros((3, 2))
    bad[2, 1] = np.nan
    with pytest.raises(DataFormatError, match="f.csv: non-finite feature value nan at row 3, column 2"):
        check_features(bad, "f.csv")
    big = np.zeros((1, 2))
    big[0, 0] = 1e300
    with pytest.raises(DataFormatError, match="feature value 1e\\+300 at row 1, column 1 overflows float32"):
        check_features(big)
    for X, needle in [(np.zeros(3), "2-D"), (np.zeros((2, 0)), "no feature columns"),
                      (np.zeros((1, 1), dtype=complex), "complex numbers"),
                      (np.array([["a"]]), "must be numeric"), (np.array([[{}]], dtype=object), "Python objects")]:
        with pytest.raises(DataFormatError, match=needle):
            check_features(X)


def test_resolve_path(tmp_path):
    assert resolve_path(tmp_path, "imgs/a.png") == str(tmp_path / "imgs" / "a.png")
    assert resolve_path(tmp_path, "/abs/a.png") == "/abs/a.png"


def _observed_dataset(names_per_row, labels):
    from spmlkit.data.dataset import MultiLabelDataset, Split

    Z = np.zeros((len(names_per_row), len(labels)), dtype=np.int8)
    for i, n in enumerate(names_per_row):
        Z[i, labels.index(n)] = 1
    return MultiLabelDataset("own", labels, {"train": Split(X=np.zeros((len(Z), 2)), Z=Z)})


def test_single_use_labels():
    from spmlkit.data.dataset import MultiLabelDataset, Split, single_use_labels

    labels = ["cat", "dog", "dgo", "sofa", "sfoa"]
    ds = _observed_dataset(["cat", "cat", "dog", "dog", "dgo", "sofa", "sofa", "sfoa"], labels)
    assert single_use_labels(ds) == ["dgo", "sfoa"]
    assert single_use_labels(_observed_dataset(["cat", "dog"], ["cat", "dog"])) == []  # all once: none stands out
    # full labels count too, over every split
    Y = np.array([[1, 0, 1], [1, 1, 0]], dtype=bool)
    ds = MultiLabelDataset("t", ["a", "b", "c"], {"train": Split(X=np.zeros((2, 1)), Y=Y),
                                                  "test": Split(X=np.zeros((1, 1)), Y=[[0, 0, 1]])})
    assert single_use_labels(ds) == ["b"]
