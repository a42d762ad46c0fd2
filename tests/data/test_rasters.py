"""Covariate rasters (issue 36): the stack and its grid checks, the CRS check, covariates
at points (off the rasters, on nodata), seeded background within a mask or by a bias."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rasterio")

from spmlkit.data import rasters as R  # noqa: E402
from spmlkit.errors import ConfigError, DataFormatError  # noqa: E402
from tests.helpers.rasters import HEIGHT, SEA, WIDTH, centre, layers, make_stack, write_raster  # noqa: E402


@pytest.fixture
def stack(tmp_path):
    return R.open_stack([make_stack(tmp_path / "env")])


def test_a_folder_is_a_stack_named_by_its_files(stack, tmp_path):
    assert stack.names == ["rain", "soil", "temp"] and (stack.height, stack.width) == (HEIGHT, WIDTH)
    assert stack.select(["temp", "soil"]).names == ["temp", "soil"]
    with pytest.raises(DataFormatError, match=r"no raster for covariate 'bio1' \(nor 'bio2'\); the rasters here are "
                                              r"rain, soil, temp"):
        stack.select(["temp", "bio1", "bio2"])
    (tmp_path / "env" / "notes.txt").write_text("not a layer")  # not a raster suffix: not a layer
    assert R.open_stack([tmp_path / "env"]).names == stack.names


def test_multi_band_files_are_named_by_their_band_descriptions(tmp_path):
    a = np.ones((2, HEIGHT, WIDTH), np.float32)
    write_raster(tmp_path / "two.tif", a, descriptions=["p", "q"])
    assert R.open_stack([tmp_path / "two.tif"]).names == ["p", "q"]


def test_grid_crs_and_gdal_errors_name_the_file(tmp_path):
    env = make_stack(tmp_path / "env")
    write_raster(tmp_path / "small.tif", np.ones((3, 3), np.float32))
    with pytest.raises(DataFormatError, match=r"small.tif: its grid \(3 rows x 3 columns"):
        R.open_stack([env, tmp_path / "small.tif"])
    write_raster(tmp_path / "merc.tif", np.ones((HEIGHT, WIDTH), np.float32), crs="EPSG:3857")
    with pytest.raises(DataFormatError, match=r"merc.tif: its CRS is EPSG:3857 but rain.tif's is EPSG:4326"):
        R.open_stack([env, tmp_path / "merc.tif"])
    (tmp_path / "fake.tif").write_text("this is not a raster")
    with pytest.raises(DataFormatError, match=r"fake.tif: not a raster GDAL can read"):
        R.open_stack([tmp_path / "fake.tif"])
    with pytest.raises(DataFormatError, match="raster file or folder not found"):
        R.open_stack([tmp_path / "nothing.tif"])


def test_crs_check_names_both(stack):
    R.check_crs(R.parse_crs("EPSG:4326"), stack)
    R.check_crs(R.parse_crs("OGC:CRS84"), stack)  # the same longitude/latitude
    with pytest.raises(ConfigError, match=r"records are in EPSG:3857 but the rasters \(rain.tif, ...\) are in "
                                          r"EPSG:4326"):
        R.check_crs(R.parse_crs("EPSG:3857"), stack)
    with pytest.raises(ConfigError, match="not a coordinate reference system"):
        R.parse_crs("EPSG:999999")


def test_extract_values_and_status(stack):
    pts = [centre(3, 5), centre(*SEA[0]), (0.0, 0.0), centre(HEIGHT - 1, WIDTH - 1), (np.nan, 1.0)]
    vals, status = R.extract(stack, pts, window_rows=4)
    assert status.tolist() == [R.VALID, R.NODATA, R.OFF_RASTER, R.VALID, R.OFF_RASTER]
    L = layers()
    assert vals[0].tolist() == [float(L["rain"][0][3, 5]), float(L["soil"][0][3, 5]), float(L["temp"][0][3, 5])]
    assert np.isnan(vals[1]).all() and np.isnan(vals[2]).all()
    # the window size changes nothing
    v1, s1 = R.extract(stack, pts, window_rows=1)
    assert np.array_equal(v1, vals, equal_nan=True) and np.array_equal(s1, status)


def test_background_is_seeded_distinct_valid_and_window_independent(stack):
    xy, vals, info = R.sample_background(stack, 50, seed=3, window_rows=5)
    assert info["valid_cells"] == HEIGHT * WIDTH - len(SEA) and info["drawn"] == 50 and not info["all_taken"]
    assert len({tuple(p) for p in xy.tolist()}) == 50
    rows, cols = stack.cells(xy)
    assert not any((r, c) in SEA for r, c in zip(rows, cols))
    got, status = R.extract(stack, xy)
    assert (status == R.VALID).all() and np.array_equal(got, vals)
    xy2, _, _ = R.sample_background(stack, 50, seed=3, window_rows=HEIGHT)
    assert np.array_equal(xy, xy2)  # the same draw whatever the window
    xy3, _, _ = R.sample_background(stack, 50, seed=4)
    assert not np.array_equal(xy, xy3)
    xy_all, _, info = R.sample_background(stack, 10_000, seed=0)
    assert len(xy_all) == HEIGHT * WIDTH - len(SEA) and info["all_taken"]


def test_mask_and_bias(stack, tmp_path):
    mask = np.zeros((HEIGHT, WIDTH), np.uint8)
    mask[:, :4] = 1
    write_raster(tmp_path / "mask.tif", mask)
    xy, _, info = R.sample_background(stack, 10, seed=0, mask=tmp_path / "mask.tif")
    assert (stack.cells(xy)[1] < 4).all() and info["valid_cells"] == 4 * HEIGHT - len(SEA)
    bias = np.ones((HEIGHT, WIDTH), np.float32)
    bias[:, WIDTH // 2:] = 0.0  # never drawn
    bias[:, :2] = 50.0  # drawn far more often than its share
    write_raster(tmp_path / "bias.tif", bias)
    xy, _, _ = R.sample_background(stack, 20, seed=1, bias=tmp_path / "bias.tif")
    cols = stack.cells(xy)[1]
    assert (cols < WIDTH // 2).all() and (cols < 2).mean() > 0.5  # 2 of 8 columns hold > half of the draw
    write_raster(tmp_path / "off.tif", np.ones((3, 3), np.float32))
    with pytest.raises(DataFormatError, match="the mask raster is not on the covariates' grid"):
        R.sample_background(stack, 5, mask=tmp_path / "off.tif")


def test_without_rasterio_the_error_says_how_to_install(monkeypatch):
    import sys

    from spmlkit.errors import SpmlError

    monkeypatch.setitem(sys.modules, "rasterio", None)  # an import of it now fails
    with pytest.raises(SpmlError, match=r"pip install 'spmlkit\[geo\]'"):
        R.rasterio()
