"""Per-species evaluation of a model on presence-only data (a bundle with background rows):
what ``spml train`` and ``spml evaluate`` print and store for an ecologist.

For each split that has rows, and each species:

* without surveyed labels (records and background, e.g. a bundle made from rasters): the
  species' records against the split's background rows — AUC, maximum TSS and its
  threshold, the continuous Boyce index (:mod:`.sdm_metrics`), and the counts used;
* with surveyed presence/absence (disdat's test sites): the species' surveyed presences
  against its surveyed absences (each species on its masked rows), with the counts.

Thresholds are on the model's output (its probability-like score, the sigmoid of the
logit): the one that maximises TSS on the validation records against validation
background, and the 10th-percentile training presence; each with the share of the
background above it (the share of the study area a binary map at that threshold calls
suitable).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy.special import expit

from .. import ownership
from ..sparse_labels import as_sparse
from .evaluation import model_features
from .saved import load_model
from .sdm_metrics import auc, boyce_index, max_tss, percentile_threshold

SPLITS = ("train", "val", "test")


def _rows(Z, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows observed with species ``k`` and background rows (no observed label)."""
    S = as_sparse(Z).positives()
    has = S.row_counts(1) > 0
    pos = S.row_of_entries()[S.indices == k]
    return np.unique(pos), np.flatnonzero(~has)


def _scores(model, bundle, split: str) -> np.ndarray:
    return expit(model.decision_function(model_features(model, bundle, split)).astype(np.float64))


def _fmt(v, spec=".3f") -> str | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def _clean(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def species_metrics(model, bundle, *, selected=None) -> dict:
    """``{"species": {name: {split: {...}}}, "thresholds": {name: {...}}}`` (module
    docstring); splits without rows are left out.  ``selected``: the model chosen on
    validation when ``model`` is its refit on training + validation rows
    (:mod:`.refit`): the validation split, and the maximum-TSS threshold found on it, are
    then that model's (the refitted one has learned those rows), and the
    10th-percentile training presence is the refitted model's on every record it trained
    on (training and validation)."""
    names = list(model.label_names)
    out = {"species": {n: {} for n in names}, "thresholds": {}}
    cache = {}
    for split in SPLITS:
        if int(bundle.meta["sizes"].get(split, 0)) == 0:
            continue
        s = cache[split] = _scores(selected if split == "val" and selected is not None else model, bundle, split)
        Y = bundle.labels(split) if split != "train" else None
        if Y is not None:  # surveyed presence/absence
            Yd = as_sparse(Y).dense() if not isinstance(Y, np.ndarray) else np.asarray(Y)
            mask = bundle.label_mask(split)
            M = np.ones_like(Yd, dtype=bool) if mask is None else as_sparse(mask).dense().astype(bool)
            for k, n in enumerate(names):
                p, a = s[M[:, k] & (Yd[:, k] == 1), k], s[M[:, k] & (Yd[:, k] == 0), k]
                out["species"][n][split] = {"contrast": "absences", "presences": int(len(p)), "absences": int(len(a)),
                                            "auc": _clean(auc(p, a)), "tss": _clean(max_tss(p, a)[0]),
                                            "boyce": _clean(boyce_index(p, a))}
            continue
        Z = bundle.observations(split)
        for k, n in enumerate(names):
            pos, bg = _rows(Z, k)
            p, b = s[pos, k], s[bg, k]
            tss, _ = max_tss(p, b)
            out["species"][n][split] = {"contrast": "background", "records": int(len(pos)), "background": int(len(bg)),
                                        "auc": _clean(auc(p, b)), "tss": _clean(tss), "boyce": _clean(boyce_index(p, b))}
    if selected is not None and "val" in cache:  # the refitted model's training presences include validation's
        cache["refit_val"] = _scores(model, bundle, "val")
    for k, n in enumerate(names):
        out["thresholds"][n] = _thresholds(bundle, cache, k)
    if selected is not None:
        out["refit"] = {"val": "the model chosen on validation (selected_model/)",
                        "test": "the model refitted on training + validation rows (model/)",
                        "thresholds": "the refitted model on its training and validation rows"}
    return out


def _training_rows(bundle, cache: dict, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The model's scores of species ``k`` at its training records and training background:
    the training split, and with a refitted model (``cache["refit_val"]``) the validation
    split too (it trained on both)."""
    if "train" not in cache:
        return None
    pos, bg = _rows(bundle.observations("train"), k)
    rec, back = [cache["train"][pos, k]], [cache["train"][bg, k]]
    if "refit_val" in cache:
        vpos, vbg = _rows(bundle.observations("val"), k)
        rec.append(cache["refit_val"][vpos, k])
        back.append(cache["refit_val"][vbg, k])
    return np.concatenate(rec), np.concatenate(back)


def _share(b: np.ndarray, t: float) -> float | None:
    return _clean(float((b >= t).mean()) if len(b) and not math.isnan(t) else float("nan"))


def _thresholds(bundle, cache: dict, k: int) -> dict:
    """The species' thresholds (module docstring) and the share of background above each.
    The maximum TSS is found on validation; for a refitted model (``cache["refit_val"]``),
    on every row it trained on, as MaxEnt's "maximum training sensitivity plus
    specificity" (Phillips et al. 2006; Liu et al. 2005), so that both thresholds are on
    the scale of the model that draws the map."""
    res = {}
    training = _training_rows(bundle, cache, k)
    if training is not None:
        rec, back = training
        t10 = percentile_threshold(rec)
        res["p10_training_presence"] = {"threshold": _clean(t10), "background_above": _share(back, t10)}
    if "refit_val" in cache and training is not None:
        src, (p, b) = "train+val", training
    elif "val" in cache and bundle.labels("val") is None:
        pos, bg = _rows(bundle.observations("val"), k)
        src, p, b = "val", cache["val"][pos, k], cache["val"][bg, k]
    elif training is not None:
        src, (p, b) = "train", training
    else:
        return res
    tss, t = max_tss(p, b)
    res["max_tss"] = {"threshold": _clean(t), "on": src, "tss": _clean(tss), "background_above": _share(b, t)}
    return res


def summary_lines(metrics: dict, splits=("val", "test"), *, max_species: int = 12) -> list[str]:
    """The table ``spml train`` / ``spml evaluate`` print (one row per species and split;
    beyond ``max_species`` species, the mean over species per split instead)."""
    lines = ["per species (records against background; presence against absence where surveyed): "
             "AUC, max TSS, continuous Boyce index, counts"]
    if len(metrics["species"]) > max_species:
        for split in splits:
            vals = [per[split]["auc"] for per in metrics["species"].values()
                    if per.get(split) and per[split]["auc"] is not None]
            if vals:
                lines.append(f"  {split}: mean AUC {np.mean(vals):.3f} over {len(vals)} species (each species' row: "
                             "--json, or the run's sdm_metrics.json)")
        return lines
    lines.append(f"  {'species':28s} {'split':5s} {'AUC':>6s} {'TSS':>6s} {'Boyce':>6s}  counts")
    for name, per in metrics["species"].items():
        for split in splits:
            m = per.get(split)
            if m is None:
                continue
            counts = (f"{m['records']} records, {m['background']} background" if m["contrast"] == "background" else
                      f"{m['presences']} presences, {m['absences']} absences (surveyed)")
            lines.append(f"  {name[:28]:28s} {split:5s} {_fmt(m['auc']) or 'n/a':>6s} {_fmt(m['tss'], '.2f') or 'n/a':>6s}"
                         f" {_fmt(m['boyce'], '.2f') or 'n/a':>6s}  {counts}")
    for name, t in metrics["thresholds"].items():
        parts = []
        if "max_tss" in t and t["max_tss"]["threshold"] is not None:
            m = t["max_tss"]
            parts.append(f"max TSS on {m['on']} {_fmt(m['threshold'])} ({_pct(m['background_above'])} of background "
                         "above)")
        if "p10_training_presence" in t and t["p10_training_presence"]["threshold"] is not None:
            m = t["p10_training_presence"]
            parts.append(f"10th-percentile training presence {_fmt(m['threshold'])} ({_pct(m['background_above'])} "
                         "of training background above)")
        if parts:
            lines.append(f"  thresholds, {name}: " + "; ".join(parts))
    return lines


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"


def is_presence_only(bundle) -> bool:
    """Whether the bundle has background rows (presence-only data)."""
    return bool(bundle.meta.get("background_rows"))


def selected_model(model_path):
    """The model chosen on validation when ``model_path`` (a run folder or its ``model/``)
    holds a refitted model (``refit.json``, :mod:`.refit`), else None."""
    path = Path(model_path)
    for run in (path, path.parent):
        if (run / "refit.json").is_file() and (run / "selected_model").is_dir() and (run / "model").is_dir():
            if path in (run, run / "model"):
                return load_model(run / "selected_model")
    return None


def store_run_metrics(run_dir, bundle, *, refitted: bool = False) -> list[str]:
    """After ``spml train`` on presence-only data: the per-species table of the run's model
    on the bundle's validation and test splits, written to ``RUN/sdm_metrics.json``
    (with the thresholds); returns the lines to print.  ``refitted``: the run's model is
    refitted on training + validation rows (:mod:`.refit`), validation is scored by the
    model chosen there (``RUN/selected_model``)."""
    run_dir = Path(run_dir)
    ownership.folder(run_dir, "run")  # (also a finished run started again: nothing trained, the folder claimed here)
    selected = load_model(run_dir / "selected_model") if refitted else None
    metrics = species_metrics(load_model(run_dir), bundle, selected=selected)
    ownership.write_json(run_dir / "sdm_metrics.json", metrics)
    note = (["  (val: the model chosen on validation, RUN/selected_model; test: the model refitted on training + "
             "validation rows, RUN/model)"] if refitted else [])
    return summary_lines(metrics) + note + [f"per-species metrics and thresholds: {run_dir / 'sdm_metrics.json'}"]
