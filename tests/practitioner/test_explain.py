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


# ------------------------------------- mutation survivors (issue 44): the figures and explain() pinned
class _Enc:
    """A covariate encoding as the figures read it: covariates in order, levels of the categorical ones."""

    def __init__(self, covariates, levels):
        self.covariates, self.levels = list(covariates), dict(levels)


def _keep_figures(monkeypatch):
    """The figures the module saves (still open to read), each with the path it was saved to."""
    from spmlkit.practitioner import explain as ex

    kept = []
    real = ex._savefig

    def savefig(fig, path):
        kept.append((fig, path))
        real(fig, path)

    monkeypatch.setattr(ex, "_savefig", savefig)
    return kept


def _claimed(tmp_path):
    from spmlkit import ownership

    ownership.register_kind("explain", "an explanation folder", layout=("*.csv", "*.png"))
    return ownership.claim(tmp_path / "ex", "explain")


def _png(path):
    from PIL import Image

    with Image.open(path) as im:
        return im.size, dict(im.info)


def _response_rows():
    rows = []
    for sp, sign in (("A", 1.0), ("B", -1.0)):
        for c, values in (("temp", [0.0, 5.0, 10.0]), ("soil", [1.0, 2.0, 3.0]), ("land", [1.0, 2, 3, 4, 5, 6]),
                          ("geo", [1.0, 2, 3, 4, 5, 6, 7]), ("rain", [2.0, 4.0])):
            for i, v in enumerate(values):
                rows.append({"species": sp, "covariate": c, "value": v,
                             "probability": 0.5 + sign * 0.05 * i})
    return rows


def test_response_figure_draws_one_panel_per_covariate_of_the_species(tmp_path, monkeypatch):
    from matplotlib.colors import to_hex

    from spmlkit.practitioner.explain import response_figure

    kept = _keep_figures(monkeypatch)
    enc = _Enc(["temp", "soil", "land", "geo", "rain"], {"soil": [1, 2, 3], "land": list(range(1, 7)),
                                                         "geo": list(range(1, 8))})
    info = {"temp": {"name": "annual temperature", "units": "°C"}, "soil": {"classes": {1.0: "sand", 3.0: "clay"}}}
    out = _claimed(tmp_path)
    path = out / "r.png"
    assert response_figure(_response_rows(), "B", enc, path, info) == path
    ((fig, saved),) = kept
    assert saved == path
    assert tuple(fig.get_size_inches()) == pytest.approx((12.0, 4.8))  # 4 columns of 3.0, 2 rows of 2.4
    axes = fig.axes
    assert len(axes) == 8
    assert [a.axison for a in axes] == [True] * 5 + [False] * 3  # the unused panels hidden
    assert [a.get_title() for a in axes[:5]] == ["annual temperature (temp), °C", "soil", "land", "geo", "rain"]
    assert all(a.title.get_fontsize() == 9 for a in axes[:5])
    assert all(a.get_ylim() == (0, 1) for a in axes[:5])
    assert [a.get_ylabel() for a in axes] == ["mean probability", "", "", "", "mean probability", "", "", ""]
    assert all(axes[0].get_shared_y_axes().joined(axes[0], a) for a in axes[1:5])
    assert fig._suptitle.get_text() == "B: response curves (partial dependence)"
    assert fig._suptitle.get_fontstyle() == "italic"
    # continuous: a line of B's partial dependence; categorical: a bar per level
    temp, soil, land, geo, rain = axes[:5]
    (line,) = temp.lines
    assert line.get_xdata().tolist() == [0.0, 5.0, 10.0] and line.get_ydata().tolist() == pytest.approx([0.5, 0.45, 0.4])
    assert to_hex(line.get_color()) == "#4c72b0"
    assert rain.lines[0].get_xdata().tolist() == [2.0, 4.0] and not temp.patches
    assert [p.get_height() for p in soil.patches] == pytest.approx([0.5, 0.45, 0.4])
    assert {to_hex(p.get_facecolor()) for p in soil.patches} == {"#4c72b0"}
    assert [t.get_text() for t in soil.get_xticklabels()] == ["1 sand", "2", "3 clay"]
    assert [t.get_text() for t in land.get_xticklabels()] == ["1", "2", "3", "4", "5", "6"]
    rotation = {a.get_title(): a.get_xticklabels()[0].get_rotation() for a in (soil, land, geo)}
    assert rotation == {"soil": 90, "land": 0, "geo": 90}  # named classes or more than 6 levels: turned
    assert all(t.get_fontsize() == 7 for a in (soil, land, geo) for t in a.get_xticklabels())
    assert all(t.get_rotation() == 0 and t.get_fontsize() != 7 for t in soil.get_yticklabels())
    assert not {"labelsize", "rotation"} & set(soil.yaxis.get_tick_params())  # the x axis' labels only
    import matplotlib.pyplot as plt

    assert fig.number not in plt.get_fignums()  # closed once saved
    size, meta = _png(path)
    assert size == (1320, 528) and meta.get("Software") == "spmlkit explain"  # 110 dpi
    # without the sidecar: the codes; one covariate: one panel
    kept.clear()
    response_figure(_response_rows(), "A", _Enc(["temp"], {}), out / "one.png")
    ((fig, _),) = kept
    assert [a.get_title() for a in fig.axes] == ["temp"] and tuple(fig.get_size_inches()) == pytest.approx((3.0, 2.4))
    assert fig.axes[0].lines[0].get_ydata().tolist() == pytest.approx([0.5, 0.55, 0.6])


def _importance_rows():
    rows = []
    for sp, auc, drops in (("A", 0.8123, {"rain": 0.0, "soil": 0.2, "temp": 0.1}),
                           ("B", 0.7, {"rain": 0.05, "soil": -0.01, "temp": 0.3})):
        for c, d in drops.items():
            rows.append({"covariate": c, "species": sp, "auc": auc, "auc_drop": d, "auc_drop_sd": d / 10 + 0.01,
                         "n_presences": 3, "n_contrast": 5})
    return rows


def test_importance_figure_draws_the_drops_largest_on_top(tmp_path, monkeypatch):
    from matplotlib.colors import to_hex

    from spmlkit.practitioner.explain import importance_figure

    kept = _keep_figures(monkeypatch)
    info = {"temp": {"name": "annual temperature"}}
    path = _claimed(tmp_path) / "i.png"
    assert importance_figure(_importance_rows(), ["A", "B", "C"], path, "test", info) == path
    ((fig, saved),) = kept
    assert saved == path
    assert tuple(fig.get_size_inches()) == pytest.approx((12.6, 0.35 * 3 + 1.6))
    a, b, c = fig.axes
    assert len({round(ax.get_position().y0, 6) for ax in fig.axes}) == 1  # one row of panels
    assert a.get_title() == "A\n(AUC 0.812 on test)" and b.get_title() == "B\n(AUC 0.700 on test)"
    assert c.get_title() == "C\n(AUC nan on test)" and not c.patches  # a species without rows
    assert all(ax.title.get_fontstyle() == "italic" and ax.title.get_fontsize() == 9 for ax in (a, b, c))
    assert [t.get_text() for t in a.get_yticklabels()] == ["rain", "annual temperature (temp)", "soil"]
    assert [p.get_width() for p in a.patches] == pytest.approx([0.0, 0.1, 0.2])
    assert [t.get_text() for t in b.get_yticklabels()] == ["soil", "rain", "annual temperature (temp)"]
    assert {to_hex(p.get_facecolor()) for p in a.patches + b.patches} == {"#dd8452"}
    (bars,) = [ct for ct in a.containers if type(ct).__name__ == "BarContainer"]
    err = bars.errorbar.lines[2][0].get_segments()  # the error bars: drop ± sd
    assert np.allclose([s[:, 0] for s in err], [(-0.01, 0.01), (0.08, 0.12), (0.17, 0.23)])
    assert all(ax.get_xlabel() == "AUC drop when shuffled" for ax in (a, b, c))
    (zero,) = [ln for ln in a.lines if ln.get_linestyle() == "-" and tuple(ln.get_xdata()) == (0, 0)]
    assert to_hex(zero.get_color()) == "#000000" and zero.get_linewidth() == 0.6
    kept.clear()  # one covariate: one bar a panel, the species' AUC read from it
    importance_figure([r for r in _importance_rows() if r["covariate"] == "temp"], ["B"], path.parent / "one.png",
                      "val")
    ((one, _),) = kept
    assert one.axes[0].get_title() == "B\n(AUC 0.700 on val)" and len(one.axes[0].patches) == 1
    size, meta = _png(path)
    assert size[0] == 1386 and abs(size[1] - (0.35 * 3 + 1.6) * 110) < 1 and meta.get("Software") == "spmlkit explain"


class _FullEncoding:
    covariates = ["rain", "soil", "temp"]
    levels = {"soil": [1.0, 2.0, 3.0]}

    def groups(self):
        return list(GROUPS)


class _LinearModel(_RecordingModel):
    """A model explain() accepts: a covariate encoding, ``n_labels`` species, a path."""

    encoding = _FullEncoding()

    def __init__(self, n_labels=2, path=None):
        super().__init__()
        self.label_names = ["Aus a", "Bus b", *[f"S{i}" for i in range(n_labels - 2)]]
        self.path = path
        self.W = np.random.default_rng(3).normal(size=(5, n_labels))

    def predict_proba(self, X):
        X = np.asarray(X, dtype=np.float64)
        self.seen.append(X.copy())
        return 1 / (1 + np.exp(-(X @ self.W)))


def _explain_bundle(tmp_path, n_background=1001, n_labels=2):
    """Training rows: 4 presences then ``n_background`` background rows; val and test differ."""
    from spmlkit.sparse_labels import SparseLabels

    rng = np.random.default_rng(0)

    def rows(n):
        soil = np.eye(3)[rng.integers(0, 3, n)]
        return np.c_[rng.normal(size=n), soil, rng.normal(size=n)].astype(np.float32)

    Zt = np.zeros((4 + n_background, n_labels), np.int8)
    Zt[:4, 0] = 1
    b = _FakeBundle(Zt, Z_val=np.zeros((1, n_labels)), path=tmp_path / "bundle")
    b.path.mkdir()
    Zv = np.zeros((30, n_labels), np.int8)
    Zv[:8, 0], Zv[8:14, 1] = 1, 1
    Zs = np.zeros((20, n_labels), np.int8)
    Zs[:3, 0], Zs[3:5, 1] = 1, 1
    b.X = {"train": rows(len(Zt)), "val": rows(30), "test": rows(20)}
    b.Z = {k: SparseLabels.from_dense(v) for k, v in (("train", Zt), ("val", Zv), ("test", Zs))}
    b.size = lambda split: len(b.X[split])
    b.label_names = ["Aus a", "Bus b", *[f"S{i}" for i in range(n_labels - 2)]]
    return b


def _csv_rows(path):
    return list(csv.DictReader(open(path, encoding="utf-8")))


def _fmt(v):
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def test_explain_with_its_defaults_writes_what_the_parts_compute(tmp_path):
    from spmlkit.practitioner.explain import explain_data

    bundle = _explain_bundle(tmp_path)
    model = _LinearModel(path=tmp_path / "model")
    written = explain(model, bundle, tmp_path / "ex")
    out = tmp_path / "ex"
    assert written == [str(out / n) for n in ("response.csv", "importance.csv", "response_Aus_a.png",
                                              "response_Bus_b.png", "importance.png")]
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(p.split("/")[-1]
                                                                                          for p in written)
    # the defaults: 1000 reference rows of the training background, 50 points, 5 seeded shuffles of val
    assert model.seen[0].shape == (50 * 1000, 5)
    data = explain_data(bundle, split="val", sample=1000, seed=0)
    assert len(data.reference) == 1000
    resp = response_curves(_LinearModel(), data.reference, points=50)
    assert [{k: _fmt(v) for k, v in r.items()} for r in resp] == _csv_rows(out / "response.csv")
    imp = permutation_importance(_LinearModel(), data.held_out, data.pos, data.neg, repeats=5, seed=0)
    rows = _csv_rows(out / "importance.csv")
    assert [{k: _fmt(v) for k, v in r.items()} | {"split": "val", "contrast": "background"} for r in imp] == rows
    assert list(rows[0]) == ["covariate", "species", "auc", "auc_drop", "auc_drop_sd", "n_presences", "n_contrast",
                             "split", "contrast"]
    assert rows[0]["n_presences"] == "8" and rows[1]["n_presences"] == "6" and rows[0]["n_contrast"] == "16"
    raw = (out / "response.csv").read_bytes()
    assert b"\r" not in raw and raw.endswith(b"\n") and raw.count(b"\n") == len(resp) + 1
    # another split: its rows are the held-out ones
    model = _LinearModel(path=tmp_path / "model")
    explain(model, bundle, tmp_path / "ex_test", split="test", points=3, sample=10, repeats=1, seed=2)
    rows = _csv_rows(tmp_path / "ex_test" / "importance.csv")
    assert {r["split"] for r in rows} == {"test"} and rows[0]["n_presences"] == "3" and rows[0]["n_contrast"] == "15"
    assert {r["auc_drop_sd"] for r in rows} == {"0"}
    d2 = explain_data(bundle, split="test", sample=10, seed=2)
    assert model.seen[0].shape == (3 * 10, 5) and np.array_equal(model.seen[0][:10, 1:], d2.reference[:, 1:])


def test_explain_refuses_in_one_line(tmp_path):
    bundle = _explain_bundle(tmp_path, n_background=5)
    model = _LinearModel(path=tmp_path / "model")
    bundle.label_names = ["Aus a", "Cus c"]
    with pytest.raises(ConfigError) as e:
        explain(model, bundle, tmp_path / "ex")
    assert str(e.value) == (f"{bundle.path}: its species are not the model's; give the bundle the model was "
                            "trained on")
    (tmp_path / "m").mkdir()
    many = _explain_bundle(tmp_path / "m", n_background=5, n_labels=10)
    with pytest.raises(ConfigError) as e:
        explain(_LinearModel(n_labels=10), many, tmp_path / "ex", species=["Aus a", " Dus "])
    assert str(e.value) == ("--species: 'Dus' is not a species of the model (Aus a, Bus b, S0, S1, S2, S3, S4, S5)")
    model.encoding = None
    bundle.label_names = list(model.label_names)
    with pytest.raises(ConfigError) as e:
        explain(model, bundle, tmp_path / "ex")
    assert str(e.value) == ("this model records no covariate encoding (it was trained on ready-made features, not on "
                            "named covariates): nothing to explain per covariate")
    with pytest.raises(ConfigError) as e:
        response_curves(model, np.zeros((2, 5)))
    assert str(e.value) == ("this model records no covariate encoding (it was not trained on named covariates): "
                            "response curves need to know which columns form each covariate")
    X, pos, neg = _data()
    with pytest.raises(ConfigError) as e:
        permutation_importance(model, X, pos, neg)
    assert str(e.value) == ("this model records no covariate encoding: permutation importance needs to know which "
                            "columns form each covariate")
    with pytest.raises(ConfigError) as e:
        permutation_importance(_LinearModel(), X, pos, np.zeros_like(neg))
    assert str(e.value) == ("the held-out rows have nothing to contrast the presences with (no background row, no "
                            "surveyed absence)")
    assert not (tmp_path / "ex").exists()


def test_explain_writes_only_a_folder_of_its_own_outside_its_inputs(tmp_path):
    bundle = _explain_bundle(tmp_path, n_background=5)
    (tmp_path / "model").mkdir()
    model = _LinearModel(path=tmp_path / "model")
    kw = dict(points=3, repeats=1)
    with pytest.raises(ConfigError, match="lies inside"):
        explain(model, bundle, bundle.path / "ex", **kw)
    with pytest.raises(ConfigError, match="lies inside"):
        explain(model, bundle, tmp_path / "model" / "ex", **kw)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="that are not an explanation folder written by spmlkit"):
        explain(model, bundle, tmp_path / "mine", **kw)
    explain(model, bundle, tmp_path / "ex", **kw)
    first = (tmp_path / "ex" / "importance.csv").read_text()
    explain(model, bundle, tmp_path / "ex", seed=5, **kw)  # its own folder: written again
    assert (tmp_path / "ex" / "importance.csv").read_text() != first


def test_explain_names_the_covariates_from_the_sidecar(tmp_path, monkeypatch):
    import json

    kept = _keep_figures(monkeypatch)
    bundle = _explain_bundle(tmp_path, n_background=5)
    side = tmp_path / "cov.json"
    side.write_text(json.dumps({"temp": {"name": "annual temperature"}, "soil": {"classes": {"2": "loam"}}}))
    explain(_LinearModel(), bundle, tmp_path / "ex", split="test", points=3, repeats=1, species=["Bus b"],
            covariate_info=side)
    (resp, _), (imp, _) = kept
    assert [a.get_title() for a in resp.axes] == ["rain", "soil", "annual temperature (temp)"]
    assert [t.get_text() for t in resp.axes[1].get_xticklabels()] == ["1", "2 loam", "3"]
    (ax,) = imp.axes
    assert ax.get_title().startswith("Bus b\n(AUC ") and ax.get_title().endswith(" on test)")
    assert "annual temperature (temp)" in [t.get_text() for t in ax.get_yticklabels()]


def test_response_curves_span_the_1st_to_99th_percentile(tmp_path):
    rng = np.random.default_rng(1)
    X = np.c_[np.full(200, 2.5), np.eye(3)[rng.integers(0, 3, 200)], rng.normal(size=200) ** 3].astype(np.float32)
    model = _LinearModel()
    rows = response_curves(model, X)  # the default: 50 points
    temp = [r["value"] for r in rows if r["covariate"] == "temp" and r["species"] == "Aus a"]
    lo, hi = np.percentile(X[:, 4], [1, 99])
    assert temp == pytest.approx(list(np.linspace(lo, hi, 50)))
    rain = [r for r in rows if r["covariate"] == "rain"]  # one value everywhere: one point
    assert [r["value"] for r in rain] == [2.5, 2.5]
    assert len(rows) == 2 * (50 + 1 + 3)
    P = np.array([r["probability"] for r in rows if r["covariate"] == "soil"]).reshape(3, 2)
    for k in range(3):
        Xs = X.copy()
        Xs[:, 1:4] = np.eye(3)[k]
        assert P[k] == pytest.approx(model.predict_proba(Xs).mean(0))


def test_permutation_importance_spread_and_a_species_without_presences():
    import warnings

    X, pos, neg = _data(n=40)
    pos[:, 1] = False  # species b: no presence here
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = permutation_importance(_LinearModel(), X, pos, neg, repeats=1, seed=3)
        two = permutation_importance(_LinearModel(), X, pos, neg, repeats=2, seed=3)
    assert {r["auc_drop_sd"] for r in one} == {0.0}
    b = [r for r in two if r["species"] == "Bus b"]
    assert all(np.isnan(r["auc"]) and np.isnan(r["auc_drop"]) and r["n_presences"] == 0 for r in b)
    model = _LinearModel()
    base = _aucs_of(model, X, pos, neg)
    a = [r for r in two if r["species"] == "Aus a"]
    drops = []
    rng = np.random.default_rng(3)
    for c, cols in GROUPS:
        d = []
        for _ in range(2):
            Xp = X.copy()
            Xp[:, cols] = X[rng.permutation(len(X))][:, cols]
            d.append(base - _aucs_of(model, Xp, pos, neg))
        drops.append(d)
    assert [r["auc_drop_sd"] for r in a] == pytest.approx([np.std(d, ddof=1) for d in drops])
    assert [r["auc_drop"] for r in a] == pytest.approx([np.mean(d) for d in drops])
    assert set(a[0]) == {"covariate", "species", "auc", "auc_drop", "auc_drop_sd", "n_presences", "n_contrast"}
    assert a[0]["n_presences"] == int(pos[:, 0].sum()) and a[0]["n_contrast"] == int(neg[:, 0].sum())
    defaults = permutation_importance(_LinearModel(), X, pos, neg)
    assert repr(defaults) == repr(permutation_importance(_LinearModel(), X, pos, neg, repeats=5, seed=0))  # NaN
    m = _LinearModel()
    permutation_importance(m, X, pos, neg)
    assert len(m.seen) == 1 + 5 * len(GROUPS)


def _aucs_of(model, X, pos, neg):
    from sklearn.metrics import roc_auc_score

    p = model.predict_proba(X)[:, 0]
    return roc_auc_score(np.r_[np.ones(pos[:, 0].sum()), np.zeros(neg[:, 0].sum())],
                         np.r_[p[pos[:, 0]], p[neg[:, 0]]])


def test_explain_data_flags_are_boolean_and_the_mask_is_the_splits():
    from spmlkit.practitioner.explain import explain_data

    Z = [[1, 0]] + [[0, 0]] * 1001
    b = _FakeBundle(Z, Y_val=np.array([[1, 0], [0, 1], [0, 0]], np.uint8), M_val=np.array([[1, 1], [0, 1], [1, 0]]))
    b.label_mask = lambda split: b.M if split == "val" else None
    d = explain_data(b)
    assert d.pos.dtype == bool and d.neg.dtype == bool
    assert d.neg.tolist() == [[False, True], [False, False], [True, False]]
    assert len(d.reference) == 1000  # the default sample, seeded with 0
    pick = np.sort(np.random.default_rng(0).choice(np.arange(1, 1002), 1000, replace=False))
    assert np.array_equal(d.reference, b.X["train"][pick])
    b.M = None
    u = explain_data(b)
    assert u.pos.dtype == bool and u.neg.dtype == bool and u.neg.tolist() == [[False, True], [True, False],
                                                                              [True, True]]


def test_a_table_of_one_row_is_written_with_its_own_header(tmp_path):
    from spmlkit.practitioner.explain import _write_csv

    out = _claimed(tmp_path)
    _write_csv(out / "one.csv", [{"covariate": "temp", "auc": 1 / 3, "n": 2}])
    assert (out / "one.csv").read_bytes() == b"covariate,auc,n\ntemp,0.333333,2\n"


def test_explain_declares_its_folder_kind_and_adopts_an_older_explanation(tmp_path, monkeypatch):
    """explain() declares the kind itself (no other module does): the refusal names it, and
    a folder an older spmlkit wrote (its marker without a file list) is taken over, its
    tables and figures replaced."""
    import json

    from spmlkit.ownership import rule

    monkeypatch.setattr(rule, "_KINDS", {k: v for k, v in rule._KINDS.items() if k != "explain"})
    bundle = _explain_bundle(tmp_path, n_background=5)
    model = _LinearModel()
    del model.path  # a model object without a folder of its own
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="that are not an explanation folder written by spmlkit"):
        explain(model, bundle, tmp_path / "mine", points=3, repeats=1)
    old = tmp_path / "old"
    old.mkdir()
    (old / ".spml-output.json").write_text(json.dumps({"written_by": "spmlkit", "kind": "explain"}))
    for name in ("response.csv", "importance.csv", "response_Aus_a.png", "importance.png"):
        (old / name).write_text("an older explanation")
    explain(model, bundle, old, points=3, repeats=1, species=["Aus a"])
    assert (old / "response.csv").read_text().startswith("species,covariate,value,probability\n")
    assert (old / "importance.png").read_bytes().startswith(b"\x89PNG")


def test_the_covariate_sidecar_is_checked_against_the_models_covariates(tmp_path):
    import json

    from spmlkit.errors import DataFormatError

    bundle = _explain_bundle(tmp_path, n_background=5)
    side = tmp_path / "cov.json"
    side.write_text(json.dumps({"bogus": {"name": "not a covariate of the model"}}))
    with pytest.raises(DataFormatError, match="covariate 'bogus' is not one of the model's"):
        explain(_LinearModel(), bundle, tmp_path / "ex", points=3, repeats=1, covariate_info=side)
