"""The figure and option plumbing of the species maps (spmlkit.practitioner.maps), pinned:
what each PNG map draws (read from the matplotlib Figure it saved: image, colour scale,
nodata colour, outline, records and their legend counts, titles, labels, size and dpi),
the GeoTIFFs' profile, tags and band names, the file names, the records overlay and the
refusals' messages.  One small raster per case and one figure per raster, shared by the
module (tests/practitioner/test_maps.py holds the maps' numbers)."""
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


