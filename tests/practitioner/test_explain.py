"""Response curves and permutation importance (issue 36), on a hand-made model whose
answer is known: species A (recorded in the west, where it is cold) falls with temp, B
rises; the model ignores rain, and soil
matters only through its one-hot columns moved together."""
from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("rasterio")

from spmlkit.data import prepare_bundle  # noqa: E402
from spmlkit.data.formats.occurrences import records_on_rasters  # noqa: E402
from spmlkit.errors import ConfigError  # noqa: E402
from spmlkit.practitioner.explain import explain, permutation_importance, response_curves  # noqa: E402
from tests.helpers.rasters import located_records, linear_model, make_stack, write_records  # noqa: E402


@pytest.fixture
def setup(tmp_path):
    from spmlkit.data.encoding import CovariateEncoding

    env = make_stack(tmp_path / "env")
    ds = records_on_rasters(write_records(tmp_path / "r.csv", located_records(25)), [env], background=80)
    bundle = prepare_bundle(ds, tmp_path / "b", log=lambda m: None)
    enc = CovariateEncoding.from_dict(bundle.meta["encoding"])
    assert enc.feature_names == ["rain", "soil=1", "soil=2", "soil=3", "temp"]
    W = np.array([[0, 0], [0.5, -0.5], [0, 0], [-0.5, 0.5], [-0.4, 0.4]])
    b = np.array([6.0, -6.0])
    return bundle, linear_model(enc, bundle.label_names, W, b)


def test_response_curves_follow_the_weights(setup):
    bundle, model = setup
    X = np.asarray(bundle.features("train"))[:50]
    rows = response_curves(model, X, points=7)
    def curve(sp, c):
        return np.array([r["probability"] for r in rows if r["species"] == sp and r["covariate"] == c])

    a, b = model.label_names
    assert np.all(np.diff(curve(a, "temp")) < 0) and np.all(np.diff(curve(b, "temp")) > 0)
    assert np.ptp(curve(a, "rain")) < 1e-6  # ignored by the model: flat
    soil = curve(a, "soil")
    assert len(soil) == 3 and soil[0] > soil[1] > soil[2]  # levels 1, 2, 3: weights +0.5, 0, -0.5
    # the value at a point is the mean over the rows of the prediction with the covariate set
    t = [r["value"] for r in rows if r["covariate"] == "temp" and r["species"] == a][3]
    Xs = X.copy()
    Xs[:, 4] = t
    assert curve(a, "temp")[3] == pytest.approx(model.predict_proba(Xs)[:, 0].mean())


def test_permutation_importance(setup):
    bundle, model = setup
    X = np.asarray(bundle.features("val"))
    Z = np.asarray(bundle.observations("val"))
    pos = Z == 1
    neg = np.repeat((Z == 0).all(1)[:, None], 2, axis=1)
    rows = permutation_importance(model, X, pos, neg, repeats=3, seed=0)
    drop = {(r["covariate"], r["species"]): r["auc_drop"] for r in rows}
    assert drop[("rain", "Aus alpha")] == 0 and drop[("rain", "Bus beta")] == 0  # unused: shuffling changes nothing
    assert drop[("temp", "Aus alpha")] > 0.1 and drop[("temp", "Bus beta")] > 0.1
    again = permutation_importance(model, X, pos, neg, repeats=3, seed=0)
    assert again == rows  # seeded


def test_explain_writes_tables_and_figures(setup, tmp_path):
    bundle, model = setup
    written = explain(model, bundle, tmp_path / "ex", points=5, repeats=2, species=["Bus beta"])
    names = sorted(p.split("/")[-1] for p in written)
    assert names == ["importance.csv", "importance.png", "response.csv", "response_Bus_beta.png"]
    imp = list(csv.DictReader(open(tmp_path / "ex" / "importance.csv")))
    assert {r["covariate"] for r in imp} == {"rain", "soil", "temp"} and imp[0]["contrast"] == "background"
    with pytest.raises(ConfigError, match="--species: 'Cus' is not a species"):
        explain(model, bundle, tmp_path / "ex", species=["Cus"])
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="refusing to write into"):
        explain(model, bundle, tmp_path / "mine", points=3, repeats=1)
    model.input = {"kind": "features"}
    with pytest.raises(ConfigError, match="no covariate encoding"):
        explain(model, bundle, tmp_path / "ex2")


# ---------------------------------- the defining property: a covariate permuted as a whole
# (issue 44) a categorical covariate's one-hot columns move together, with one permutation of
# the rows, so every permuted row is still one-hot with the level of some other row, and the
# other covariates' columns are untouched: checked on every matrix the model is asked to
# score, not through a seeded number.
GROUPS = [("rain", [0]), ("soil", [1, 2, 3]), ("temp", [4])]


class _Encoding:
    def groups(self):
        return list(GROUPS)


class _RecordingModel:
    """Scores ``X @ w`` and keeps every matrix it is given."""

    label_names = ["a", "b"]
    encoding = _Encoding()

    def __init__(self):
        self.seen: list[np.ndarray] = []

    def predict_proba(self, X):
        X = np.asarray(X, dtype=np.float64)
        self.seen.append(X.copy())
        logit = X @ np.array([[0.3, -0.2], [1.0, -1.0], [0.0, 0.5], [-1.0, 1.0], [0.7, 0.1]])
        return 1 / (1 + np.exp(-logit))


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    soil = np.eye(3)[rng.integers(0, 3, n)]
    X = np.c_[rng.normal(size=n), soil, rng.normal(size=n)]
    pos = np.c_[X[:, 1] > 0, X[:, 3] > 0]
    return X, pos, ~pos


@pytest.mark.parametrize("seed", [0, 1])
def test_a_categorical_covariate_is_permuted_as_one_one_hot_block(seed):
    X, pos, neg = _data(seed=seed)
    model = _RecordingModel()
    rows = permutation_importance(model, X, pos, neg, repeats=3, seed=seed)
    assert len(rows) == len(GROUPS) * 2
    base, *permuted = model.seen
    assert np.array_equal(base, X)
    assert len(permuted) == 3 * len(GROUPS)
    moved = {c: 0 for c, _ in GROUPS}
    for i, Xp in enumerate(permuted):
        c, cols = GROUPS[i // 3]
        others = [j for j in range(X.shape[1]) if j not in cols]
        assert np.array_equal(Xp[:, others], X[:, others]), c  # only the covariate's own columns move
        block, orig = Xp[:, cols], X[:, cols]
        if len(cols) > 1:
            assert set(block.sum(1).tolist()) == {1.0}, "a permuted row is no longer one-hot"
            assert np.array_equal(np.sort(block.argmax(1)), np.sort(orig.argmax(1)))  # each level kept as often
        else:
            assert np.array_equal(np.sort(block[:, 0]), np.sort(orig[:, 0]))  # a permutation of the column
        moved[c] += int((block != orig).any())
    assert all(v > 0 for v in moved.values())  # every covariate is really permuted


# ----------------------------------------------- mutation survivors (issue 44): explain_data pinned
class _FakeBundle:
    """What explain_data reads of a bundle: features, observations, labels, masks, sizes."""

    def __init__(self, Z_train, Z_val=None, Y_val=None, M_val=None, n_val=3, path="b"):
        import numpy as np

        from spmlkit.sparse_labels import SparseLabels

        self.path, self.n_val = path, n_val
        self.X = {"train": np.arange(len(Z_train) * 2, dtype=float).reshape(-1, 2),
                  "val": -np.arange(n_val * 2, dtype=float).reshape(-1, 2)}
        self.Z = {"train": SparseLabels.from_dense(np.asarray(Z_train, np.int8)),
                  "val": None if Z_val is None else SparseLabels.from_dense(np.asarray(Z_val, np.int8))}
        self.Y, self.M = Y_val, M_val

    def features(self, split):
        return self.X[split]

    def observations(self, split):
        return self.Z[split]

    def size(self, split):
        return len(self.X["train"]) if split == "train" else self.n_val

    def labels(self, split):
        return self.Y

    def label_mask(self, split):
        return self.M


def test_explain_data_takes_background_rows_and_the_contrast_of_the_split():
    import numpy as np

    from spmlkit.errors import ConfigError
    from spmlkit.practitioner.explain import explain_data

    Z = [[1, 0], [0, 0], [0, 1], [0, 0], [0, 0]]  # rows 1, 3 and 4: background (nothing observed)
    Zv = [[1, 0], [0, 0], [0, 1]]
    d = explain_data(_FakeBundle(Z, Z_val=Zv))
    assert d.reference.tolist() == [[2.0, 3.0], [6.0, 7.0], [8.0, 9.0]] and d.split == "val"
    assert d.held_out.tolist() == (-np.arange(6.0).reshape(3, 2)).tolist() and d.contrast == "background"
    assert d.pos.tolist() == [[True, False], [False, False], [False, True]]
    assert d.neg.tolist() == [[False, False], [True, True], [False, False]]
    sub = explain_data(_FakeBundle(Z, Z_val=Zv), sample=2, seed=4)
    pick = np.sort(np.random.default_rng(4).choice(np.array([1, 3, 4]), 2, replace=False))
    assert sub.reference.tolist() == (np.arange(10.0).reshape(5, 2)[pick]).tolist()
    every = explain_data(_FakeBundle([[1, 0], [0, 1]], Z_val=Zv))  # no background row: every training row
    assert every.reference.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    Y = np.array([[1, 0], [0, 1], [0, 0]])
    M = np.array([[1, 1], [0, 1], [1, 0]])
    s = explain_data(_FakeBundle(Z, Y_val=Y, M_val=M), split="val")
    assert s.contrast == "surveyed absences" and s.pos.tolist() == [[True, False], [False, True], [False, False]]
    assert s.neg.tolist() == [[False, True], [False, False], [True, False]]
    u = explain_data(_FakeBundle(Z, Y_val=Y))
    assert u.neg.tolist() == (Y == 0).tolist() and u.pos.tolist() == (Y == 1).tolist()
    with pytest.raises(ConfigError) as e:
        explain_data(_FakeBundle(Z, Z_val=Zv, n_val=0, path="bund"), split="test")
    assert str(e.value) == ("bund: the 'test' split is empty; permutation importance needs held-out rows "
                            "(--split val or test)")
