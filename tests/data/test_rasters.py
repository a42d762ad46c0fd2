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


# ------------------------------------------------------------------ the reader rule for rasters
def _vrt(path, source: str, relative: bool, extra: str = ""):
    path.write_text(f"""<VRTDataset rasterXSize="{WIDTH}" rasterYSize="{HEIGHT}">
  <SRS>EPSG:4326</SRS><GeoTransform>10, 0.5, 0, 50, 0, -0.5</GeoTransform>
  <VRTRasterBand dataType="Float32" band="1"{extra}>
    <SimpleSource><SourceFilename relativeToVRT="{int(relative)}">{source}</SourceFilename>
      <SourceBand>1</SourceBand></SimpleSource>
  </VRTRasterBand>
</VRTDataset>""")
    return path


def test_a_vrt_may_reference_only_rasters_beside_it(tmp_path):
    env = make_stack(tmp_path / "env")
    inside = _vrt(env / "t2.vrt", "temp.tif", True)
    assert "t2" in R.open_stack([inside]).names
    other = make_stack(tmp_path / "elsewhere")
    for src, rel in ((str(other / "temp.tif"), False), ("../elsewhere/temp.tif", True), ("/vsicurl/http://x/a.tif", False)):
        vrt = _vrt(tmp_path / "env" / "t3.vrt", src, rel)
        with pytest.raises(DataFormatError) as e:
            R.open_stack([vrt])
        assert f"references {src!r}, outside its folder" in str(e.value)
        vrt.unlink()


def test_a_vrt_pixel_function_never_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("GDAL_VRT_ENABLE_PYTHON", "YES")
    env = make_stack(tmp_path / "env")
    marker = tmp_path / "ran"
    code = f"<PixelFunctionLanguage>Python</PixelFunctionLanguage><PixelFunctionType>f</PixelFunctionType>" \
           f"<PixelFunctionCode><![CDATA[\nimport pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n" \
           "def f(in_ar, out_ar, *a, **k):\n    out_ar[:] = 1\n]]></PixelFunctionCode>"
    (env / "evil.vrt").write_text(f"""<VRTDataset rasterXSize="{WIDTH}" rasterYSize="{HEIGHT}">
  <SRS>EPSG:4326</SRS><GeoTransform>10, 0.5, 0, 50, 0, -0.5</GeoTransform>
  <VRTRasterBand dataType="Float32" band="1" subClass="VRTDerivedRasterBand">{code}
    <SimpleSource><SourceFilename relativeToVRT="1">temp.tif</SourceFilename></SimpleSource>
  </VRTRasterBand>
</VRTDataset>""")
    with pytest.raises(DataFormatError, match="evil.vrt: holds a pixel function"):
        R.open_stack([env])
    R.rasterio()
    import os

    assert os.environ["GDAL_VRT_ENABLE_PYTHON"] == "NO" and not marker.exists()


def test_a_raster_declaring_too_many_cells_is_refused_at_once(tmp_path, monkeypatch):
    env = make_stack(tmp_path / "env")
    monkeypatch.setenv("SPML_RASTER_MAX_CELLS", str(HEIGHT * WIDTH - 1))
    with pytest.raises(DataFormatError) as e:
        R.open_stack([env / "temp.tif"])
    assert f"declares {HEIGHT} rows x {WIDTH} columns x 1 band(s)" in str(e.value) and "\n" not in str(e.value)
    monkeypatch.setenv("SPML_RASTER_MAX_CELLS", "abc")
    with pytest.raises(ConfigError, match="SPML_RASTER_MAX_CELLS='abc' is not a usable count"):
        R.open_stack([env / "temp.tif"])
    monkeypatch.delenv("SPML_RASTER_MAX_CELLS")
    # a tiny file declaring 200,000 x 200,000 cells (sparse GeoTIFF: no block written)
    import rasterio

    with rasterio.open(tmp_path / "huge.tif", "w", driver="GTiff", width=200_000, height=200_000, count=1,
                       dtype="uint8", crs="EPSG:4326", transform=rasterio.transform.from_origin(0, 0, 1e-3, 1e-3),
                       tiled=True, compress="deflate", sparse_ok=True) as ds:
        pass
    assert (tmp_path / "huge.tif").stat().st_size < 5_000_000
    with pytest.raises(DataFormatError, match="huge.tif: declares 200,000 rows x 200,000 columns"):
        R.open_stack([tmp_path / "huge.tif"])


def test_a_damaged_raster_says_so_not_disk_full(tmp_path):
    a = np.arange(256 * 256, dtype=np.float32).reshape(256, 256)
    import rasterio

    with rasterio.open(tmp_path / "d.tif", "w", driver="GTiff", width=256, height=256, count=1, dtype="float32",
                       crs="EPSG:4326", transform=rasterio.transform.from_origin(0, 0, 0.1, 0.1), tiled=True,
                       blockxsize=64, blockysize=64, compress="deflate") as ds:
        ds.write(a, 1)
    data = bytearray((tmp_path / "d.tif").read_bytes())
    mid = len(data) // 2
    data[mid:mid + 2000] = b"\xff" * 2000
    (tmp_path / "d.tif").write_bytes(bytes(data))
    stack = R.open_stack([tmp_path / "d.tif"])
    with pytest.raises(DataFormatError) as e:
        list(stack.windows())
    msg = str(e.value)
    assert msg.startswith(f"{tmp_path / 'd.tif'}: band 1, rows ") and "damaged or truncated" in msg
    assert "disk" not in msg and "\n" not in msg


def test_a_pipe_is_not_a_raster(tmp_path):
    import os

    os.mkfifo(tmp_path / "p.tif")
    with pytest.raises(DataFormatError, match="p.tif: is a pipe"):
        R.open_stack([tmp_path / "p.tif"])
