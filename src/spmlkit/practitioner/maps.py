"""Species maps: a model trained on covariates predicts every cell of a
raster stack, written as GeoTIFF on the input's grid, and a PNG map per species.

:func:`predict_rasters` reads the covariate layers the model was trained on (matched by
name: file or band names; a covariate without a layer is a one-line error naming it) in
windows of ``window_rows`` rows, encodes each valid cell as in training (the model's
:class:`~spmlkit.data.encoding.CovariateEncoding`; a categorical level the model never
saw is an error naming the layer and the level, or with ``unseen_levels="nodata"`` the
cell is left nodata and counted), scores it, and writes the model's output (the sigmoid
of its logit: a relative suitability, :data:`SCALE`) window by window — memory is O(window x (layers + species)) whatever the raster's size (a window
holds about 65,536 cells unless ``window_rows`` says otherwise).

Outputs: one float32 GeoTIFF with a band per species (band descriptions = species
names), or with ``per_species`` one single-band GeoTIFF per species in a folder; same
CRS, transform, width and height as the input, and the input's nodata value (its first
layer's; NaN when it has none) wherever a layer has no data.  Files are written under
temporary names and renamed only when every window is done: an error leaves nothing
half-written.  An existing output is replaced only when spmlkit wrote it (a GeoTIFF
tagged ``SPMLKIT_MAP``, a PNG whose ``Software`` is spmlkit) or with ``overwrite``.

:func:`map_figure` draws one species' map (colour bar, the species name; nodata grey) with
the records overlaid, training and validation records apart and counted in the legend
(the train and validation rows of the model's bundle that observe the species).
"""
from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path

import numpy as np
from scipy.special import expit

from .. import ownership
from ..data import Bundle, rasters as R
from ..data.rasters import crs_name, parse_crs, rasterio, same_crs
from ..errors import ConfigError, DataFormatError
from ..io import safe_filename
from ..ownership import replace_file
from . import sdm_maps

#: what the maps' values are (stored in every GeoTIFF's tags, on every colour bar): the sigmoid
#: of the model's logit, trained on presences against background (or other species'
#: records).  With no absences that is a **relative suitability** — it ranks places, and its
#: level depends on how many background rows were weighed against the presences; it is
#: not a probability of presence, which presence-only data cannot give without an assumed
#: prevalence (Phillips et al. 2017, *Ecography* 40:887–893, on MaxEnt's cloglog output).
SCALE = "relative suitability (model output; not a probability of presence)"
#: the colour of cells without data in the PNG maps
NODATA_COLOUR = "#d9d9d9"

#: the GeoTIFF tag (and its value) that marks a map spmlkit wrote
TAG = "SPMLKIT_MAP"
PNG_SOFTWARE = "spmlkit"


def _safe(name: str) -> str:
    return safe_filename(name.replace(" ", "_"))


def _unique_safe_names(species: list[str]) -> dict[str, str]:
    """Each species' file-safe name, unique by construction: a name that another species'
    name already reduced to (compared without case, as some file systems do) gets the
    first 8 hex digits of its own name's SHA-256 appended, so no two species share a map."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for s in species:
        name = _safe(s)
        if name.lower() in taken:
            name = f"{name}-{hashlib.sha256(s.encode('utf-8')).hexdigest()[:8]}"
        while name.lower() in taken:  # (a species spelled like another's suffixed name)
            name += "_"
        taken.add(name.lower())
        out[s] = name
    return out


def _inputs(stack, rasters, records, model) -> list:
    """What a map command reads: the raster files, the raster folders or files as given (a
    map is never written into one), the records and the model."""
    return [*stack.sources, *(rasters if isinstance(rasters, (list, tuple)) else [rasters]), records,
            getattr(model, "path", None)]


def _check_outputs(paths: list[Path], inputs: list[str], overwrite: bool) -> None:
    """Single map files (:func:`spmlkit.ownership.output_file`): never a folder, a link, an
    input raster or inside one; an existing file only when spmlkit's record names it, or
    with ``overwrite``."""
    for p in paths:
        ownership.output_file(p, inputs=inputs, overwrite=overwrite, option="-o", what="map")


def output_paths(out, species: list[str], *, per_species: bool, maps: list[str]) -> tuple[list[Path], list[Path]]:
    """``(GeoTIFFs, PNGs)``: one multi-band ``out`` (a ``.tif``) or, ``per_species``, one
    ``<species>.tif`` per species in the folder ``out``; a PNG per species in ``maps``,
    beside them (``<out stem>_<species>.png`` or ``<folder>/<species>.png``)."""
    out = Path(out)
    if per_species:
        names = _unique_safe_names(species)
        tifs = [out / f"{names[s]}.tif" for s in species]
        pngs = [out / f"{names[s]}.png" for s in maps]
    else:
        if out.suffix.lower() not in (".tif", ".tiff"):
            raise ConfigError(f"-o {out}: a multi-band GeoTIFF must end in .tif (or give --per-species and a folder)")
        tifs = [out]
        names = _unique_safe_names(species)
        pngs = [out.with_name(f"{out.stem}_{names[s]}.png") for s in maps]
    return tifs, pngs


def _requested(maps, species: list[str]) -> list[str]:
    if not maps:
        return []
    if maps.strip() == "all":
        return list(species)
    want = [m.strip() for m in maps.split(",") if m.strip()]
    unknown = [m for m in want if m not in species]
    if unknown:
        raise ConfigError(f"--maps: {unknown[0]!r} is not a species of the model ({', '.join(species[:8])}"
                          f"{', ...' if len(species) > 8 else ''})")
    return want


def predict_rasters(model, rasters, out, *, per_species: bool = False, maps: str | None = None, records=None,
                    window_rows: int | None = None, overwrite: bool = False, unseen_levels: str = "error",
                    mess: bool = False, binary: str | None = None, log=None) -> dict:
    """Write ``model``'s probability of each species on the grid of ``rasters`` (module
    docstring); returns ``{"written": [paths], "message": str, "cells": ..., "seconds": ...}``.

    The steps: open the rasters and check the outputs, open each map under a temporary
    name (:func:`_map_profile`, :func:`_open_maps`), then window by window read the cells'
    values (:func:`_window_values`), predict (:func:`_probabilities`) and write
    (:func:`_write_window`); last the figures and the message.  ``mess`` / ``binary``: the
    MESS map and the binary maps at a stored threshold (:mod:`.sdm_maps`), beside them."""
    enc = model.encoding
    if enc is None:
        raise ConfigError("this model records no covariate encoding (it was trained on ready-made features, not on "
                          "covariates by name): it cannot predict from rasters")
    if unseen_levels not in ("error", "nodata"):
        raise ConfigError(f"unseen_levels must be 'error' or 'nodata', got {unseen_levels!r}")
    stack = R.open_stack(rasters if isinstance(rasters, (list, tuple)) else [rasters]).select(list(enc.covariates))
    species = list(model.label_names)
    want = _requested(maps, species)
    tifs, pngs = output_paths(out, species, per_species=per_species, maps=want)
    inputs = _inputs(stack, rasters, records, model)
    extra = sdm_maps.plan(model, out, species, _unique_safe_names(species), per_species=per_species, mess_map=mess,
                          binary=binary, records=records)
    if per_species:  # a folder of maps spmlkit makes (and lists); its own maps are replaced, nothing else
        ownership.register_kind("maps", "a maps folder", layout=("*.tif", "*.png"))
        ownership.claim(out, "maps", inputs=inputs, create=False)
    else:
        _check_outputs(tifs + pngs + sdm_maps.files(extra), inputs, overwrite)
    overlay = _training_records(model, records, species, stack) if want else None
    if per_species:
        ownership.claim(out, "maps", inputs=inputs)
    nodata = stack.nodata
    out_nodata = np.float32(np.nan) if nodata is None else np.float32(nodata)
    rio = R.rasterio()
    profile = _map_profile(stack, out_nodata)
    t0 = time.perf_counter()
    cells = unseen = 0
    levels = {c: np.asarray(v) for c, v in enc.levels.items()}
    # each map is written under a temporary name and renamed when every window is done (spmlkit.ownership)
    with contextlib.ExitStack() as es:
        tmps = [es.enter_context(ownership.replace_file(t)) for t in tifs]
        es.enter_context(rio.Env(GDAL_CACHEMAX=R.GDAL_CACHE_MB))
        dsts = _open_maps(es, rio, tmps, profile, species, per_species, model)
        for r0, vals, valid in stack.windows(window_rows):
            n = vals.shape[1]
            raw, valid, n_unseen = _window_values(stack, enc, levels, r0, vals, valid, unseen_levels)
            unseen += n_unseen
            P = _probabilities(model, enc, raw, len(species))
            cells += len(raw)
            _write_window(dsts, P, valid, r0, n, stack, out_nodata, len(species), per_species)
    seconds = time.perf_counter() - t0
    window_rows = min(stack.window_rows(window_rows), stack.height)
    written = [str(t) for t in tifs]
    written += sdm_maps.write(extra, stack, tifs, profile, out_nodata, per_species=per_species, window_rows=window_rows)
    for s, png in zip(want, pngs):
        src = tifs[species.index(s)] if per_species else tifs[0]
        band = 1 if per_species else species.index(s) + 1
        map_figure(src, band, s, png, records=None if overlay is None else overlay.get(s))
        written.append(str(png))
    msg = (f"predicted {len(species)} species on {cells} valid cells of a {stack.height} x {stack.width} grid "
           f"({stack.height * stack.width - cells} nodata) in {seconds:.1f} s, windows of {window_rows} rows")
    if unseen:
        msg += f"; {unseen} cells with a categorical level unseen in training left nodata"
    if log is not None and want and overlay is None:
        log("note: no training records to overlay (the model's bundle is gone; name one with --records)")
    return {"written": written, "message": msg, "cells": cells, "seconds": seconds, "unseen": unseen}


def _map_profile(stack, out_nodata) -> dict:
    """The GeoTIFF profile of a map on ``stack``'s grid: float32, deflate, tiled 256 x 256
    (untiled when the grid is smaller), BigTIFF when needed."""
    profile = {"driver": "GTiff", "dtype": "float32", "nodata": float(out_nodata), "crs": stack.crs,
               "transform": stack.transform, "width": stack.width, "height": stack.height, "compress": "deflate",
               "tiled": True, "blockxsize": 256, "blockysize": 256, "BIGTIFF": "IF_SAFER"}
    if stack.width < 256 or stack.height < 256:
        profile.update(tiled=False, blockxsize=None, blockysize=None)
        profile = {k: v for k, v in profile.items() if v is not None}
    return profile


def _open_maps(es, rio, tmps: list, profile: dict, species: list, per_species: bool, model) -> list:
    """Open each map (under its temporary name) for writing in the exit stack ``es``, tagged
    with the scale and the model, each band named by its species."""
    dsts = [es.enter_context(rio.open(t, "w", **profile, count=len(species) if not per_species else 1))
            for t in tmps]
    for d, s in zip(dsts, species if per_species else [None]):
        d.update_tags(**{TAG: SCALE, "model": str(getattr(model, "path", "") or "")})
        for b, name in enumerate([s] if per_species else species):
            d.set_band_description(b + 1, name)
    return dsts


def _window_values(stack, enc, levels: dict, r0: int, vals, valid, unseen_levels: str):
    """A window's covariate values on its valid cells; a categorical level the model never
    saw is an error naming the cell (``unseen_levels='error'``) or leaves the cell nodata.
    Returns ``(values, valid mask, cells left nodata for an unseen level)``."""
    n = vals.shape[1]
    unseen = 0
    raw = vals.reshape(len(stack.layers), -1)[:, valid.ravel()].T
    bad = np.zeros(len(raw), dtype=bool)
    for j, c in enumerate(enc.covariates):
        if c in levels:
            b = ~np.isin(raw[:, j], levels[c])
            if b.any() and unseen_levels == "error":
                k = int(np.flatnonzero(b)[0])
                where = np.flatnonzero(valid.ravel())[k]
                x, y = stack.cell_centres([r0 + where // stack.width], [where % stack.width])[0]
                layer = stack.layers[j]
                raise DataFormatError(layer.path, f"layer {c!r} has level {raw[k, j]:g} (first at x "
                                      f"{x:g}, y {y:g}; {int(b.sum())} cell(s) in rows {r0}-{r0 + n - 1}) "
                                      "that the model never saw in training (its levels: "
                                      f"{', '.join(f'{v:g}' for v in levels[c])}); pass --unseen-levels "
                                      "nodata to leave such cells empty")
            bad |= b
    if bad.any():
        unseen += int(bad.sum())
        keep_flat = np.flatnonzero(valid.ravel())[~bad]
        valid = np.zeros(valid.size, dtype=bool)
        valid[keep_flat] = True
        valid = valid.reshape(n, stack.width)
        raw = raw[~bad]
    return raw, valid, unseen


def _probabilities(model, enc, raw: np.ndarray, n_species: int) -> np.ndarray:
    """The model's probability of each species on the cells' covariate values ``raw``
    (encoded; predicted 16,384 cells at a time)."""
    P = np.empty((len(raw), n_species), dtype=np.float32)
    if len(raw):
        X = enc.transform(raw, unseen="ignore")
        for s, logits in model.iter_decision_function(X, 16384):
            P[s:s + len(logits)] = expit(logits)
    return P


def _write_window(dsts: list, P: np.ndarray, valid, r0: int, n: int, stack, out_nodata, n_species: int,
                  per_species: bool) -> None:
    """Write a window's probabilities ``P`` (its valid cells; the others nodata) into the
    maps: one band per species, or one map per species."""
    block = np.full((n_species, n * stack.width), out_nodata, dtype=np.float32)
    block[:, valid.ravel()] = P.T
    block = block.reshape(n_species, n, stack.width)
    from rasterio.windows import Window  # lazy: optional dependency

    win = Window(0, r0, stack.width, n)
    if per_species:
        for d, b in zip(dsts, block):
            d.write(b, 1, window=win)
    else:
        dsts[0].write(block, window=win)


def _training_records(model, records, species: list[str], stack) -> dict | None:
    """``{species: {"train": (n, 2) x, y, "val": ...}}`` of the records the model saw (the
    train and validation rows that observe the species) of ``records`` (a bundle) or of the
    model's bundle; None when there is none, or it has no places."""
    path = records or (model.info or {}).get("bundle")
    if not path or not (Path(path) / "meta.json").exists():
        if records:
            raise ConfigError(f"--records {records}: not a prepared bundle (no meta.json)")
        return None
    b = Bundle(path)
    if list(b.label_names) != species:
        raise ConfigError(f"--records {path}: its species are not the model's; give the bundle the model was "
                          "trained on")
    crs = (b.meta.get("places") or {}).get("crs")
    if crs and stack.crs is not None and not same_crs(parse_crs(crs), stack.crs):
        raise ConfigError(f"the records of {path} are in {crs} but the rasters are in {crs_name(stack.crs)}; they "
                          "cannot be drawn on this map")
    out: dict = {s: {} for s in species}
    for split in ("train", "val"):
        if not b.size(split):
            continue
        xy = b.xy(split)
        if xy is None:
            return None
        Z = np.asarray(b.observations(split))
        for j, s in enumerate(species):
            out[s][split] = xy[Z[:, j] == 1]
    return out


#: the colour of the valid-data outline (the edge between cells with data and nodata: a coastline
#: where the nodata is the sea), drawn from the raster itself, with no outside map data
OUTLINE_COLOUR = "#3a3a3a"


def _data_outline(ax, a, bounds) -> bool:
    """Draw the edge of the raster's valid cells (a contour of the nodata mask at 0.5) on
    ``ax``, labelled for the legend; False when every cell (or none) has data."""
    valid = ~np.ma.getmaskarray(a)
    if valid.all() or not valid.any():
        return False
    ax.contour(valid.astype(np.float32), levels=[0.5], colors=OUTLINE_COLOUR, linewidths=0.6, origin="upper",
               extent=(bounds.left, bounds.right, bounds.bottom, bounds.top))
    ax.plot([], [], color=OUTLINE_COLOUR, linewidth=0.6, label="edge of the data (grey: no data)")
    return True


def map_figure(tif, band: int, species: str, out, *, records=None, max_pixels: int = 1600) -> Path:
    """A PNG of band ``band`` of the GeoTIFF ``tif`` (the model's output 0-1, :data:`SCALE`;
    nodata cells grey, apart from low values), the species name as title, a colour bar,
    and ``records`` drawn as points: an ``(n, 2)`` array ("records"), or ``{split: (n, 2)}``
    (training and validation records apart, each counted in the legend).  Rasters wider or
    taller than ``max_pixels`` are read decimated."""
    import matplotlib  # lazy: matplotlib, only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib, only when a figure is drawn

    rio = rasterio()
    with rio.open(tif) as ds:
        f = max(1, int(np.ceil(max(ds.width, ds.height) / max_pixels)))
        a = ds.read(band, out_shape=(max(1, ds.height // f), max(1, ds.width // f)), masked=True)
        b = ds.bounds
        geographic = ds.crs is not None and ds.crs.is_geographic
    aspect = min(1.6, max(0.5, (b.top - b.bottom) / max(b.right - b.left, 1e-9)))
    fig, ax = plt.subplots(figsize=(6.6, 5.2 * aspect + 0.8), layout="constrained")
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=NODATA_COLOUR)  # no data (sea) is not a low value
    im = ax.imshow(a, extent=(b.left, b.right, b.bottom, b.top), vmin=0, vmax=1, cmap=cmap,
                   interpolation="nearest")
    outline = _data_outline(ax, a, b)
    parts = records if isinstance(records, dict) else {"records": records} if records is not None else {}
    style = {"train": ("#d62728", "o", "training records"), "val": ("#ff7f0e", "^", "validation records"),
             "records": ("#d62728", "o", "records")}
    for split, xy in parts.items():
        if xy is not None and len(xy):
            colour, marker, what = style.get(split, style["records"])
            ax.scatter(xy[:, 0], xy[:, 1], s=8, c=colour, marker=marker, edgecolors="white", linewidths=0.4,
                       label=f"{what} ({len(xy)})")
    if outline or any(xy is not None and len(xy) for xy in parts.values()):
        ax.legend(loc="lower left", fontsize=8, framealpha=0.8)
    ax.set_title(species, fontstyle="italic")
    ax.set_xlabel("longitude" if geographic else "x")
    ax.set_ylabel("latitude" if geographic else "y")
    fig.colorbar(im, ax=ax, shrink=0.9, label="relative suitability (model output; grey: no data)")
    out = Path(out)
    with replace_file(out) as tmp:
        fig.savefig(tmp, format="png", dpi=110, metadata={"Software": f"{PNG_SOFTWARE} map"})
    plt.close(fig)
    return out
