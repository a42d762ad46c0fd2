"""A bundle held in memory (spmlkit.data.memory.ArrayBundle): what training reads of a
bundle, over numpy arrays, for the scikit-learn estimator."""
import numpy as np
import pytest

from spmlkit.data.memory import ArrayBundle
from spmlkit.errors import ConfigError, SpmlError
from tests.helpers.factories import single_positive


def _arrays(n=12, L=3, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), single_positive(n, L, rng)


def test_training_rows_are_observations_and_validation_may_have_full_labels():
    X, Z = _arrays()
    Y_val = np.array([[1, 0, 1], [0, 1, 0]], dtype=bool)
    b = ArrayBundle(X, Z, X_val=X[:2], Y_val=Y_val, label_names=["a", "b", "c"], name="mine")
    assert (b.size("train"), b.size("val"), b.size("test")) == (12, 2, 0)
    assert b.n_labels == 3 and b.label_names == ["a", "b", "c"] and b.name == "mine"
    assert not b.has_full_labels and b.regime == "observed" and b.meta["sizes"] == {"train": 12, "val": 2, "test": 0}
    assert b.features("train").dtype == np.float32 and np.allclose(b.features("train"), X)
    assert np.array_equal(b.observations("train"), Z) and b.labels("train") is None
    assert np.array_equal(b.labels("val"), Y_val)
    assert b.observations("val").tolist() == [[1, -1, 1], [-1, 1, -1]]  # full labels as observations
    assert np.array_equal(b.selection_observations("val"), b.observations("val"))
    assert b.feature_sets() == [] and ArrayBundle(X, Z).label_names == ["0", "1", "2"]


def test_validation_observations_are_kept_as_given():
    X, Z = _arrays()
    b = ArrayBundle(X, Z, X_val=X[:4], Z_val=Z[:4])
    assert np.array_equal(b.observations("val"), Z[:4]) and b.labels("val") is None


def test_refusals():
    X, Z = _arrays()
    with pytest.raises(ConfigError, match="val features given without labels or observations"):
        ArrayBundle(X, Z, X_val=X[:2])
    with pytest.raises(ConfigError, match=r"train: 11 inputs but labels of shape \(12, 3\)"):
        ArrayBundle(X[:11], Z)
    with pytest.raises(ConfigError, match=r"test: 2 inputs but labels of shape \(2, 4\) \(expected \(N, 3\)\)"):
        ArrayBundle(X, Z, X_test=X[:2], Y_test=np.ones((2, 4), dtype=bool))
    b = ArrayBundle(X, Z)
    with pytest.raises(SpmlError, match="no test split"):
        b.features("test")
    with pytest.raises(SpmlError, match="no val split"):
        b.observations("val")
    with pytest.raises(ConfigError, match="no named feature sets"):
        b.features("train", "resnet50")
    with pytest.raises(SpmlError, match="cannot be re-observed under regime 'single_positive'"):
        b.observations("train", regime="single_positive")
