"""The figure and option plumbing of the species maps (spmlkit.practitioner.maps), pinned:
what each PNG map draws (read from the matplotlib Figure it saved: image, colour scale,
nodata colour, outline, records and their legend counts, titles, labels, size and dpi),
the GeoTIFFs' profile, tags and band names, the file names, the records overlay and the
refusals' messages.  Three tiny rasters, their figures drawn once in one test; predict_rasters
on the 12 x 16 stack of tests/helpers/rasters.py with map_figure recorded, not drawn
(tests/practitioner/test_maps.py holds the maps' numbers)."""
from __future__ import annotations

import contextlib
import hashlib
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

rasterio = pytest.importorskip("rasterio")
matplotlib = pytest.importorskip("matplotlib")

from spmlkit import ownership  # noqa: E402
from spmlkit.data.encoding import CovariateEncoding  # noqa: E402
from spmlkit.errors import ConfigError, DataFormatError  # noqa: E402
from spmlkit.practitioner import maps as M  # noqa: E402
from tests.helpers.rasters import HEIGHT, WIDTH, layers, linear_model, make_stack, write_raster  # noqa: E402

SPECIES = ["Aus alpha", "Bus beta"]
ENC = CovariateEncoding(("temp", "rain", "soil"), {"soil": (1.0, 2.0, 3.0)})
W = np.array([[0.3, -0.3], [0.01, 0.0], [1.0, -1.0], [0.0, 0.0], [-1.0, 1.0]])  # temp, rain, soil=1..3
COLORBAR = "relative suitability (model output; grey: no data)"


def _rgba(c):
    from matplotlib.colors import to_rgba

    return to_rgba(c)


# --------------------------------------------------------------------------- the PNG maps
#: A: geographic, 4 rows x 6 columns of 0.1° cells from x 10, y 45 (0.6° wide, 0.4° tall), nodata in the top left
A_NODATA = np.zeros((4, 6), bool)
A_NODATA[0, :2] = A_NODATA[1, 0] = True
A_RECORDS = {"train": np.array([[10.05, 44.65], [10.35, 44.85], [10.55, 44.95]]),
             "val": np.array([[10.15, 44.75], [10.45, 44.65]]),
             "other": np.array([[10.25, 44.85]]),  # a split the styles do not name: drawn as "records"
             "none": None, "empty": np.empty((0, 2))}
B_RECORDS = np.array([[4e6 + 0.5, 3e6 - 10.5], [4e6 + 0.5, 3e6 - 20.5]])


def _draw(d, monkeypatch, closed: list) -> dict:
    """Three maps drawn by map_figure, each Figure kept (``plt.close`` recorded, not done):
    A (geographic, nodata corner, records by split), B (projected, 1601 rows x 1 column,
    records as one array, no nodata: read decimated by 2), C (3 x 6, no nodata, read with
    ``max_pixels=3``; only empty records)."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rasterio.transform import from_origin

    a = np.linspace(0.05, 0.9, 24, dtype=np.float32).reshape(4, 6)  # inside 0-1: the scale is not the data's
    a[A_NODATA] = -9999
    write_raster(d / "a.tif", a, nodata=-9999, transform=from_origin(10, 45, 0.1, 0.1))
    b = np.linspace(0, 1, 1601, dtype=np.float32).reshape(1601, 1)
    write_raster(d / "b.tif", b, crs="EPSG:3035", transform=from_origin(4e6, 3e6, 1, 1))
    c = np.full((3, 6), 0.5, np.float32)
    write_raster(d / "c.tif", c, transform=from_origin(10, 45, 0.1, 0.1))
    cases = {"a": ("Aus alpha", {"records": A_RECORDS}), "b": ("Bus beta", {"records": B_RECORDS}),
             "c": ("Cus", {"records": {"train": np.empty((0, 2)), "val": None}, "max_pixels": 3})}
    out = {}
    with monkeypatch.context() as mp, matplotlib.rc_context({"legend.framealpha": 0.3}):  # a user's matplotlibrc
        mp.setattr(plt, "close", closed.append)
        for name, (species, kw) in cases.items():
            png = d / f"{name}.png"
            ownership.output_file(png, option="-o", what="map")
            assert M.map_figure(d / f"{name}.tif", 1, species, png, **kw) == png
            out[name] = SimpleNamespace(fig=closed[-1], png=png, data={"a": a, "b": b, "c": c}[name])
    return out


def test_the_png_maps(tmp_path, monkeypatch):
    """One test (the three figures drawn once: mutmut runs the tests that call map_figure,
    so the checks below sit in the test that draws them)."""
    import matplotlib.pyplot as plt

    closed: list = []
    try:
        figures = _draw(tmp_path, monkeypatch, closed)
        for check in (_size_dpi_and_layout, _image_colour_scale_and_nodata, _colour_bar_shrunk_to_nine_tenths,
                      _large_rasters_read_decimated, _titles_and_axis_labels, _records_by_split_in_the_legend,
                      _records_as_one_array_and_a_legend_without_an_outline, _outline_of_the_valid_data):
            check(figures)
    finally:
        for f in closed:
            if f is not None:
                plt.close(f)


def _ax(case):
    return case.fig.axes[0]


def _scatters(ax) -> dict:
    from matplotlib.collections import PathCollection

    return {c.get_label(): c for c in ax.collections if isinstance(c, PathCollection)}


def _size_dpi_and_layout(figures):
    from matplotlib.layout_engine import ConstrainedLayoutEngine
    from PIL import Image

    for name, aspect in (("a", 0.4 / 0.6), ("b", 1.6), ("c", 0.3 / 0.6)):
        fig = figures[name].fig
        w, h = 6.6, 5.2 * aspect + 0.8
        np.testing.assert_allclose(fig.get_size_inches(), [w, h], rtol=1e-6)
        assert isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)
        with Image.open(figures[name].png) as im:
            assert abs(im.size[0] - w * 110) <= 1 and abs(im.size[1] - h * 110) <= 1  # dpi 110
            assert im.format == "PNG" and im.info["Software"] == "spmlkit map"


def _image_colour_scale_and_nodata(figures):
    a = figures["a"]
    ax = _ax(a)
    (im,) = ax.images
    assert tuple(im.get_extent()) == pytest.approx((10, 10.6, 44.6, 45))
    assert (im.norm.vmin, im.norm.vmax) == (0, 1) and im.get_interpolation() == "nearest"
    assert im.get_cmap().name.startswith("viridis")
    assert im.get_cmap().get_bad() == pytest.approx(_rgba(M.NODATA_COLOUR))
    arr = im.get_array()
    assert arr.shape == (4, 6) and np.array_equal(np.ma.getmaskarray(arr), A_NODATA)
    np.testing.assert_array_equal(arr.data[~A_NODATA], a.data[~A_NODATA])
    cb = im.colorbar
    assert cb is not None and cb.mappable is im and cb.ax.get_ylabel() == COLORBAR
    assert cb.ax in a.fig.axes and len(a.fig.axes) == 2


def _colour_bar_shrunk_to_nine_tenths(figures):
    fig = figures["b"].fig
    ax, cax = fig.axes
    fig.canvas.draw()
    slot = ax.get_position(original=True)
    assert cax.get_position().height == pytest.approx(0.9 * slot.height, rel=0.02)


def _large_rasters_read_decimated(figures):
    (b,) = _ax(figures["b"]).images  # 1601 rows > 1600 pixels: every second row, never fewer than 1 column
    assert b.get_array().shape == (800, 1)
    (c,) = _ax(figures["c"]).images  # max_pixels 3 on 6 columns: 3 columns, 1 row (never fewer than 1)
    assert c.get_array().shape == (1, 3)


def _titles_and_axis_labels(figures):
    for name, species, xl, yl in (("a", "Aus alpha", "longitude", "latitude"), ("b", "Bus beta", "x", "y"),
                                  ("c", "Cus", "longitude", "latitude")):
        ax = _ax(figures[name])
        assert ax.get_title() == species and ax.title.get_fontstyle() == "italic"
        assert (ax.get_xlabel(), ax.get_ylabel()) == (xl, yl)


def _records_by_split_in_the_legend(figures):
    from matplotlib.markers import MarkerStyle

    ax = _ax(figures["a"])
    sc = _scatters(ax)
    assert set(sc) == {"training records (3)", "validation records (2)", "records (1)"}
    for label, xy, colour, marker in (("training records (3)", A_RECORDS["train"], "#d62728", "o"),
                                      ("validation records (2)", A_RECORDS["val"], "#ff7f0e", "^"),
                                      ("records (1)", A_RECORDS["other"], "#d62728", "o")):
        c = sc[label]
        np.testing.assert_allclose(c.get_offsets(), xy)
        assert list(c.get_sizes()) == [8] and list(c.get_linewidths()) == [0.4]
        assert c.get_facecolor()[0] == pytest.approx(_rgba(colour))
        assert c.get_edgecolor()[0] == pytest.approx(_rgba("white"))
        ms = MarkerStyle(marker)
        np.testing.assert_allclose(c.get_paths()[0].vertices, ms.get_path().transformed(ms.get_transform()).vertices)
    leg = ax.get_legend()
    assert [t.get_text() for t in leg.get_texts()] == ["edge of the data (grey: no data)", "training records (3)",
                                                        "validation records (2)", "records (1)"]
    assert leg._loc == 3 and leg.get_frame().get_alpha() == 0.8  # lower left
    assert {t.get_fontsize() for t in leg.get_texts()} == {8}


def _records_as_one_array_and_a_legend_without_an_outline(figures):
    ax = _ax(figures["b"])
    (c,) = _scatters(ax).values()
    assert c.get_label() == "records (2)" and c.get_facecolor()[0] == pytest.approx(_rgba("#d62728"))
    np.testing.assert_allclose(c.get_offsets(), B_RECORDS)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["records (2)"]
    ax = _ax(figures["c"])  # no outline, no records drawn: no legend
    assert not _scatters(ax) and ax.get_legend() is None and not ax.lines


def _outline_of_the_valid_data(figures):
    from matplotlib.contour import ContourSet

    ax = _ax(figures["a"])
    (cs,) = [c for c in ax.collections if isinstance(c, ContourSet)]
    assert list(cs.levels) == [0.5] and cs.origin == "upper"
    assert tuple(cs.extent) == pytest.approx((10, 10.6, 44.6, 45))
    assert cs.get_edgecolor()[0] == pytest.approx(_rgba(M.OUTLINE_COLOUR)) and list(cs.get_linewidths()) == [0.6]
    v = np.concatenate([s for s in cs.allsegs[0]])
    assert len(v) and (v[:, 0] <= 10.25).all() and (v[:, 1] >= 44.75).all()  # around the nodata in the top left
    (line,) = ax.lines  # the legend's entry
    assert line.get_label() == "edge of the data (grey: no data)" and line.get_linewidth() == 0.6
    assert _rgba(line.get_color()) == pytest.approx(_rgba(M.OUTLINE_COLOUR)) and len(line.get_xdata()) == 0
    for name in ("b", "c"):  # every cell has data: no outline
        assert not [c for c in _ax(figures[name]).collections if isinstance(c, ContourSet)]


# --------------------------------------------------------------------------- the file names
def test_file_names_are_safe_and_unique_without_case():
    h = hashlib.sha256("B".encode("utf-8")).hexdigest()[:8]
    hb = hashlib.sha256("aus alpha".encode("utf-8")).hexdigest()[:8]
    names = M._unique_safe_names(["Aus alpha", "aus alpha", "b", f"b-{h}", "B"])
    assert names == {"Aus alpha": "Aus_alpha", "aus alpha": f"aus_alpha-{hb}", "b": "b", f"b-{h}": f"b-{h}",
                     "B": f"B-{h}_"}  # "B" reduced to what "b" took, then to what "b-<hash>" took


def test_output_paths():
    tifs, pngs = M.output_paths("d/m.TIFF", SPECIES, per_species=False, maps=["Bus beta"])
    assert tifs == [Path("d/m.TIFF")] and pngs == [Path("d/m_Bus_beta.png")]
    assert M.output_paths("d/m.tiff", SPECIES, per_species=False, maps=[])[0] == [Path("d/m.tiff")]
    tifs, pngs = M.output_paths("d/per", SPECIES, per_species=True, maps=SPECIES)
    assert tifs == [Path("d/per/Aus_alpha.tif"), Path("d/per/Bus_beta.tif")]
    assert pngs == [Path("d/per/Aus_alpha.png"), Path("d/per/Bus_beta.png")]
    with pytest.raises(ConfigError, match=r"^-o d/m\.png: a multi-band GeoTIFF must end in \.tif \(or give "
                                          r"--per-species and a folder\)$"):
        M.output_paths("d/m.png", SPECIES, per_species=False, maps=[])


def test_the_maps_asked_for():
    assert M._requested(None, SPECIES) == [] and M._requested("", SPECIES) == []
    assert M._requested(" all ", SPECIES) == SPECIES
    assert M._requested("Bus beta, Aus alpha,", SPECIES) == ["Bus beta", "Aus alpha"]
    eight, nine = [f"s{i}" for i in range(8)], [f"s{i}" for i in range(9)]
    with pytest.raises(ConfigError) as e:
        M._requested("s1,x", eight)
    assert str(e.value) == "--maps: 'x' is not a species of the model (s0, s1, s2, s3, s4, s5, s6, s7)"
    with pytest.raises(ConfigError) as e:
        M._requested("x", nine)
    assert str(e.value) == "--maps: 'x' is not a species of the model (s0, s1, s2, s3, s4, s5, s6, s7, ...)"


# --------------------------------------------------------------------------- the GeoTIFFs
def test_the_geotiff_profile():
    def stack(w, h):
        return SimpleNamespace(width=w, height=h, crs="CRS", transform="T")

    base = {"driver": "GTiff", "dtype": "float32", "nodata": -9999.0, "crs": "CRS", "transform": "T",
            "compress": "deflate", "BIGTIFF": "IF_SAFER"}
    assert M._map_profile(stack(256, 256), np.float32(-9999)) == {
        **base, "width": 256, "height": 256, "tiled": True, "blockxsize": 256, "blockysize": 256}
    for w, h in ((255, 256), (256, 255), (255, 4000)):  # smaller than a block either way: untiled
        assert M._map_profile(stack(w, h), np.float32(-9999)) == {**base, "width": w, "height": h, "tiled": False}
    p = M._map_profile(stack(3, 2), np.float32(np.nan))
    assert np.isnan(p["nodata"]) and isinstance(p["nodata"], float)


def test_maps_are_tagged_with_the_scale_and_the_model_and_named_by_species(tmp_path):
    stack = SimpleNamespace(width=3, height=2, crs=None, transform=rasterio.Affine.identity())
    profile = M._map_profile(stack, np.float32(-1))
    rio = M.rasterio()
    for per_species, model, want in ((True, SimpleNamespace(), ""), (False, SimpleNamespace(path=None), ""),
                                     (True, SimpleNamespace(path=tmp_path / "run"), str(tmp_path / "run"))):
        tmps = [tmp_path / f"{per_species}{i}{want != ''}.tif" for i in range(2 if per_species else 1)]
        with contextlib.ExitStack() as es:
            dsts = M._open_maps(es, rio, tmps, profile, SPECIES, per_species, model)
            assert len(dsts) == len(tmps)
        for i, t in enumerate(tmps):
            with rasterio.open(t) as ds:
                assert ds.tags()[M.TAG] == M.SCALE and ds.tags().get("model", "") == want  # (GDAL keeps no empty tag)
                assert ds.descriptions == ((SPECIES[i],) if per_species else tuple(SPECIES))


class _Model:
    """A stand-in with the streamed prediction: logit = the first encoded column, blocks recorded."""

    def __init__(self):
        self.blocks = []

    def iter_decision_function(self, X, batch_rows=8192):
        for s in range(0, len(X), batch_rows):
            self.blocks.append(min(batch_rows, len(X) - s))
            yield s, X[s:s + batch_rows, :1].astype(np.float64) * np.array([[1.0, -1.0]])


def test_probabilities_are_float32_predicted_16384_cells_at_a_time_and_ignore_unseen_levels():
    enc = CovariateEncoding(("t", "k"), {"k": (1.0, 2.0)})
    raw = np.column_stack([np.linspace(-2, 2, 16385), np.ones(16385)])
    raw[0, 1] = 5  # a level the model never saw: none of k's columns set (the caller drops such cells)
    m = _Model()
    P = M._probabilities(m, enc, raw, 2)
    assert P.dtype == np.float32 and P.shape == (16385, 2) and m.blocks == [16384, 1]
    np.testing.assert_allclose(P[:, 0], 1 / (1 + np.exp(-raw[:, 0])), rtol=1e-6)
    np.testing.assert_allclose(P[:, 1], 1 - P[:, 0], atol=1e-6)
    assert M._probabilities(_Model(), enc, raw[:0], 2).shape == (0, 2)


# --------------------------------------------------------------------------- the records overlay
class _Bundle:
    """A stand-in for a prepared bundle (``_BUNDLES[path]``: its species, places' CRS, splits)."""

    def __init__(self, path):
        self.__dict__.update(_BUNDLES[str(path)])

    def size(self, split):
        return len(self.splits[split][1])

    def xy(self, split):
        return self.splits[split][0]

    def observations(self, split):
        return self.splits[split][1]


XY = {"train": np.array([[10.25, 49.25], [12.25, 48.25], [14.25, 46.25]]), "val": np.array([[11.25, 45.25],
                                                                                            [15.25, 44.25]])}
Z = {"train": np.array([[1, 0], [0, 1], [1, 1]]), "val": np.array([[0, 1], [1, 0]])}
_BUNDLES: dict = {}


def _bundle(folder, *, species=SPECIES, crs="EPSG:4326", splits=None) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.json").write_text("{}")
    places = {} if crs is None else {"crs": crs}
    _BUNDLES[str(folder)] = {"label_names": list(species), "meta": {"places": places},
                             "splits": splits or {s: (XY[s], Z[s]) for s in ("train", "val")}}
    return str(folder)


@pytest.fixture
def bundles(monkeypatch):
    monkeypatch.setattr(M, "Bundle", _Bundle)
    return _bundle


def _stack(crs="EPSG:4326"):
    return SimpleNamespace(crs=None if crs is None else rasterio.crs.CRS.from_user_input(crs))


def _want(splits=("train", "val")):
    return {s: {k: XY[k][Z[k][:, j] == 1] for k in splits} for j, s in enumerate(SPECIES)}


def _same(got, want):
    assert got.keys() == want.keys()
    for s in want:
        assert got[s].keys() == want[s].keys()
        for k in want[s]:
            np.testing.assert_array_equal(got[s][k], want[s][k])


def test_the_records_of_each_species_by_split(bundles, tmp_path):
    b = bundles(tmp_path / "b")
    model = SimpleNamespace(info={"bundle": b})
    _same(M._training_records(model, None, SPECIES, _stack()), _want())  # the model's bundle
    _same(M._training_records(SimpleNamespace(info={}), b, SPECIES, _stack()), _want())  # --records
    _same(M._training_records(SimpleNamespace(info=None), b, SPECIES, _stack(None)), _want())  # rasters with no CRS
    nocrs = bundles(tmp_path / "c", crs=None)  # records with no CRS: drawn as they are
    _same(M._training_records(model, nocrs, SPECIES, _stack("EPSG:3035")), _want())
    same = bundles(tmp_path / "d", crs="OGC:CRS84")
    _same(M._training_records(model, same, SPECIES, _stack()), _want())
    empty_train = bundles(tmp_path / "e", splits={"train": (XY["train"][:0], Z["train"][:0]),
                                                  "val": (XY["val"], Z["val"])})
    _same(M._training_records(model, empty_train, SPECIES, _stack()), _want(("val",)))
    noplaces = bundles(tmp_path / "f", splits={s: (None, Z[s]) for s in ("train", "val")})
    assert M._training_records(model, noplaces, SPECIES, _stack()) is None


def test_no_records_without_a_bundle_and_the_refusals(bundles, tmp_path):
    assert M._training_records(SimpleNamespace(info={}), None, SPECIES, _stack()) is None
    assert M._training_records(SimpleNamespace(info={"bundle": str(tmp_path / "gone")}), None, SPECIES,
                               _stack()) is None
    (tmp_path / "nob").mkdir()
    with pytest.raises(ConfigError) as e:
        M._training_records(SimpleNamespace(info={}), tmp_path / "nob", SPECIES, _stack())
    assert str(e.value) == f"--records {tmp_path / 'nob'}: not a prepared bundle (no meta.json)"
    other = bundles(tmp_path / "o", species=["Aus alpha", "Cus"])
    with pytest.raises(ConfigError) as e:
        M._training_records(SimpleNamespace(info={}), other, SPECIES, _stack())
    assert str(e.value) == (f"--records {other}: its species are not the model's; give the bundle the model was "
                            "trained on")
    b = bundles(tmp_path / "b")
    with pytest.raises(ConfigError) as e:
        M._training_records(SimpleNamespace(info={}), b, SPECIES, _stack("EPSG:3035"))
    assert str(e.value) == (f"the records of {b} are in EPSG:4326 but the rasters are in EPSG:3035; they cannot be "
                            "drawn on this map")


# --------------------------------------------------------------------------- predict_rasters' plumbing
@pytest.fixture
def env(tmp_path):
    return make_stack(tmp_path / "env")


@pytest.fixture
def drawn(monkeypatch):
    """map_figure recorded instead of drawn: ``[(tif, band, species, png, records)]``."""
    calls = []
    monkeypatch.setattr(M, "map_figure", lambda tif, band, species, png, *, records=None: calls.append(
        (Path(tif), band, species, Path(png), records)))
    return calls


def _model(tmp_path, info=None):
    model = linear_model(ENC, SPECIES, W)
    model.path = tmp_path / "run"
    model.path.mkdir(exist_ok=True)
    model.info = dict(info or {})
    return model


MESSAGE = (r"predicted 2 species on 189 valid cells of a 12 x 16 grid \(3 nodata\) in \d+\.\d s, windows of {} "
           r"rows")


def test_a_map_with_its_records_and_the_message(env, tmp_path, drawn, bundles, monkeypatch):
    rec = bundles(tmp_path / "rec", splits={"train": (np.array([[10.25, 49.25], [17.25, 44.25]]), Z["val"]),
                                            "val": (XY["val"], Z["val"])})
    notes = []
    clock = iter([100.0, 103.5])  # the time the windows took: 3.5 s
    monkeypatch.setattr(M, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    res = M.predict_rasters(_model(tmp_path), env, tmp_path / "p.tif", maps="Bus beta", records=rec, window_rows=5,
                            log=notes.append)  # the rasters' folder as such, not in a list
    png = tmp_path / "p_Bus_beta.png"
    assert res["written"] == [str(tmp_path / "p.tif"), str(png)] and not notes
    assert res["message"] == ("predicted 2 species on 189 valid cells of a 12 x 16 grid (3 nodata) in 3.5 s, windows "
                              "of 5 rows") and res["cells"] == 189 and res["unseen"] == 0 and res["seconds"] == 3.5
    ((tif, band, species, out, records),) = drawn
    assert (tif, band, species, out) == (tmp_path / "p.tif", 2, "Bus beta", png)
    assert records.keys() == {"train", "val"}
    np.testing.assert_array_equal(records["train"], [[10.25, 49.25]])
    np.testing.assert_array_equal(records["val"], [[11.25, 45.25]])
    with rasterio.open(tmp_path / "p.tif") as ds:
        assert ds.tags()[M.TAG] == M.SCALE and ds.tags()["model"] == str(tmp_path / "run")
        assert ds.compression.value == "DEFLATE" and ds.dtypes == ("float32", "float32") and ds.nodata == -9999


def test_maps_per_species_in_a_folder_and_the_note_without_records(env, tmp_path, drawn):
    notes = []
    out = tmp_path / "per"
    res = M.predict_rasters(_model(tmp_path, {"bundle": str(tmp_path / "gone")}), [env], out, per_species=True,
                            maps="all", log=notes.append)
    tifs = [out / "Aus_alpha.tif", out / "Bus_beta.tif"]
    pngs = [out / "Aus_alpha.png", out / "Bus_beta.png"]
    assert res["written"] == [str(p) for p in tifs + pngs]
    assert re.fullmatch(MESSAGE.format(HEIGHT), res["message"])  # one window of about 65,536 cells: every row
    assert drawn == [(tifs[0], 1, "Aus alpha", pngs[0], None), (tifs[1], 1, "Bus beta", pngs[1], None)]
    assert notes == ["note: no training records to overlay (the model's bundle is gone; name one with --records)"]
    for t, s in zip(tifs, SPECIES):
        with rasterio.open(t) as ds:
            assert ds.descriptions == (s,) and ds.tags()[M.TAG] == M.SCALE and ds.tags()["model"] == str(
                tmp_path / "run")
    again = M.predict_rasters(_model(tmp_path), [env], out, per_species=True, log=notes.append)  # its own: replaced
    assert again["written"] == [str(p) for p in tifs] and len(notes) == 1 and len(drawn) == 2


def test_an_older_spmlkit_maps_folder_is_adopted_by_its_layout(env, tmp_path, drawn):
    import json

    out = tmp_path / "old"
    out.mkdir()
    (out / ownership.MARKER).write_text(json.dumps({"written_by": "spmlkit", "kind": "maps"}))
    for n in ("Aus_alpha.tif", "Bus_beta.tif", "Aus_alpha.png", "notes.txt"):
        (out / n).write_text("old")
    M.predict_rasters(_model(tmp_path), [env], out, per_species=True)
    assert ownership.foreign(out) == ["notes.txt"] and (out / "notes.txt").read_text() == "old"
    assert (out / "Aus_alpha.png").read_text() == "old"


def test_a_folder_of_another_kind_is_refused_and_nothing_is_created(env, tmp_path, drawn):
    ownership.claim(tmp_path / "other", "run")
    with pytest.raises(ConfigError, match=r"it holds spmlkit's run output, not a maps folder; choose a new \(or "
                                          r"empty\) folder with -o/--out$"):
        M.predict_rasters(_model(tmp_path), [env], tmp_path / "other", per_species=True)
    (tmp_path / "nob").mkdir()
    with pytest.raises(ConfigError, match="not a prepared bundle"):  # the records are read before the folder is made
        M.predict_rasters(_model(tmp_path), [env], tmp_path / "new", per_species=True, maps="all",
                          records=tmp_path / "nob")
    assert not (tmp_path / "new").exists()
    with pytest.raises(ConfigError, match=r"is an input of this command|inside"):  # the output first, then the records
        M.predict_rasters(_model(tmp_path), [env], env / "maps", per_species=True, maps="all",
                          records=tmp_path / "nob")


def test_outputs_among_the_inputs_and_the_user_files_are_refused(env, tmp_path, drawn):
    model = _model(tmp_path)
    (tmp_path / "rec").mkdir()
    for out, kw in ((env / "new.tif", {}), (model.path / "p.tif", {}), (tmp_path / "rec" / "p.tif",
                                                                         {"records": tmp_path / "rec"})):
        with pytest.raises(ConfigError, match="input"):
            M.predict_rasters(model, env, out, **kw)
        assert not out.exists()
    mine = tmp_path / "mine.tif"
    mine.write_text("my own file")
    with pytest.raises(ConfigError, match=r"mine\.tif: it is not a map spmlkit wrote .*; choose a new file with -o or "
                                          r"pass --overwrite$"):
        M.predict_rasters(model, [env], mine)
    assert mine.read_text() == "my own file"
    M.predict_rasters(model, [env], mine, overwrite=True)
    with rasterio.open(mine) as ds:
        assert ds.count == 2


def test_the_refusals_of_predict_rasters(env, tmp_path):
    model = _model(tmp_path)
    with pytest.raises(ConfigError) as e:
        M.predict_rasters(model, [env], tmp_path / "p.tif", unseen_levels="skip")
    assert str(e.value) == "unseen_levels must be 'error' or 'nodata', got 'skip'"
    model.input = {"kind": "features"}
    with pytest.raises(ConfigError) as e:
        M.predict_rasters(model, [env], tmp_path / "p.tif")
    assert str(e.value) == ("this model records no covariate encoding (it was trained on ready-made features, not on "
                            "covariates by name): it cannot predict from rasters")
    assert not list(tmp_path.glob("p*"))


#: rain as a categorical covariate too, without its last two rows' levels (300, 320): those rows are unseen
RAIN = tuple(float(100 + 20 * r) for r in range(HEIGHT - 2))
ENC2 = CovariateEncoding(("temp", "rain", "soil"), {"rain": RAIN, "soil": (1.0, 2.0, 3.0)})
W2 = np.random.default_rng(0).normal(0, 0.5, (1 + len(RAIN) + 3, 2))


def test_a_level_unseen_in_an_earlier_layer_is_named_or_left_nodata(env, tmp_path):
    model = linear_model(ENC2, SPECIES, W2)
    with pytest.raises(DataFormatError) as e:
        M.predict_rasters(model, [env], tmp_path / "p.tif", window_rows=5)
    assert str(e.value) == (f"{env / 'rain.tif'}: layer 'rain' has level 300 (first at x 10.25, y 44.75; 32 cell(s) "
                            f"in rows 10-11) that the model never saw in training (its levels: "
                            f"{', '.join(f'{v:g}' for v in RAIN)}); pass --unseen-levels nodata to leave such cells "
                            "empty")
    res = M.predict_rasters(model, [env], tmp_path / "p.tif", window_rows=1, unseen_levels="nodata")
    assert res["unseen"] == 32 and res["cells"] == 189 - 32  # counted over the windows
    assert re.fullmatch(r"predicted 2 species on 157 valid cells of a 12 x 16 grid \(35 nodata\) in \d+\.\d s, windows "
                        r"of 1 rows; 32 cells with a categorical level unseen in training left nodata", res["message"])
    L = layers()
    raw = np.stack([L[c][0].astype(np.float64) for c in ("temp", "rain", "soil")], axis=-1)
    want = 1 / (1 + np.exp(-(ENC2.transform(raw.reshape(-1, 3), unseen="ignore") @ W2)))
    want = want.T.reshape(2, HEIGHT, WIDTH)
    with rasterio.open(tmp_path / "p.tif") as ds:
        got = ds.read()
    nodata = np.zeros((HEIGHT, WIDTH), bool)
    nodata[0, :3] = nodata[HEIGHT - 2:] = True
    assert np.array_equal(got[0] == -9999, nodata) and np.array_equal(got[1] == -9999, nodata)
    np.testing.assert_allclose(got[:, ~nodata], want[:, ~nodata], atol=1e-6)


def test_what_a_map_command_reads():
    stack = SimpleNamespace(sources=["a.tif", "b.tif"])
    assert M._inputs(stack, "env", "rec", SimpleNamespace(path="run")) == ["a.tif", "b.tif", "env", "rec", "run"]
    assert M._inputs(stack, ("e1", "e2"), None, SimpleNamespace()) == ["a.tif", "b.tif", "e1", "e2", None, None]


def test_the_records_are_read_only_for_the_png_maps(env, tmp_path, bundles):
    other = bundles(tmp_path / "o", species=["Cus"])  # not the model's species: refused when maps are drawn
    model = _model(tmp_path, {"bundle": other})
    res = M.predict_rasters(model, [env], tmp_path / "p.tif")
    assert res["written"] == [str(tmp_path / "p.tif")]
    with pytest.raises(ConfigError, match="its species are not the model's"):
        M.predict_rasters(model, [env], tmp_path / "q.tif", maps="all")


def test_an_older_maps_folder_is_adopted_whoever_registered_the_kind(env, tmp_path, drawn, monkeypatch):
    """predict_rasters declares the maps folder kind (and its layout) itself."""
    from spmlkit.ownership import rule

    monkeypatch.delitem(rule._KINDS, "maps", raising=False)
    test_an_older_spmlkit_maps_folder_is_adopted_by_its_layout(env, tmp_path, drawn)


def test_mess_and_binary_maps_beside_the_maps_per_species(env, tmp_path, bundles, monkeypatch):
    """The MESS map and a binary map per species, named by species in the --per-species
    folder; the MESS reference from --records (the model names no bundle)."""
    import json

    from spmlkit.practitioner import sdm_maps

    class Features(_Bundle):
        def features(self, split):
            n = self.size(split)
            return np.column_stack([np.linspace(5, 30, n), np.linspace(100, 300, n), np.zeros((n, 3))])

    monkeypatch.setattr(sdm_maps, "Bundle", Features)
    windows = []
    write_mess = sdm_maps.write_mess
    monkeypatch.setattr(sdm_maps, "write_mess", lambda *a: windows.append(a[-1]) or write_mess(*a))
    rec = bundles(tmp_path / "rec")
    _BUNDLES[rec]["meta"]["encoding"] = {"covariates": list(ENC.covariates)}
    model = _model(tmp_path)
    (model.path / "sdm_metrics.json").write_text(json.dumps({"thresholds": {
        s: {"max_tss": {"threshold": t}} for s, t in zip(SPECIES, (0.5, 0.25))}}))
    out = tmp_path / "per"
    res = M.predict_rasters(model, [env], out, per_species=True, mess=True, binary="max-tss", records=rec,
                            window_rows=4)
    assert windows == [4]  # the MESS map in the windows asked for
    names = ["Aus_alpha", "Bus_beta"]
    assert res["written"] == [str(out / f"{n}.tif") for n in names] + [str(out / "mess.tif")] + [
        str(out / f"{n}_binary.tif") for n in names]
    for n, t in zip(names, (0.5, 0.25)):
        with rasterio.open(out / f"{n}.tif") as s, rasterio.open(out / f"{n}_binary.tif") as b:
            suit, binary = s.read(1, masked=True), b.read(1)
        assert np.array_equal(binary[~suit.mask], (suit.data[~suit.mask] >= np.float32(t)).astype(binary.dtype))
    with rasterio.open(out / "mess.tif") as ds:
        assert ds.count == 1 and ds.read(1, masked=True).count() == 189
