"""Species maps (issue 36): probabilities written on the input's grid (CRS, transform,
nodata), window by window with the same result for any window, an unseen categorical
level an error (or nodata), nothing half-written, outputs of the user never replaced."""
from __future__ import annotations

import numpy as np
import pytest

rasterio = pytest.importorskip("rasterio")

from spmlkit.data.encoding import CovariateEncoding  # noqa: E402
from spmlkit.data.rasters import extract, open_stack, same_crs  # noqa: E402
from spmlkit.errors import ConfigError, DataFormatError  # noqa: E402
from spmlkit.practitioner.maps import predict_rasters  # noqa: E402
from tests.helpers.rasters import HEIGHT, SEA, WIDTH, layers, linear_model, make_stack, write_raster  # noqa: E402

ENC = CovariateEncoding(("temp", "rain", "soil"), {"soil": (1.0, 2.0, 3.0)})
W = np.array([[0.3, -0.3], [0.01, 0.0], [1.0, -1.0], [0.0, 0.0], [-1.0, 1.0]])  # temp, rain, soil=1..3


@pytest.fixture
def env(tmp_path):
    return make_stack(tmp_path / "env")


def expected(env):
    """Every cell's probabilities computed by hand: (L, H, W) with NaN on the sea."""
    stack = open_stack([env]).select(list(ENC.covariates))
    r, c = np.mgrid[:HEIGHT, :WIDTH]
    from tests.helpers.rasters import centre

    xy = np.array([centre(a, b) for a, b in zip(r.ravel(), c.ravel())])
    raw, status = extract(stack, xy)
    P = np.full((len(xy), 2), np.nan)
    ok = status == 0
    P[ok] = 1 / (1 + np.exp(-(ENC.transform(raw[ok]).astype(np.float64) @ W)))
    return P.T.reshape(2, HEIGHT, WIDTH)


def test_a_multiband_map_on_the_input_grid(env, tmp_path):
    model = linear_model(ENC, ["Aus alpha", "Bus beta"], W)
    res = predict_rasters(model, [env], tmp_path / "out" / "p.tif", window_rows=5)
    assert res["cells"] == HEIGHT * WIDTH - len(SEA)
    with rasterio.open(env / "temp.tif") as src, rasterio.open(tmp_path / "out" / "p.tif") as out:
        assert (out.width, out.height, out.count) == (src.width, src.height, 2)
        assert out.transform == src.transform and same_crs(out.crs, src.crs) and out.crs == src.crs
        assert out.nodata == src.nodata == -9999 and out.descriptions == ("Aus alpha", "Bus beta")
        got = out.read()
    want = expected(env)
    sea = np.isnan(want)
    assert np.array_equal(sea, got == -9999) and np.allclose(got[~sea], want[~sea], atol=1e-6)


def test_windows_and_per_species_files_give_the_same_numbers(env, tmp_path):
    model = linear_model(ENC, ["Aus alpha", "Bus beta"], W)
    predict_rasters(model, [env], tmp_path / "a.tif", window_rows=1)
    predict_rasters(model, [env], tmp_path / "b.tif", window_rows=HEIGHT)
    predict_rasters(model, [env], tmp_path / "per", per_species=True, window_rows=4)
    with rasterio.open(tmp_path / "a.tif") as a, rasterio.open(tmp_path / "b.tif") as b:
        A, B = a.read(), b.read()
    assert np.array_equal(A, B)
    for i, name in enumerate(["Aus_alpha", "Bus_beta"]):
        with rasterio.open(tmp_path / "per" / f"{name}.tif") as f:
            assert f.count == 1 and np.array_equal(f.read(1), A[i])


def test_png_maps_with_the_training_records(env, tmp_path):
    from PIL import Image

    model = linear_model(ENC, ["Aus alpha", "Bus beta"], W)
    res = predict_rasters(model, [env], tmp_path / "p.tif", maps="Bus beta")
    png = tmp_path / "p_Bus_beta.png"
    assert str(png) in res["written"] and Image.open(png).info["Software"].startswith("spmlkit")
    with pytest.raises(ConfigError, match="--maps: 'Cus' is not a species of the model"):
        predict_rasters(model, [env], tmp_path / "p.tif", maps="Cus")


def test_an_unseen_level_is_an_error_or_nodata_and_nothing_is_half_written(env, tmp_path):
    soil, nodata = layers()["soil"]
    soil = soil.copy()
    soil[HEIGHT - 1, WIDTH - 1] = 7  # in the last window: the first windows are written before it is met
    write_raster(env / "soil.tif", soil, nodata=nodata)
    model = linear_model(ENC, ["Aus alpha", "Bus beta"], W)
    with pytest.raises(DataFormatError, match=r"soil.tif: layer 'soil' has level 7 \(first at x 17.75, y 44.25; 1 "
                                              r"cell\(s\) .* never saw in training \(its levels: 1, 2, 3\)"):
        predict_rasters(model, [env], tmp_path / "p.tif", window_rows=2)
    assert list(tmp_path.glob("*p.tif*")) == []  # neither the map nor its temporary file
    res = predict_rasters(model, [env], tmp_path / "p.tif", unseen_levels="nodata")
    assert res["unseen"] == 1
    with rasterio.open(tmp_path / "p.tif") as out:
        assert out.read(1)[HEIGHT - 1, WIDTH - 1] == out.nodata


def test_bad_inputs(env, tmp_path):
    model = linear_model(ENC, ["Aus alpha", "Bus beta"], W)
    (env / "rain.tif").unlink()
    with pytest.raises(DataFormatError, match=r"no raster for covariate 'rain'; the rasters here are soil, temp"):
        predict_rasters(model, [env], tmp_path / "p.tif")
    mine = tmp_path / "mine.tif"
    mine.write_text("my own file")
    make_stack(tmp_path / "env2")
    with pytest.raises(ConfigError, match="refusing to replace .*mine.tif: it is not a map spmlkit wrote"):
        predict_rasters(model, [tmp_path / "env2"], mine)
    assert mine.read_text() == "my own file"
    with pytest.raises(ConfigError, match="is an input of this command"):
        predict_rasters(model, [tmp_path / "env2"], tmp_path / "env2" / "temp.tif", overwrite=True)
    with pytest.raises(ConfigError, match="must end in .tif"):
        predict_rasters(model, [tmp_path / "env2"], tmp_path / "p.png")
    model.input = {"kind": "features"}
    with pytest.raises(ConfigError, match="records no covariate encoding"):
        predict_rasters(model, [tmp_path / "env2"], tmp_path / "p.tif")


def test_the_valid_data_outline_is_drawn_where_data_meets_nodata_only():
    """The map's "coastline": a contour of the nodata mask, in the legend; none when every
    cell has data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from types import SimpleNamespace

    from spmlkit.practitioner.maps import _data_outline

    b = SimpleNamespace(left=0, right=4, bottom=0, top=3)
    a = np.ma.masked_array(np.ones((3, 4)), mask=[[1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    fig, ax = plt.subplots()
    assert _data_outline(ax, a, b) and "edge of the data" in ax.get_legend_handles_labels()[1][0]
    fig2, ax2 = plt.subplots()
    assert not _data_outline(ax2, np.ma.masked_array(np.ones((3, 4))), b) and not ax2.get_legend_handles_labels()[1]
    plt.close(fig)
    plt.close(fig2)
