"""MESS and binary maps beside the suitability map (spmlkit.practitioner.sdm_maps,
``spml predict --rasters --mess --binary``): a MESS map with a known answer, the binary
map equal to suitability >= the stored threshold, and the refusals."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers.cli import one_line_error, run_cli

pytest.importorskip("rasterio")


def test_mess_map_of_a_known_case(tmp_path):
    """Reference 0 and 10 (Elith et al. 2010's formula by hand): 15 is 50% of the range
    outside (-50), 5 has half the reference below it (f = 50%: 100), 0 is the edge (f = 0:
    0), 12 is outside by 20% (-20); nodata stays nodata."""
    import rasterio

    from spmlkit import ownership
    from spmlkit.data.rasters import open_stack
    from spmlkit.practitioner.maps import _map_profile
    from spmlkit.practitioner.sdm_maps import write_mess
    from tests.helpers.rasters import write_raster

    a = np.array([[15, 5, 0], [12, -9999, 10]], dtype=np.float32)
    write_raster(tmp_path / "t.tif", a, nodata=-9999)
    stack = open_stack([tmp_path / "t.tif"])
    out = tmp_path / "mess.tif"
    ownership.output_file(out, option="-o", what="map")
    write_mess(stack, np.array([[0.0], [10.0]]), [0], out, _map_profile(stack, np.float32(-9999)), np.float32(-9999),
               window_rows=1)
    with rasterio.open(out) as ds:
        m = ds.read(1, masked=True)
    np.testing.assert_allclose(m.data[~m.mask], [-50, 100, 0, -20, 100])  # 10: one of the two below it, f = 50%
    assert m.mask.tolist() == [[False, False, False], [False, True, False]]


@pytest.fixture
def po_run(tmp_path, capsys):
    from tests.helpers.rasters import located_records, make_stack, write_records

    env = make_stack(tmp_path / "env")
    rec = write_records(tmp_path / "r.csv", located_records(20))
    assert run_cli(capsys, "prepare", rec, "--rasters", env, "--background-points", "60", "-o", tmp_path / "b")[0] == 0
    code, _, err = run_cli(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 3, "--lr", "0.01",
                           "-o", tmp_path / "run")
    assert code == 0, err
    return tmp_path / "run", env


@pytest.mark.parametrize("rule, key", [("max-tss", "max_tss"), ("p10", "p10_training_presence")])
def test_binary_map_is_suitability_at_or_above_the_stored_threshold(po_run, tmp_path, capsys, rule, key):
    import rasterio

    run, env = po_run
    code, out, err = run_cli(capsys, "predict", run, "--rasters", env, "-o", tmp_path / "m.tif", "--binary", rule)
    assert code == 0, err and str(tmp_path / "m_binary.tif") in out
    th = json.loads((run / "sdm_metrics.json").read_text())["thresholds"]
    with rasterio.open(tmp_path / "m.tif") as s, rasterio.open(tmp_path / "m_binary.tif") as b:
        suit, binary = s.read(masked=True), b.read()
        names = list(b.descriptions)
    assert names == list(th)
    for k, name in enumerate(names):
        t = th[name][key]["threshold"]
        want = np.where(suit[k].data >= np.float32(t), 1, 0)  # (float32: the map's precision)
        want[np.ma.getmaskarray(suit[k])] = 255
        np.testing.assert_array_equal(binary[k], want)
        assert 0 < (binary[k] == 1).sum() < (binary[k] != 255).sum()  # a threshold that cuts


def test_mess_map_is_the_mess_of_each_cell_against_the_training_rows(po_run, tmp_path, capsys):
    """The whole chain: the reference is the bundle's training + validation rows (the run
    is refitted), continuous covariates only; each valid cell's value is sdm_metrics.mess."""
    import rasterio

    from spmlkit.data import Bundle
    from spmlkit.practitioner.sdm_metrics import mess
    from tests.helpers.rasters import layers

    run, env = po_run
    code, _, err = run_cli(capsys, "predict", run, "--rasters", env, "-o", tmp_path / "m.tif", "--mess")
    assert code == 0, err
    with rasterio.open(tmp_path / "m_mess.tif") as ds:
        m = ds.read(1, masked=True)
    b = Bundle(run.parent / "b")
    names = b.meta["feature_names"]
    X = np.concatenate([np.asarray(b.features(s)) for s in ("train", "val")])
    ref = X[:, [names.index("temp"), names.index("rain")]]
    L = layers()
    cells = np.column_stack([L["temp"][0].ravel(), L["rain"][0].ravel()]).astype(np.float64)
    valid = ~np.ma.getmaskarray(m).ravel()
    np.testing.assert_allclose(m.data.ravel()[valid], mess(ref, cells[valid]), rtol=1e-5, atol=1e-4)


def test_binary_without_stored_thresholds_and_mess_without_rasters_are_one_line(po_run, tmp_path, capsys):
    run, env = po_run
    (run / "sdm_metrics.json").unlink()
    code, _, err = run_cli(capsys, "predict", run, "--rasters", env, "-o", tmp_path / "m.tif", "--binary", "p10")
    assert code == 2 and "no thresholds stored" in one_line_error(err)
    assert not list(tmp_path.glob("m*.tif"))
    code, _, err = run_cli(capsys, "predict", run, run.parent / "b", "-o", tmp_path / "p.csv", "--mess")
    assert code == 2 and "needs --rasters" in one_line_error(err) and not (tmp_path / "p.csv").exists()
