"""An ecologist's day on the dismo data (issue 36): raw GBIF records -> clean -> rasters ->
background -> one model for both species -> maps, beside elapid's MaxEnt on Bradypus.

Runs the ``spml`` commands of docs/presence_only.md on ``../shared/data/dismo_ex`` (the R
package dismo's example data: 8 WorldClim layers + a categorical biome layer, 0.5°, South
and Central America; Bradypus variegatus records and a raw GBIF export of Solanum acaule)
and writes into ``benchmarks/results/dismo/``:

* ``table.md`` — records read/kept/dropped per reason, background, training, the time
  and peak memory of ``spml predict --rasters`` on the whole stack and on finer copies
  (each cell split into 4x4 and 8x8 cells: memory must not grow with the raster), and the Spearman
  correlation of spmlkit's and MaxEnt's Bradypus probability surfaces over the valid
  cells, with the header (command, date, machine, device, wall time);
* ``maxent_vs_spmlkit.png`` — the two Bradypus maps side by side, records overlaid;
* the walkthrough's own figures: ``map_<species>.png``, ``response_<species>.png``,
  ``importance.png``.

MaxEnt: ``elapid.MaxentModel()`` (elapid 1.0.4, its defaults: linear, hinge and product
features, cloglog output), fitted on the same Bradypus records and the same background
cells as spmlkit's bundle (all of them: the bundle is prepared with ``--test-fraction 0``),
biome declared categorical, applied to the rasters with ``elapid.apply_model_to_rasters``.
Nothing is tuned on the comparison: spmlkit's setting is the one docs/presence_only.md
recommends (``full-weighted``, MLP head, chosen on spatial blocks).

``--bradypus-alone`` writes ``bradypus_alone.md`` (Bradypus alone beside MaxEnt: 5-fold
cross-validated test AUC on random and spatial folds, ``--variant`` adds `spml train`
options) and ``bradypus_alone.png``; ``--nested`` writes ``bradypus_nested.md`` (the
variants on inner folds, each test fold left out: how the one-species default was chosen).

    pip install -e ".[geo,ecology]"
    python benchmarks/dismo.py
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "dismo_ex"
OUT = ROOT / "benchmarks" / "results" / "dismo"
LAYERS = ["bio1", "bio12", "bio16", "bio17", "bio5", "bio6", "bio7", "bio8", "biome"]
TRAIN = ["-m", "full-weighted", "--head", "mlp", "--hidden", "256", "--epochs", "30", "--selection",
         "background_auc"]


def _header_lines(wall: float) -> list[str]:
    """A table's header: the command, date, machine, load, device and wall time."""
    from spmlkit.experiments.machine import machine_info  # (imported where used, as in the callers)

    return [f"- command: `python benchmarks/dismo.py {' '.join(sys.argv[1:])}`".replace("  ", " "),
            f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC}",
            f"- machine: {machine_info()} (shared by several jobs: times are noisy)",
            f"- load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
            "- device: cpu", f"- wall time: {wall:.0f} s", ""]


def spml(*args, cwd: Path) -> tuple[str, float, float]:
    """Run ``spml ARGS`` in ``cwd``: (its output, wall seconds, peak RSS of that process in MiB)."""
    env = {**os.environ, "SPML_NO_PROGRESS": "1", "PYTHONPATH": str(ROOT / "src")}
    with tempfile.TemporaryFile("w+") as log:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "spmlkit", *map(str, args)], cwd=cwd, env=env, stdout=log,
                             stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(p.pid, 0)  # this process's own rusage: its peak memory alone
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        log.seek(0)
        text = log.read()
    if p.returncode != 0:
        raise SystemExit(f"spml {' '.join(map(str, args))} failed:\n{text[-3000:]}")
    print(f"{wall:6.1f} s  {usage.ru_maxrss / 1024:6.0f} MiB  spml {' '.join(map(str, args))}", flush=True)
    return text, wall, usage.ru_maxrss / 1024


def finer_copy(src: Path, dst: Path, factor: int) -> Path:
    """Every layer with each cell split into factor x factor cells (same values), as tiled GeoTIFF."""
    import rasterio
    from rasterio.transform import Affine

    dst.mkdir(parents=True, exist_ok=True)
    for name in LAYERS:
        with rasterio.open(src / f"{name}.grd") as ds:
            a = ds.read(1)
            t = ds.transform
            prof = {"driver": "GTiff", "dtype": a.dtype, "count": 1, "crs": ds.crs, "nodata": ds.nodata,
                    "width": ds.width * factor, "height": ds.height * factor, "tiled": True, "blockxsize": 256,
                    "blockysize": 256, "compress": "deflate",
                    "transform": Affine(t.a / factor, t.b, t.c, t.d, t.e / factor, t.f)}
        with rasterio.open(dst / f"{name}.tif", "w", **prof) as out:
            out.write(np.repeat(np.repeat(a, factor, 0), factor, 1), 1)
    return dst


def maxent_map(bundle: Path, out_tif: Path) -> float:
    """Fit elapid's MaxEnt on the bundle's Bradypus records and background rows (raw
    covariates recovered from the one-hot encoding) and write its map; returns seconds."""
    import elapid

    from spmlkit.data import Bundle
    from spmlkit.data.encoding import CovariateEncoding

    b = Bundle(bundle)
    enc = CovariateEncoding.from_dict(b.meta["encoding"])
    X = np.concatenate([np.asarray(b.features(s)) for s in ("train", "val", "test") if b.size(s)])
    Z = np.concatenate([np.asarray(b.observations(s)) for s in ("train", "val", "test") if b.size(s)])
    raw = []
    for c, cols in enc.groups():  # back to the raster values: the level of the one-hot column set
        raw.append(np.asarray(enc.levels[c])[X[:, cols].argmax(1)] if c in enc.levels else X[:, cols[0]])
    raw = np.column_stack(raw)
    j = b.label_names.index("Bradypus variegatus")
    pres, bg = Z[:, j] == 1, (Z == 0).all(1)
    x = np.concatenate([raw[pres], raw[bg]])
    y = np.r_[np.ones(pres.sum()), np.zeros(bg.sum())]
    t0 = time.perf_counter()
    m = elapid.MaxentModel()
    m.fit(x, y, categorical=[enc.covariates.index(c) for c in enc.categorical])
    paths = [str(DATA / f"{c}.grd") for c in enc.covariates]
    elapid.apply_model_to_rasters(m, paths, str(out_tif), quiet=True)
    return time.perf_counter() - t0


def read_band(path: Path, band: int = 1):
    import rasterio

    with rasterio.open(path) as ds:
        return ds.read(band, masked=True), ds.bounds


def figure(spml_tif: Path, maxent_tif: Path, records: np.ndarray, rho: float, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10.5, 5.2), layout="constrained")
    for ax, (path, band, title) in zip(axes, [(maxent_tif, 1, "MaxEnt (elapid 1.0.4, cloglog)"),
                                              (spml_tif, 1, "spmlkit (full-weighted, MLP, both species)")]):
        a, b = read_band(path, band)
        im = ax.imshow(a, extent=(b.left, b.right, b.bottom, b.top), vmin=0, vmax=1, cmap="viridis",
                       interpolation="nearest")
        ax.scatter(records[:, 0], records[:, 1], s=6, c="#d62728", edgecolors="white", linewidths=0.3)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("longitude")
    axes[0].set_ylabel("latitude")
    fig.colorbar(im, ax=axes, shrink=0.9, label="predicted probability")
    fig.suptitle(f"Bradypus variegatus: {len(records)} records; Spearman ρ of the two surfaces = {rho:.3f}",
                 fontstyle="italic")
    fig.savefig(out, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------ Bradypus alone (issue 46)
FOLDS = 5
GRID = 10  # spatial folds: whole blocks of a GRID x GRID grid over the records and background


def raw_covariates(enc, X: np.ndarray) -> np.ndarray:
    """The raster values behind encoded features (a categorical layer: the level of its one-hot set)."""
    cols = []
    for c, idx in enc.groups():
        cols.append(np.asarray(enc.levels[c])[X[:, idx].argmax(1)] if c in enc.levels else X[:, idx[0]])
    return np.column_stack(cols)


def fold_rows(ds, kind: str, seed: int = 0) -> np.ndarray:
    """Fold of every training row of ``ds``: ``random`` (each row drawn) or ``spatial`` (whole blocks,
    :func:`spmlkit.data.spatial_splits.block_folds`), seeded."""
    from spmlkit.data.spatial_splits import block_folds

    tr = ds.splits["train"]
    if kind == "random":
        return np.random.default_rng(seed).integers(FOLDS, size=len(tr.ids))
    return block_folds(np.asarray(tr.xy), np.asarray(tr.Z.single_index()), FOLDS, GRID, seed)


def fold_dataset(ds, fold: np.ndarray, i: int, drop: int | None = None):
    """``ds`` with test = fold i, validation = fold i+1, training = the other folds (but
    fold ``drop``, left out of every split when given)."""
    from spmlkit.data import MultiLabelDataset

    tr = ds.splits["train"]
    gone = fold == drop
    parts = {"train": ~np.isin(fold, [i, (i + 1) % FOLDS]) & ~gone, "val": fold == (i + 1) % FOLDS, "test": fold == i}
    return MultiLabelDataset(name=ds.name, label_names=ds.label_names, background=True, source=ds.source,
                             splits={k: tr.subset(np.flatnonzero(m)) for k, m in parts.items()},
                             feature_names=ds.feature_names, encoding=ds.encoding, places=ds.places)


def maxent_fold(ds, fold: np.ndarray, i: int, species: str, drop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """elapid MaxEnt on the records and background of every fold but i (and ``drop``): its
    scores on the rows of fold i (NaN where a categorical level is one it never saw: elapid
    cannot score those), and which of those rows it could score."""
    import elapid

    from spmlkit.data.encoding import CovariateEncoding

    enc = CovariateEncoding.from_dict(ds.encoding)
    tr = ds.splits["train"]
    raw = raw_covariates(enc, np.asarray(tr.X))
    lab = np.asarray(tr.Z.single_index())
    k = ds.label_names.index(species)
    fit, test = (fold != i) & (fold != drop), fold == i
    use = fit & ((lab == k) | (lab < 0))
    cat = [enc.covariates.index(c) for c in enc.categorical]
    m = elapid.MaxentModel()
    m.fit(raw[use], (lab[use] == k).astype(float), categorical=cat)
    seen = np.ones(int(test.sum()), dtype=bool)
    for c in cat:
        seen &= np.isin(raw[test, c], np.unique(raw[use, c]))
    scores = np.full(int(test.sum()), np.nan)
    scores[seen] = m.predict(raw[test][seen])
    return scores, seen


def spml_fold(w: Path, name: str, ds, fold: np.ndarray, i: int, species: str, extra=(),
              drop: int | None = None) -> np.ndarray:
    """``spml train`` (its defaults: auto) on the fold's bundle: the model's scores of the species
    on the rows of fold i (the bundle's test split, in the same order)."""
    from spmlkit.data import Bundle, prepare_bundle
    from spmlkit.practitioner.evaluation import model_features
    from spmlkit.practitioner.saved import load_model

    b = w / f"cv/{name}{i}"
    prepare_bundle(fold_dataset(ds, fold, i, drop), b, log=lambda m: None)
    spml("train", b, "-o", w / f"cv/run_{name}{i}", *extra, cwd=w)
    model = load_model(w / f"cv/run_{name}{i}")
    return model.decision_function(model_features(model, Bundle(b), "test"))[:, model.label_names.index(species)]


def cv_scores(w: Path, ds, fold: np.ndarray, species: str, kind: str, variants=()) -> dict:
    """Per fold: the test AUC of spmlkit and MaxEnt on the same rows (records of the fold
    against its background; rows with a level MaxEnt never saw left out of both), the rows
    left out and the test records."""
    from spmlkit.practitioner.sdm_metrics import auc

    lab = np.asarray(ds.splits["train"].Z.single_index())
    k = ds.label_names.index(species)
    out = {"alone": [], "maxent": [], "left_out": [], "records": [], **{v: [] for v in variants}}
    for i in range(FOLDS):
        test = fold == i
        mx, seen = maxent_fold(ds, fold, i, species)
        sp = spml_fold(w, f"alone_{kind}", ds, fold, i, species)
        pos, bg = (lab[test] == k) & seen, (lab[test] < 0) & seen
        out["alone"].append(auc(sp[pos], sp[bg]))
        out["maxent"].append(auc(mx[pos], mx[bg]))
        for v in variants:  # `spml train` with other options, on the same folds
            sv = spml_fold(w, f"alone_{kind}_v{variants.index(v)}_", ds, fold, i, species, v.split())
            out[v].append(auc(sv[pos], sv[bg]))
        out["left_out"].append(int((~seen).sum()))
        out["records"].append(int(pos.sum()))
    return out


def nested_scores(w: Path, ds, fold: np.ndarray, species: str, kind: str, variants) -> dict:
    """How to choose a default without the test folds: for each fold i, fold i is **never
    read** (neither trained on nor scored); among the other four, spmlkit is scored on fold
    i+1 (the *inner test*), validates on fold i+2 and trains on the other two (refitted on
    three, as `spml train` does); MaxEnt fits the three.  Per variant and MaxEnt: the
    inner-test AUC with each fold i left out."""
    from spmlkit.practitioner.sdm_metrics import auc

    lab = np.asarray(ds.splits["train"].Z.single_index())
    k = ds.label_names.index(species)
    out = {"maxent": [], **{v: [] for v in variants}}
    for i in range(FOLDS):
        j = (i + 1) % FOLDS  # the inner test fold; fold_dataset validates on j+1
        test = fold == j
        mx, seen = maxent_fold(ds, fold, j, species, drop=i)
        pos, bg = (lab[test] == k) & seen, (lab[test] < 0) & seen
        out["maxent"].append(auc(mx[pos], mx[bg]))
        for n, v in enumerate(variants):
            sv = spml_fold(w, f"nested_{kind}_v{n}_drop{i}_", ds, fold, j, species, v.split(), drop=i)
            out[v].append(auc(sv[pos], sv[bg]))
    return out


def nested(args) -> int:
    """``--nested``: the variants' inner-test AUC with each test fold left out (nested_scores),
    on random and spatial folds; writes bradypus_nested.md."""
    from spmlkit.data.formats.occurrences import records_on_rasters
    from spmlkit.experiments.machine import machine_info

    start = time.perf_counter()
    out, data = Path(args.out), Path(args.data)
    out.mkdir(parents=True, exist_ok=True)
    variants = list(args.variant or [""])
    with tempfile.TemporaryDirectory() as tmp:
        w = Path(tmp)
        spml("clean", data / "bradypus.csv", "-o", "brad.csv", cwd=w)
        alone = records_on_rasters(w / "brad.csv", [data], categorical=["biome"])
        res = {kind: nested_scores(w, alone, fold_rows(alone, kind), SP, kind, variants) for kind in ("random", "spatial")}
    wall = time.perf_counter() - start
    ms = lambda v: f"{np.mean(v):.3f} ± {np.std(v, ddof=1):.3f}"  # noqa: E731
    label = {"maxent": "MaxEnt (elapid 1.0.4 defaults)",
             **{v: f"spmlkit, `{('spml train ' + v).strip()}`" for v in variants}}
    lines = ["# Bradypus alone: choosing a default without the test folds (issue 46)", "",
             *_header_lines(wall),
             f"The folds of bradypus_alone.md (random, and spatial: whole blocks of a {GRID} x {GRID} grid, seed 0).  "
             "For each fold i, **fold i is never read**; of the other four, fold i+1 is the inner test, spmlkit "
             "validates on fold i+2 and trains on the other two (then refits on three, `spml train`'s default), "
             "MaxEnt fits the three.  AUC of the inner test fold's records against its background, mean ± sd over "
             f"the {FOLDS} left-out folds.  A default chosen here has seen no row of the test fold it is scored "
             "on in bradypus_alone.md.", "",
             "| model | random folds | spatial folds | per left-out fold (random) | per left-out fold (spatial) |",
             "|---|---:|---:|---|---|"]
    for key in ("maxent", *variants):
        lines.append(f"| {label[key]} | {ms(res['random'][key])} | {ms(res['spatial'][key])} | "
                     f"{', '.join(f'{v:.3f}' for v in res['random'][key])} | "
                     f"{', '.join(f'{v:.3f}' for v in res['spatial'][key])} |")
    name = f"bradypus_nested{args.tag}.md"
    (out / name).write_text("\n".join(lines) + "\n")
    print(f"wrote {out / name}")
    return 0


def share_above(tif: Path, t: float) -> float:
    a, _ = read_band(tif, 1)
    v = a.compressed()
    return float((v >= t).mean())


def alone_figure(maps: list, records: np.ndarray, out: Path) -> None:
    """The Bradypus maps side by side; nodata (sea) grey, apart from low values."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#d9d9d9")
    fig, axes = plt.subplots(1, len(maps), figsize=(4.6 * len(maps), 5.0), layout="constrained")
    for ax, (tif, title) in zip(axes, maps):
        a, b = read_band(tif, 1)
        im = ax.imshow(a, extent=(b.left, b.right, b.bottom, b.top), vmin=0, vmax=1, cmap=cmap,
                       interpolation="nearest")
        ax.scatter(records[:, 0], records[:, 1], s=5, c="#d62728", edgecolors="white", linewidths=0.3,
                   label=f"records ({len(records)})")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("longitude")
    axes[0].set_ylabel("latitude")
    axes[0].legend(loc="lower left", fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.85, label="model output (grey: no data / sea)")
    fig.suptitle("Bradypus variegatus: MaxEnt, spmlkit on Bradypus alone, spmlkit with Solanum acaule in the file",
                 fontstyle="italic", fontsize=10)
    fig.savefig(out, dpi=100)
    plt.close(fig)


SP = "Bradypus variegatus"


def at_records(tif: Path, xy: np.ndarray) -> np.ndarray:
    import rasterio

    with rasterio.open(tif) as ds:
        return np.array([v[0] for v in ds.sample([tuple(p) for p in xy])], dtype=np.float64)


def bradypus_alone(args) -> int:
    """Bradypus alone beside MaxEnt: 5-fold cross-validated test AUC (records against
    background, the same rows for both) on random and on spatial folds; and the full-data
    maps of Bradypus alone, Bradypus with Solanum in the file, and MaxEnt: rank agreement and
    the share of cells above each map's 10th-percentile training presence threshold; writes
    bradypus_alone.md and bradypus_alone.png."""
    from scipy.stats import spearmanr

    from spmlkit.data.formats.occurrences import records_on_rasters
    from spmlkit.experiments.machine import machine_info
    from spmlkit.practitioner.sdm_metrics import percentile_threshold

    start = time.perf_counter()
    out, data = Path(args.out), Path(args.data)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        w = Path(tmp)
        spml("clean", data / "bradypus.csv", "-o", "brad.csv", cwd=w)
        spml("clean", data / "bradypus.csv", data / "acaule.csv", "-o", "records.csv", cwd=w)
        alone = records_on_rasters(w / "brad.csv", [data], categorical=["biome"])
        variants = list(args.variant or [])
        cv = {kind: cv_scores(w, alone, fold_rows(alone, kind), SP, kind, variants) for kind in ("random", "spatial")}
        for name, rec in (("alone", "brad.csv"), ("both", "records.csv")):
            spml("prepare", rec, "--rasters", data, "--categorical", "biome", "--val-blocks", GRID,
                 "--test-fraction", "0", "-o", f"bundles/{name}", cwd=w)
            spml("train", f"bundles/{name}", "-o", f"runs/{name}", cwd=w)
            spml("predict", f"runs/{name}", "--rasters", data, "-o", f"maps/{name}.tif", cwd=w)
        maxent_map(w / "bundles/alone", w / "maps/maxent.tif")
        tr = alone.splits["train"]
        recs = np.asarray(tr.xy)[np.asarray(tr.Z.single_index()) == 0]
        tifs = {"maxent": w / "maps/maxent.tif", "alone": w / "maps/alone.tif", "both": w / "maps/both.tif"}
        vals = {k: read_band(t, 1)[0] for k, t in tifs.items()}
        valid = ~np.ma.getmaskarray(vals["maxent"]) & ~np.ma.getmaskarray(vals["alone"])
        rho = {(a, b): float(spearmanr(vals[a].data[valid], vals[b].data[valid]).statistic)
               for a, b in (("maxent", "alone"), ("maxent", "both"), ("alone", "both"))}
        maps = {}
        for k, t in tifs.items():
            t10 = percentile_threshold(at_records(t, recs))
            maps[k] = {"t10": t10, "above_t10": share_above(t, t10), "above_half": share_above(t, 0.5)}
        alone_figure([(tifs["maxent"], "MaxEnt (elapid 1.0.4, cloglog)"),
                      (tifs["alone"], "spmlkit, Bradypus alone (spml train defaults)"),
                      (tifs["both"], "spmlkit, Bradypus + Solanum in one file")], recs, out / "bradypus_alone.png")
    wall = time.perf_counter() - start
    label = {"maxent": "MaxEnt (elapid 1.0.4 defaults)", "alone": "spmlkit, Bradypus alone (`spml train` defaults)",
             "both": "spmlkit, Bradypus + Solanum acaule in one file (`spml train` defaults)"}
    ms = lambda v: f"{np.mean(v):.3f} ± {np.std(v, ddof=1):.3f}"  # noqa: E731
    lines = ["# Bradypus variegatus alone: spmlkit beside MaxEnt (issue 46)", "",
             *_header_lines(wall),
             "116 records of the sloth, 9766 background cells (every valid cell of the dismo rasters), 9 covariates "
             "(biome categorical).  **Cross-validated test AUC** (records of the test fold against the background "
             f"of the test fold; mean ± sd over {FOLDS} folds): `random` — every row (record or background cell) "
             f"drawn into one of {FOLDS} folds; `spatial` — whole blocks of a {GRID} x {GRID} grid dealt into {FOLDS} "
             "folds balanced per species (`spmlkit.data.spatial_splits.block_folds`, seed 0).  Fold i tests; "
             "spmlkit validates (chooses its epoch and learning rate) on fold i+1 while it trains on the other "
             "three, then (`spml train`'s default on presence-only data, `--refit`) trains those choices again on "
             "the four folds; with `--no-refit` the model chosen on fold i+1 is kept (trained on three folds).  "
             "MaxEnt, which chooses nothing, fits on the four folds.  Nothing is chosen on the test fold.  Both are "
             "scored on the same rows: the "
             "test fold's rows with a biome MaxEnt's fit never saw are left out (elapid cannot score them; "
             f"random: {sum(cv['random']['left_out'])}, spatial: {sum(cv['spatial']['left_out'])} rows over the "
             "folds).  Test records per fold: random "
             f"{', '.join(map(str, cv['random']['records']))}; spatial {', '.join(map(str, cv['spatial']['records']))}.",
             "", "| model | random folds | spatial folds | per fold (random) | per fold (spatial) |",
             "|---|---:|---:|---|---|"]
    for v in variants:
        label[v] = f"spmlkit, Bradypus alone, `spml train {v}`"
    for k in ("maxent", "alone", *variants):
        lines.append(f"| {label[k]} | {ms(cv['random'][k])} | {ms(cv['spatial'][k])} | "
                     f"{', '.join(f'{v:.3f}' for v in cv['random'][k])} | "
                     f"{', '.join(f'{v:.3f}' for v in cv['spatial'][k])} |")
    lines += ["", "**Maps** (fitted on every record; spmlkit validates on a spatial fold, `--val-blocks "
              f"{GRID} --test-fraction 0`).  Threshold: the 10th-percentile training presence (the map's value at "
              "the records, 10% below it); share of the 9766 valid cells at or above it, and above 0.5.", "",
              "| map | threshold | cells ≥ threshold | cells > 0.5 |", "|---|---:|---:|---:|"]
    for k in ("maxent", "alone", "both"):
        m = maps[k]
        lines.append(f"| {label[k]} | {m['t10']:.3f} | {100 * m['above_t10']:.1f}% | {100 * m['above_half']:.1f}% |")
    lines += ["", "| maps compared | Spearman ρ over the valid cells |", "|---|---:|",
              *[f"| {label[a]} — {label[b]} | {r:.3f} |" for (a, b), r in rho.items()], "",
              "![Bradypus maps](bradypus_alone.png)", ""]
    (out / "bradypus_alone.md").write_text("\n".join(lines))
    print(f"wrote {out / 'bradypus_alone.md'}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--factors", type=int, nargs="+", default=[4, 8],
                    help="finer copies split each cell into FACTOR x FACTOR cells")
    ap.add_argument("--variant", action="append", metavar="'TRAIN OPTIONS'",
                    help="--bradypus-alone: also cross-validate `spml train` with these options (repeatable)")
    ap.add_argument("--bradypus-alone", action="store_true",
                    help="only the Bradypus-alone comparison with MaxEnt (bradypus_alone.md, bradypus_alone.png)")
    ap.add_argument("--tag", default="", help="--nested: written as bradypus_nested{TAG}.md (several comparisons kept)")
    ap.add_argument("--nested", action="store_true",
                    help="the --variant options' AUC on inner test folds, each test fold left out "
                         "(bradypus_nested.md): a default chosen without the test folds")
    args = ap.parse_args()
    if args.nested:
        return nested(args)
    if args.bradypus_alone:
        return bradypus_alone(args)
    from scipy.stats import spearmanr

    from spmlkit.data import Bundle
    from spmlkit.experiments.machine import machine_info

    start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        w = Path(tmp)
        clean_out, _, _ = spml("clean", data / "bradypus.csv", data / "acaule.csv", "-o", "records.csv", cwd=w)
        prep_out, _, _ = spml("prepare", "records.csv", "--rasters", data, "--categorical", "biome",
                              "--val-blocks", "5", "--test-fraction", "0", "-o", "bundles/sa", cwd=w)
        train_out, train_s, _ = spml("train", "bundles/sa", *TRAIN, "-o", "runs/sa", cwd=w)
        pred_out, pred_s, pred_mem = spml("predict", "runs/sa", "--rasters", data, "-o", "maps/sa.tif", cwd=w)
        _, maps_s, maps_mem = spml("predict", "runs/sa", "--rasters", data, "-o", "maps/sa.tif", "--maps", "all",
                                   cwd=w)
        fine = []
        for f in args.factors:
            d = finer_copy(data, w / f"fine{f}", f)
            o, t, mem = spml("predict", "runs/sa", "--rasters", d, "-o", f"maps/fine{f}.tif", cwd=w)
            fine.append((f, t, mem, next(line for line in o.splitlines() if line.startswith("predicted"))))
            shutil.rmtree(d)
        ex_out, ex_s, _ = spml("explain", "runs/sa", "-o", "explain", cwd=w)
        mx_s = maxent_map(w / "bundles/sa", w / "maps/maxent.tif")
        sp, _ = read_band(w / "maps/sa.tif", 1)
        mx, _ = read_band(w / "maps/maxent.tif", 1)
        both = ~np.ma.getmaskarray(sp) & ~np.ma.getmaskarray(mx)
        rho = float(spearmanr(sp.data[both], mx.data[both]).statistic)
        pearson = float(np.corrcoef(sp.data[both], mx.data[both])[0, 1])
        b = Bundle(w / "bundles/sa")
        j = b.label_names.index("Bradypus variegatus")
        recs = np.concatenate([b.xy(s)[np.asarray(b.observations(s))[:, j] == 1] for s in ("train", "val")])
        figure(w / "maps/sa.tif", w / "maps/maxent.tif", recs, rho, out / "maxent_vs_spmlkit.png")
        for f in sorted((w / "maps").glob("sa_*.png")):
            shutil.copy(f, out / f.name.replace("sa_", "map_"))
        for f in sorted((w / "explain").glob("*.png")):
            shutil.copy(f, out / f.name)
        cells = next(line for line in pred_out.splitlines() if line.startswith("predicted"))
        sel = [line.strip() for line in train_out.splitlines() if "best epoch" in line or "validation" in line][:3]
    wall = time.perf_counter() - start
    cmd = "python benchmarks/dismo.py " + " ".join(sys.argv[1:])
    lines = ["# An ecologist's day on the dismo data, and MaxEnt beside it (issue 36)", "",
             f"- command: `{cmd.strip()}`",
             f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC}",
             f"- machine: {machine_info()} (shared by several jobs: times are noisy)",
             "- device: cpu",
             f"- wall time: {wall:.0f} s", "",
             "Data: `../shared/data/dismo_ex` (R package dismo 1.3-15, `inst/ex`): 9 rasters of 192 x 186 cells "
             "(0.5°, WGS84), Bradypus variegatus (116 records) and a raw GBIF export of Solanum acaule (594 rows, "
             "Latin-1).", "",
             "## Records", "", "```", "spml clean bradypus.csv acaule.csv -o records.csv",
             *[line for line in clean_out.splitlines() if line.strip()], "```", "",
             "```", "spml prepare records.csv --rasters dismo_ex --categorical biome --val-blocks 5 --test-fraction 0 "
             "-o bundles/sa", *[line for line in prep_out.splitlines() if line.strip()], "```", "",
             "## Training and prediction", "",
             "| step | command | wall time | peak memory |", "|---|---|---:|---:|",
             f"| train | `spml train bundles/sa {' '.join(TRAIN)}` | {train_s:.1f} s | |",
             f"| predict, whole stack (192 x 186) | `spml predict runs/sa --rasters dismo_ex -o maps/sa.tif` "
             f"| {pred_s:.1f} s | {pred_mem:.0f} MiB |",
             *[f"| predict, {f}x{f} finer copy ({192 * f} x {186 * f}) | `spml predict runs/sa --rasters fine{f} -o "
               f"maps/fine{f}.tif` | {t:.1f} s | {mem:.0f} MiB |" for f, t, mem, _ in fine],
             f"| the same with a PNG map per species | `spml predict runs/sa --rasters dismo_ex -o maps/sa.tif --maps "
             f"all` | {maps_s:.1f} s | {maps_mem:.0f} MiB |",
             f"| response curves, importance | `spml explain runs/sa -o explain` | {ex_s:.1f} s | |",
             f"| MaxEnt, Bradypus (fit + `apply_model_to_rasters`) | elapid 1.0.4 | {mx_s:.1f} s | |", "",
             f"- {cells}", *[f"- {f}x{f} finer copy: {c}" for f, _, _, c in fine],
             "- times are whole `spml` processes (start-up included: about 5 s on this machine); peak memory is the "
             "whole process (Python, torch, GDAL): it does not grow with the raster, which is read, scored and "
             "written in windows of about 65,536 cells with GDAL's block cache held to 64 MB.",
             *[f"- training: {s}" for s in sel], "",
             "## spmlkit and MaxEnt: Bradypus variegatus", "",
             f"| valid cells compared | Spearman ρ | Pearson r |", "|---:|---:|---:|",
             f"| {int(both.sum())} | {rho:.3f} | {pearson:.3f} |", "",
             "![MaxEnt and spmlkit](maxent_vs_spmlkit.png)", "",
             "Both maps put the sloth in the same places (Central America, the Amazon basin, the Atlantic "
             "forest) and rank the cells alike (Spearman ρ above); the values differ in scale — MaxEnt's cloglog "
             "output against spmlkit's sigmoid of one network trained on both species (`full-weighted`: "
             "presences, the other species' records and the background, weighted) — which is why the rank "
             "correlation is the comparison. There are no surveyed absences in this data, so neither map is "
             "scored here: the AUC comparison on surveyed sites is disdat's (`benchmarks/results/disdat/`).", ""]
    (out / "table.md").write_text("\n".join(lines))
    print(f"wrote {out / 'table.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
