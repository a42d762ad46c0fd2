"""Maps beside the suitability map (``spml predict RUN --rasters ... --mess --binary RULE``).

* **MESS map** (``--mess``): the multivariate environmental similarity surface of Elith,
  Kearney & Phillips (2010, *Methods Ecol. Evol.* 1:330–342; :func:`.sdm_metrics.mess`)
  of every cell against the covariates of the rows the model was fitted on (its bundle's
  training rows, and validation rows too when the run was refitted on them): the minimum
  over covariates of each covariate's similarity, ≤ 100; **negative where at least one
  covariate is outside the training range** (the map there is an extrapolation), 0 at the
  edge of the range, 100 at the median.  Continuous covariates only: a categorical level
  the model never saw is what ``--unseen-levels`` reports; a covariate constant in the
  training rows is left out (the formula divides by its range).  One float32 band,
  ``<out stem>_mess.tif`` (``mess.tif`` in a ``--per-species`` folder), nodata as the map.
* **Binary maps** (``--binary max-tss`` or ``--binary p10``): ``1`` where the species'
  suitability is at or above its threshold, ``0`` below, ``255`` without data (uint8), with
  the thresholds ``spml train`` stored in ``RUN/sdm_metrics.json`` (:mod:`.sdm_report`):
  the maximum TSS (sensitivity + specificity − 1; Allouche et al. 2006; Liu et al. 2005)
  or the 10th-percentile training presence (MaxEnt's; Phillips et al. 2006).  Computed
  from the written suitability map's values, so a cell is 1 exactly when the GeoTIFF's
  value is >= the threshold (compared in float32, the map's precision: the record whose
  score sets the threshold is at or above it).  ``<out stem>_binary.tif`` (a band per species) or
  ``<species>_binary.tif`` per species.

Both are checked before anything is written (the thresholds are there, the reference rows
are there, the outputs may be written) and written under temporary names, window by
window, through :mod:`spmlkit.ownership`.
"""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np

from .. import ownership
from ..data import Bundle
from ..data.rasters import rasterio
from ..errors import ConfigError
from .sdm_metrics import mess

#: ``--binary`` rules -> the key of the threshold in ``RUN/sdm_metrics.json``
RULES = {"max-tss": "max_tss", "p10": "p10_training_presence"}
BINARY_NODATA = 255


def _run_folder(model) -> Path | None:
    path = getattr(model, "path", None)
    if path is None:
        return None
    path = Path(path)
    return path.parent if path.name == "model" else path


def stored_thresholds(model, rule: str) -> list[float]:
    """Each species' threshold of ``rule`` (``max-tss`` / ``p10``) stored by ``spml train``
    beside the model (``RUN/sdm_metrics.json``); a one-line error when there is none."""
    if rule not in RULES:
        raise ConfigError(f"--binary must be one of {', '.join(RULES)}, got {rule!r}")
    run = _run_folder(model)
    f = None if run is None else run / "sdm_metrics.json"
    if f is None or not f.is_file():
        raise ConfigError(f"--binary {rule}: no thresholds stored beside the model ({f or 'a model in memory'}: "
                          "spml train writes them on presence-only data); give the run folder spml train wrote")
    try:
        th = json.loads(f.read_text(encoding="utf-8"))["thresholds"]
        out = [th[s][RULES[rule]]["threshold"] for s in model.label_names]
    except (ValueError, KeyError, TypeError):
        raise ConfigError(f"{f}: no {RULES[rule]} threshold for every species of the model; train the run "
                          "again") from None
    missing = [s for s, t in zip(model.label_names, out) if not isinstance(t, (int, float))]
    if missing:
        raise ConfigError(f"{f}: species {missing[0]!r} has no {RULES[rule]} threshold (too few records or no "
                          "background in the split it is found on)")
    return [float(t) for t in out]


def mess_reference(model, records=None) -> tuple[np.ndarray, list[int]]:
    """``(reference (R, C'), covariate indices)``: the raw values of the model's continuous
    covariates on the rows it was fitted on (``records`` or the model's bundle: training
    rows, and validation rows when its run was refitted); a one-line error without them."""
    enc = model.encoding
    path = records or (model.info or {}).get("bundle")
    if not path or not (Path(path) / "meta.json").exists():
        raise ConfigError("--mess: the model's training bundle is not there to give the training range; name it "
                          "with --records BUNDLE")
    b = Bundle(path)
    if list(b.label_names) != list(model.label_names) or (b.meta.get("encoding") or {}).get("covariates") != list(
            enc.covariates):
        raise ConfigError(f"--records {path}: not the bundle the model was trained on (other species or covariates)")
    run = _run_folder(model)
    splits = ["train"] + (["val"] if run is not None and (run / "refit.json").is_file() else [])
    groups = [(j, cols) for j, (c, cols) in enumerate(enc.groups()) if c not in enc.levels]
    if not groups:
        raise ConfigError("--mess: the model has no continuous covariate (MESS compares continuous ranges)")
    X = np.concatenate([np.asarray(b.features(s))[:, [int(cols[0]) for _, cols in groups]] for s in splits
                        if b.size(s)])
    return X.astype(np.float64), [j for j, _ in groups]


def extra_paths(out, species: list[str], names: dict, *, per_species: bool, mess_map: bool,
                binary: str | None) -> dict:
    """``{"mess": path | None, "binary": [paths]}`` beside the suitability map(s)."""
    out = Path(out)
    if per_species:
        m = out / "mess.tif"
        if mess_map and any(names[s] == "mess" for s in species):
            raise ConfigError("--mess: a species' map is named mess.tif in the --per-species folder; write the maps "
                              "as one multi-band file instead")
        b = [out / f"{names[s]}_binary.tif" for s in species]
    else:
        m = out.with_name(f"{out.stem}_mess.tif")
        b = [out.with_name(f"{out.stem}_binary.tif")]
    return {"mess": m if mess_map else None, "binary": b if binary else []}


def _profile(base: dict, dtype: str, nodata, count: int) -> dict:
    return {**base, "dtype": dtype, "nodata": nodata, "count": count}


def write_mess(stack, reference: np.ndarray, columns: list[int], path: Path, profile: dict, out_nodata,
               window_rows=None) -> None:
    """The MESS of every valid cell of ``stack`` (its layers in the model's covariate order)
    against ``reference``, window by window, into ``path`` (float32, one band)."""
    from rasterio.windows import Window  # lazy: optional dependency

    rio = rasterio()
    with ownership.replace_file(path) as tmp, rio.open(tmp, "w", **_profile(profile, "float32", float(out_nodata),
                                                                            1)) as dst:
        dst.update_tags(SPMLKIT_MAP="MESS (Elith et al. 2010): negative = outside the training range")
        dst.set_band_description(1, "MESS")
        for r0, vals, valid in stack.windows(window_rows):
            n = vals.shape[1]
            block = np.full(n * stack.width, out_nodata, dtype=np.float32)
            pts = vals.reshape(len(stack.layers), -1)[columns][:, valid.ravel()].T
            if len(pts):
                block[valid.ravel()] = mess(reference, pts)
            dst.write(block.reshape(1, n, stack.width), window=Window(0, r0, stack.width, n))


def write_binary(tifs: list[Path], thresholds: list[float], paths: list[Path], profile: dict, *,
                 per_species: bool) -> None:
    """``1`` where the suitability map's value is >= the species' threshold, ``0`` below,
    255 on its nodata; read and written window by window."""
    rio = rasterio()
    pairs = ([([t], [thr], [1], p) for t, thr, p in zip(tifs, thresholds, paths)] if per_species else
             [(tifs * len(thresholds), thresholds, list(range(1, len(thresholds) + 1)), paths[0])])
    for srcs, thr, bands, path in pairs:
        with contextlib.ExitStack() as es:
            src = es.enter_context(rio.open(srcs[0]))
            tmp = es.enter_context(ownership.replace_file(path))
            dst = es.enter_context(rio.open(tmp, "w", **_profile(profile, "uint8", BINARY_NODATA, len(bands))))
            dst.update_tags(SPMLKIT_MAP="binary map: 1 = suitability >= threshold",
                            thresholds=json.dumps([float(t) for t in thr]))
            for b in range(1, len(bands) + 1):
                dst.set_band_description(b, src.descriptions[bands[b - 1] - 1] or "")
            for _, win in src.block_windows(1):
                a = src.read(bands, window=win, masked=True)
                # at the map's float32 precision: the record that sets a threshold is at or above it
                out = np.where(a.data >= np.asarray(thr, dtype=np.float32)[:, None, None], 1, 0).astype(np.uint8)
                out[np.ma.getmaskarray(a) | ~np.isfinite(a.data)] = BINARY_NODATA
                dst.write(out, window=win)


def plan(model, out, species: list[str], names: dict, *, per_species: bool, mess_map: bool, binary: str | None,
         records=None) -> dict | None:
    """What ``--mess`` / ``--binary`` will write, checked before anything is: ``{"paths",
    "thresholds", "reference", "columns"}``, or None when neither is asked for."""
    if not mess_map and not binary:
        return None
    thresholds = stored_thresholds(model, binary) if binary else None
    reference, columns = mess_reference(model, records) if mess_map else (None, None)
    paths = extra_paths(out, species, names, per_species=per_species, mess_map=mess_map, binary=binary)
    return {"paths": paths, "thresholds": thresholds, "reference": reference, "columns": columns, "rule": binary}


def files(extra: dict | None) -> list[Path]:
    """The files a plan writes."""
    if extra is None:
        return []
    return [p for p in [extra["paths"]["mess"], *extra["paths"]["binary"]] if p is not None]


def write(extra: dict | None, stack, tifs: list[Path], profile: dict, out_nodata, *, per_species: bool,
          window_rows=None) -> list[str]:
    """Write the planned maps (after the suitability maps ``tifs``); their paths."""
    if extra is None:
        return []
    if extra["paths"]["mess"] is not None:
        write_mess(stack, extra["reference"], extra["columns"], extra["paths"]["mess"], profile, out_nodata,
                   window_rows)
    if extra["thresholds"] is not None:
        write_binary(tifs, extra["thresholds"], extra["paths"]["binary"], profile, per_species=per_species)
    return [str(p) for p in files(extra)]
