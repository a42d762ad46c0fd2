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


def species_metrics(model, bundle) -> dict:
    """``{"species": {name: {split: {...}}}, "thresholds": {name: {...}}}`` (module
    docstring); splits without rows are left out."""
    names = list(model.label_names)
    out = {"species": {n: {} for n in names}, "thresholds": {}}
    cache = {}
    for split in SPLITS:
        if int(bundle.meta["sizes"].get(split, 0)) == 0:
            continue
        s = cache[split] = _scores(model, bundle, split)
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
    for k, n in enumerate(names):
        out["thresholds"][n] = _thresholds(bundle, cache, k)
    return out


def _thresholds(bundle, cache: dict, k: int) -> dict:
    """The species' thresholds (module docstring) and the share of background above each."""
    res = {}
    if "train" in cache:
        pos, bg = _rows(bundle.observations("train"), k)
        s = cache["train"][:, k]
        t10 = percentile_threshold(s[pos])
        res["p10_training_presence"] = {"threshold": _clean(t10),
                                        "background_above": _clean(float((s[bg] >= t10).mean()) if len(bg) else
                                                                   float("nan"))}
    src = "val" if "val" in cache and bundle.labels("val") is None else "train" if "train" in cache else None
    if src is not None:
        pos, bg = _rows(bundle.observations(src), k)
        s = cache[src][:, k]
        tss, t = max_tss(s[pos], s[bg])
        res["max_tss"] = {"threshold": _clean(t), "on": src, "tss": _clean(tss),
                          "background_above": _clean(float((s[bg] >= t).mean()) if len(bg) and not math.isnan(t)
                                                     else float("nan"))}
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


def store_run_metrics(run_dir, bundle) -> list[str]:
    """After ``spml train`` on presence-only data: the per-species table of the run's model
    on the bundle's validation and test splits, written to ``RUN/sdm_metrics.json``
    (with the thresholds); returns the lines to print."""
    run_dir = Path(run_dir)
    metrics = species_metrics(load_model(run_dir), bundle)
    ownership.write_json(run_dir / "sdm_metrics.json", metrics)
    return summary_lines(metrics) + [f"per-species metrics and thresholds: {run_dir / 'sdm_metrics.json'}"]
