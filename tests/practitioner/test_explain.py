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
