"""Covariate rasters: a stack of GDAL rasters on one grid, covariates at
points, background points drawn from the valid cells, and window-by-window reading.

Reading is done by GDAL through ``rasterio`` (the optional extra ``[geo]``: ``pip install
'spmlkit[geo]'``), so any format GDAL reads works: GeoTIFF, the R ``raster`` package's
``.grd``/``.gri``, ASCII grids, ...  Every step reads the rasters in **windows** of
``window_rows`` rows, so memory stays bounded for rasters larger than memory.

Windows hold about :data:`WINDOW_CELLS` cells (whole rows: ``65536 // width`` of them,
at least one) unless ``window_rows`` is given.

The stack
---------
:func:`open_stack` takes files and folders (a folder: every raster file in it, sorted
by name).  A single-band file's covariate is its **file name** without the extension
(``bio1.grd`` -> ``bio1``); a multi-band file's bands are named by their band
descriptions.  Every layer must share one grid (CRS, transform, width and height):
a layer on another grid is a one-line :class:`~spmlkit.errors.DataFormatError` naming
it, never resampled silently.  A cell is **valid** where every layer has data (not
nodata, not masked).

Points and their CRS
--------------------
Records give places as ``x``, ``y`` in a CRS (default ``EPSG:4326``: longitude and
latitude, as GBIF exports them); :func:`check_crs` refuses a stack in another CRS with
one line naming both (reproject the records or the rasters first — spmlkit does not
reproject).  :func:`extract` returns each point's covariates and a status: on a valid
cell, off the rasters, or on a nodata cell.

Background
----------
:func:`sample_background` draws ``n`` distinct valid cells (seeded), uniformly or with
probability proportional to a **bias** raster (e.g. sampling effort: Phillips et al.
2009's target-group background), within an optional **mask** (cells where the mask is
nodata or 0 are excluded).  It is weighted sampling without replacement by
Efraimidis & Spirakis (2006): each valid cell gets the key ``u^(1/w)`` (``u`` uniform in
(0, 1), ``w`` its weight) and the ``n`` largest keys are kept — one pass over the
windows, memory O(window + n), and the draw does not depend on the window size (the
uniform numbers are consumed in row-major cell order).
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

import numpy as np

from ..errors import ConfigError, DataFormatError, SpmlError
from ..reading import check_regular, env_count, read_text

#: file name endings taken as rasters when a folder is given (other files — the
#: ``.gri`` beside a ``.grd``, ``.aux.xml``, ``.prj``, notes — are not layers)
RASTER_SUFFIXES = (".tif", ".tiff", ".grd", ".asc", ".img", ".vrt", ".bil", ".nc", ".flt", ".rst", ".sdat")
#: the CRS of records' x, y when none is given: longitude, latitude (WGS84), as GBIF gives them
DEFAULT_RECORDS_CRS = "EPSG:4326"
#: cells per window when ``window_rows`` is not given: memory per window is this times
#: (layers + species) numbers, whatever the raster's size
WINDOW_CELLS = 1 << 16
#: GDAL's block cache (MB) while spmlkit reads or writes rasters: GDAL's default is 5% of
#: the machine's memory, which a large raster fills, so peak memory would grow with it
GDAL_CACHE_MB = 64
#: extraction status codes
VALID, OFF_RASTER, NODATA = 0, 1, 2
STATUS_NAMES = {OFF_RASTER: "outside the rasters", NODATA: "on a nodata cell"}
#: most cells (rows x columns x bands) one raster may declare (``SPML_RASTER_MAX_CELLS``
#: overrides it): 4.3e9, four times a global 30 arc-second grid (43,200 x 21,600)
RASTER_MAX_CELLS = 2 ** 32


def rasterio():
    """The ``rasterio`` module, or a one-line :class:`SpmlError` saying how to install it.

    GDAL's Python pixel functions in ``.vrt`` files are switched off first
    (``GDAL_VRT_ENABLE_PYTHON=NO``, whatever the user's environment says): a raster
    folder is data, and reading it never runs code."""
    os.environ["GDAL_VRT_ENABLE_PYTHON"] = "NO"  # before GDAL opens anything (it reads its config from here)
    try:
        import rasterio as rio  # lazy: optional dependency
    except ImportError:
        raise SpmlError("raster input and output need rasterio (GDAL): pip install 'spmlkit[geo]'") from None
    return rio


def check_raster_file(path: Path) -> None:
    """The reader rule for a raster file before GDAL opens it: a regular file, and a
    ``.vrt`` (GDAL's XML description of other rasters) may reference only files in its own
    folder (or below) and hold no pixel-function code."""
    check_regular(path)
    if path.suffix.lower() != ".vrt":
        return
    text, _ = read_text(path)
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise DataFormatError(path, f"not a readable VRT (invalid XML: {exc})") from None
    if any(el.tag in ("PixelFunctionCode", "PixelFunctionLanguage") for el in root.iter()):
        raise DataFormatError(path, "holds a pixel function (code GDAL would run); spmlkit reads only VRTs that "
                                    "reference rasters")
    home = path.resolve().parent
    for el in root.iter():
        if el.tag not in ("SourceFilename", "SourceDataset", "OverviewDataset") or not (el.text or "").strip():
            continue
        ref = el.text.strip()
        target = (home / ref) if el.get("relativeToVRT", "0") == "1" or el.tag != "SourceFilename" else Path(ref)
        if ref.startswith("/vsi") or ":" in ref.split("/")[0] or not target.resolve().is_relative_to(home):
            raise DataFormatError(path, f"references {ref!r}, outside its folder {home}; a VRT may reference only "
                                        "rasters beside it")


def check_raster_size(path, width: int, height: int, count: int) -> None:
    """Refuse a raster declaring more cells than the budget (:data:`RASTER_MAX_CELLS`, or
    ``SPML_RASTER_MAX_CELLS``) before any window is read: a small file may declare
    200,000 x 200,000 cells, which would keep every step busy for hours."""
    limit = env_count("SPML_RASTER_MAX_CELLS", RASTER_MAX_CELLS)
    cells = int(width) * int(height) * max(int(count), 1)
    if cells > limit:
        raise DataFormatError(path, f"declares {height:,} rows x {width:,} columns x {count} band(s) = {cells:,} "
                                    f"cells, more than the raster budget ({limit:,} cells; SPML_RASTER_MAX_CELLS "
                                    "raises it); crop or resample the raster")


def parse_crs(value, *, what: str = "CRS"):
    """A ``rasterio.crs.CRS`` from ``value`` (``EPSG:4326``, a PROJ string, WKT)."""
    rio = rasterio()
    try:
        return rio.crs.CRS.from_user_input(value)
    except Exception as exc:  # rasterio raises CRSError, a plain Exception subclass
        raise ConfigError(f"{what} {value!r} is not a coordinate reference system GDAL knows ({exc})") from None


def crs_name(crs) -> str:
    """A short name of ``crs`` for messages: ``EPSG:4326``, ``OGC:CRS84`` or its PROJ string."""
    if crs is None:
        return "no CRS"
    s = crs.to_string()
    if len(s) > 60:
        epsg = crs.to_epsg()
        s = f"EPSG:{epsg}" if epsg else crs.to_proj4() or s[:60] + "..."
    return s


def _norm(crs) -> dict:
    d = {k: v for k, v in crs.to_dict().items() if k not in ("no_defs", "wktext", "type")}
    if str(d.get("towgs84", "")).strip("0,. ") == "":
        d.pop("towgs84", None)
    if d.get("ellps") == "WGS84" and "datum" not in d:
        d["datum"] = "WGS84"
    if "datum" in d:
        d.pop("ellps", None)
    return d


def same_crs(a, b) -> bool:
    """True when CRSs ``a`` and ``b`` describe the same coordinates (``EPSG:4326`` and the
    longitude-latitude WGS84 of an R raster are the same for x = longitude, y = latitude)."""
    if a is None or b is None:
        return a is None and b is None
    return a == b or _norm(a) == _norm(b)


@dataclass
class Layer:
    name: str
    path: Path
    band: int
    nodata: float | None
    dtype: str


@dataclass
class RasterStack:
    """Covariate layers on one grid (see :func:`open_stack`)."""

    layers: list[Layer]
    crs: object
    transform: object
    width: int
    height: int
    sources: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [l.name for l in self.layers]

    @property
    def nodata(self) -> float | None:
        """The nodata value of the first layer (what outputs on this grid use)."""
        return self.layers[0].nodata

    def grid(self) -> dict:
        """The grid as JSON: CRS (WKT), transform, width, height."""
        return {"crs": self.crs.to_wkt() if self.crs is not None else None, "crs_name": crs_name(self.crs),
                "transform": list(self.transform)[:6], "width": self.width, "height": self.height}

    def select(self, names) -> "RasterStack":
        """The layers ``names`` in that order; a covariate with no layer is a one-line
        :class:`DataFormatError` naming it and the layers there are."""
        by = {l.name: l for l in self.layers}
        missing = [n for n in names if n not in by]
        if missing:
            raise DataFormatError(", ".join(self.sources[:3]) + (" ..." if len(self.sources) > 3 else ""),
                                  f"no raster for covariate {missing[0]!r}"
                                  + (f" (nor {', '.join(map(repr, missing[1:4]))})" if len(missing) > 1 else "")
                                  + f"; the rasters here are {', '.join(by)}")
        return RasterStack([by[n] for n in names], self.crs, self.transform, self.width, self.height, self.sources)

    @contextlib.contextmanager
    def opened(self):
        """The open datasets, one per layer (a file with several layers is opened once)."""
        rio = rasterio()
        with contextlib.ExitStack() as stack:
            stack.enter_context(rio.Env(GDAL_CACHEMAX=GDAL_CACHE_MB))
            files = {}
            for l in self.layers:
                if l.path not in files:
                    files[l.path] = stack.enter_context(rio.open(l.path))
            yield [files[l.path] for l in self.layers]

    def read_window(self, datasets, row0: int, nrows: int, col0: int = 0, ncols: int | None = None):
        """``(values (C, nrows, ncols) float64, valid (nrows, ncols) bool)`` of a window."""
        from rasterio.windows import Window  # lazy: optional dependency

        ncols = self.width - col0 if ncols is None else ncols
        win = Window(col0, row0, ncols, nrows)
        vals = np.empty((len(self.layers), nrows, ncols))
        valid = np.ones((nrows, ncols), dtype=bool)
        for i, (l, ds) in enumerate(zip(self.layers, datasets)):
            try:
                a = ds.read(l.band, window=win, masked=True)
            except OSError as exc:  # rasterio's RasterioIOError: a damaged block, not the disk
                first = (str(exc).strip().splitlines() or ["unreadable"])[0]
                raise DataFormatError(l.path, f"band {l.band}, rows {row0 + 1}-{row0 + nrows}: the raster cannot be "
                                              f"read there ({first}); the file is damaged or truncated") from None
            m = np.ma.getmaskarray(a)
            data = np.ma.getdata(a).astype(np.float64)
            valid &= ~m & np.isfinite(data)
            vals[i] = data
        return vals, valid

    def window_rows(self, window_rows: int | None = None) -> int:
        """Rows per window: ``window_rows``, or about :data:`WINDOW_CELLS` cells of whole rows."""
        return int(window_rows) if window_rows else max(1, WINDOW_CELLS // max(self.width, 1))

    def windows(self, window_rows: int | None = None):
        """``(row0, values, valid)`` for consecutive windows of whole rows."""
        window_rows = self.window_rows(window_rows)
        with self.opened() as ds:
            for r in range(0, self.height, window_rows):
                n = min(window_rows, self.height - r)
                vals, valid = self.read_window(ds, r, n)
                yield r, vals, valid

    def cell_centres(self, rows, cols) -> np.ndarray:
        """``(n, 2)`` x, y of the centres of cells ``(rows, cols)``."""
        t = self.transform
        c = np.asarray(cols, dtype=np.float64) + 0.5
        r = np.asarray(rows, dtype=np.float64) + 0.5
        return np.column_stack([t.a * c + t.b * r + t.c, t.d * c + t.e * r + t.f])

    def cells(self, xy) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cols)`` of the cells holding points ``xy`` (may be outside the grid)."""
        inv = ~self.transform
        xy = np.asarray(xy, dtype=np.float64)
        col = inv.a * xy[:, 0] + inv.b * xy[:, 1] + inv.c
        row = inv.d * xy[:, 0] + inv.e * xy[:, 1] + inv.f
        ok = np.isfinite(row) & np.isfinite(col) & (np.abs(row) < 2**62) & (np.abs(col) < 2**62)
        return (np.where(ok, np.floor(np.where(ok, row, 0)), -1).astype(np.int64),
                np.where(ok, np.floor(np.where(ok, col, 0)), -1).astype(np.int64))


def _files(sources) -> list[Path]:
    out = []
    for s in sources:
        p = Path(s)
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in RASTER_SUFFIXES)
            if not found:
                raise DataFormatError(p, f"no raster files ({', '.join(RASTER_SUFFIXES)}) in this folder")
            out.extend(found)
        elif p.exists():
            check_regular(p)  # a pipe or a device: refused, never read
            out.append(p)
        else:
            raise DataFormatError(p, "raster file or folder not found")
    return out


def open_stack(sources, *, window_check: bool = True) -> RasterStack:
    """The raster stack of ``sources`` (files and folders; see the module docstring)."""
    rio = rasterio()
    files = _files([sources] if isinstance(sources, (str, Path)) else sources)
    layers, grid = [], None
    for f in files:
        check_raster_file(f)
        try:
            with rio.open(f) as ds:
                check_raster_size(f, ds.width, ds.height, ds.count)
                g = (ds.crs, ds.transform, ds.width, ds.height)
                if ds.count == 1:
                    names = [f.name[:-len(f.suffix)] if f.suffix else f.name]
                else:
                    names = [d or f"{f.stem}_{i + 1}" for i, d in enumerate(ds.descriptions)]
                for i, n in enumerate(names):
                    layers.append(Layer(n, f, i + 1, ds.nodatavals[i], ds.dtypes[i]))
        except rio.errors.RasterioIOError as exc:
            first = (str(exc).strip().splitlines() or ["unreadable"])[0]
            raise DataFormatError(f, f"not a raster GDAL can read ({first})") from None
        if grid is None:
            grid, first_file = g, f
        else:
            if not same_crs(g[0], grid[0]):
                raise DataFormatError(f, f"its CRS is {crs_name(g[0])} but {first_file.name}'s is "
                                         f"{crs_name(grid[0])}; every covariate raster must be on one grid")
            if g[2:] != grid[2:] or not g[1].almost_equals(grid[1]):
                raise DataFormatError(f, f"its grid ({g[3]} rows x {g[2]} columns, origin {g[1].c:g}, {g[1].f:g}, "
                                         f"cell {g[1].a:g} x {-g[1].e:g}) differs from {first_file.name}'s ({grid[3]} x "
                                         f"{grid[2]}, origin {grid[1].c:g}, {grid[1].f:g}, cell {grid[1].a:g} x "
                                         f"{-grid[1].e:g}); resample the rasters to one grid first")
    names = [l.name for l in layers]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise DataFormatError(next(l.path for l in layers if l.name == dup),
                              f"two rasters give the covariate {dup!r}; each covariate needs one layer")
    if not layers:
        raise DataFormatError(", ".join(map(str, sources)), "no raster layers")
    return RasterStack(layers, grid[0], grid[1], grid[2], grid[3], [str(f) for f in files])


def check_crs(records_crs, stack: RasterStack, *, records: str = "records") -> None:
    """A one-line :class:`ConfigError` naming both CRSs when the records' CRS is not the
    rasters' (spmlkit does not reproject)."""
    if not same_crs(records_crs, stack.crs):
        raise ConfigError(f"{records} are in {crs_name(records_crs)} but the rasters ({Path(stack.sources[0]).name}, "
                          f"...) are in {crs_name(stack.crs)}; reproject one of them (or give the records' CRS with "
                          "--crs)")


def check_same_grid(path, stack: RasterStack, what: str):
    """The single-band raster ``path`` (a mask or a bias raster) as a stack of one layer
    on ``stack``'s grid, else a one-line :class:`DataFormatError`."""
    other = open_stack([path])
    if len(other.layers) != 1:
        raise DataFormatError(path, f"the {what} raster must have one band, found {len(other.layers)}")
    if not same_crs(other.crs, stack.crs) or (other.width, other.height) != (stack.width, stack.height) \
            or not other.transform.almost_equals(stack.transform):
        raise DataFormatError(path, f"the {what} raster is not on the covariates' grid ({crs_name(other.crs)}, "
                                    f"{other.height} x {other.width}; expected {crs_name(stack.crs)}, "
                                    f"{stack.height} x {stack.width} with the same origin and cell size)")
    return other


def extract(stack: RasterStack, xy, *, window_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Covariates at points ``xy`` ``(N, 2)`` (in the stack's CRS): ``(values (N, C) float64,
    status (N,))`` with status :data:`VALID`, :data:`OFF_RASTER` or :data:`NODATA` (values of
    the other rows are NaN).  Rasters are read in windows of ``window_rows`` rows holding
    points, so a point costs no more than its window."""
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    rows, cols = stack.cells(xy)
    status = np.full(len(xy), OFF_RASTER, dtype=np.int8)
    values = np.full((len(xy), len(stack.layers)), np.nan)
    inside = (rows >= 0) & (rows < stack.height) & (cols >= 0) & (cols < stack.width) & np.isfinite(xy).all(1)
    if not inside.any():
        return values, status
    window_rows = stack.window_rows(window_rows)
    with stack.opened() as ds:
        for r0 in np.unique(rows[inside] // window_rows) * window_rows:
            sel = np.flatnonzero(inside & (rows >= r0) & (rows < r0 + window_rows))
            n = min(window_rows, stack.height - int(r0))
            vals, valid = stack.read_window(ds, int(r0), n)
            rr, cc = rows[sel] - r0, cols[sel]
            ok = valid[rr, cc]
            values[sel[ok]] = vals[:, rr[ok], cc[ok]].T
            status[sel] = np.where(ok, VALID, NODATA)
    return values, status


def sample_background(stack: RasterStack, n: int, *, seed: int = 0, mask=None, bias=None,
                      window_rows: int | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """``n`` distinct valid cells drawn with probability proportional to ``bias`` (uniform
    without), inside ``mask`` (see the module docstring): ``(xy (m, 2) cell centres,
    values (m, C), info)`` with ``m = min(n, valid cells)``; ``info`` counts the valid
    cells and says when all of them were taken.  Rows are in row-major cell order."""
    extra = [(check_same_grid(p, stack, what), what) for p, what in ((mask, "mask"), (bias, "bias")) if p is not None]
    rng = np.random.default_rng(seed)
    window_rows = stack.window_rows(window_rows)
    keys = np.empty(0)
    cells = np.empty(0, dtype=np.int64)
    vals = np.empty((0, len(stack.layers)))
    total = 0
    with contextlib.ExitStack() as es:
        ds = es.enter_context(stack.opened())
        eds = [(es.enter_context(s.opened()), s, what) for s, what in extra]
        for r in range(0, stack.height, window_rows):
            m = min(window_rows, stack.height - r)
            v, valid = stack.read_window(ds, r, m)
            w = np.ones(valid.shape)
            for d, s, what in eds:
                ev, evalid = s.read_window(d, r, m)
                if what == "mask":
                    valid &= evalid & (ev[0] != 0)
                else:
                    valid &= evalid & (ev[0] > 0)
                    w = np.where(evalid, ev[0], 0.0)
            idx = np.flatnonzero(valid.ravel())
            total += len(idx)
            if not len(idx):
                continue
            u = rng.random(len(idx))
            k = np.log(u) / w.ravel()[idx]  # log of u^(1/w): the same order, no underflow
            keys = np.concatenate([keys, k])
            cells = np.concatenate([cells, r * stack.width + idx])
            vals = np.concatenate([vals, v.reshape(len(stack.layers), -1)[:, idx].T])
            if len(keys) > n:
                top = np.argpartition(-keys, n - 1)[:n]
                keys, cells, vals = keys[top], cells[top], vals[top]
    if total == 0:
        raise DataFormatError(stack.sources[0], "no valid cell (every cell is nodata in some layer"
                              + (" or outside the mask" if mask is not None else "") + "): nothing to draw background from")
    order = np.argsort(cells)
    cells, vals = cells[order], vals[order]
    xy = stack.cell_centres(cells // stack.width, cells % stack.width)
    return xy, vals, {"valid_cells": int(total), "drawn": int(len(cells)), "all_taken": bool(total <= n),
                      "weighted": bias is not None, "masked": mask is not None}
