"""Small raster stacks and models for the raster tests (issue 36).

:func:`make_stack` writes three GeoTIFF layers on one grid (12 rows x 16 columns of 0.5°
cells, origin x 10, y 50 — so cell (r, c) has its centre at x = 10.25 + 0.5 c,
y = 49.75 - 0.5 r): ``temp`` (float32, rises with the column), ``rain`` (int16, rises
with the row), ``soil`` (uint8, levels 1-3 in vertical bands); the first three cells of
row 0 are "sea": nodata in every layer.  :func:`linear_model` is a hand-made saved model
with a covariate encoding, so expected probabilities can be computed by hand."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HEIGHT, WIDTH, X0, Y0, CELL = 12, 16, 10.0, 50.0, 0.5
SEA = [(0, 0), (0, 1), (0, 2)]


def centre(r: int, c: int) -> tuple[float, float]:
    return X0 + CELL * (c + 0.5), Y0 - CELL * (r + 0.5)


def write_raster(path, array, *, crs="EPSG:4326", nodata=None, transform=None, descriptions=None) -> Path:
    import rasterio
    from rasterio.transform import from_origin

    array = np.asarray(array)
    if array.ndim == 2:
        array = array[None]
    transform = transform or from_origin(X0, Y0, CELL, CELL)
    with rasterio.open(path, "w", driver="GTiff", width=array.shape[2], height=array.shape[1], count=array.shape[0],
                       dtype=array.dtype, crs=crs, transform=transform, nodata=nodata) as ds:
        ds.write(array)
        for i, d in enumerate(descriptions or []):
            ds.set_band_description(i + 1, d)
    return Path(path)


def layers() -> dict:
    """The three layers as arrays (sea cells set to each layer's nodata)."""
    r, c = np.mgrid[:HEIGHT, :WIDTH]
    temp = (5.0 + 1.5 * c + 0.1 * r).astype(np.float32)
    rain = (100 + 20 * r).astype(np.int16)
    soil = (1 + (c * 3) // WIDTH).astype(np.uint8)
    for rr, cc in SEA:
        temp[rr, cc], rain[rr, cc], soil[rr, cc] = -9999, -32768, 255
    return {"temp": (temp, -9999), "rain": (rain, -32768), "soil": (soil, 255)}


def make_stack(folder, *, crs="EPSG:4326") -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, (a, nodata) in layers().items():
        write_raster(folder / f"{name}.tif", a, crs=crs, nodata=nodata)
    return folder


def write_records(path, rows, header=("species", "lon", "lat"), encoding="utf-8") -> Path:
    with open(path, "w", newline="", encoding=encoding) as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return Path(path)


def located_records(n_per_species: int = 30, seed: int = 0) -> list:
    """Records of two species on land cells: 'Aus alpha' in the west (low temp), 'Bus beta'
    in the east, at cell centres (row >= 1, so never on the sea)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, cols in (("Aus alpha", (0, 7)), ("Bus beta", (9, 16))):
        for _ in range(n_per_species):
            r, c = int(rng.integers(1, HEIGHT)), int(rng.integers(*cols))
            x, y = centre(r, c)
            rows.append([name, x, y])
    return rows


def linear_model(encoding, label_names, weight, bias=None, *, places=None):
    """A saved model with a linear head ``logit = X_enc @ weight + bias`` (no
    standardisation) and ``encoding`` (a CovariateEncoding)."""
    import torch

    from spmlkit.practitioner.saved import SavedModel

    weight = np.asarray(weight, dtype=np.float32)
    bias = np.zeros(weight.shape[1], np.float32) if bias is None else np.asarray(bias, np.float32)
    inp = {"kind": "features", "feature_names": encoding.feature_names, "encoding": encoding.to_dict()}
    if places is not None:
        inp["places"] = places
    return SavedModel(label_names=list(label_names), head="linear", hidden=8, n_features=weight.shape[0],
                      state={"weight": torch.from_numpy(weight), "bias": torch.from_numpy(bias[None])},
                      label_sets={"rule": "top_k", "k": 1}, input=inp)
