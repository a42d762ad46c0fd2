"""Cross-validated per-species metrics on presence-only data (``spml train --cv K``).

One train/validation/test split gives one AUC per species, and with twenty test records
its noise is as large as the differences an ecologist compares; cross-validation gives the
mean and the spread over folds (the field's practice: e.g. Hijmans 2012, *Ecology*
93:1527–1539; Roberts et al. 2017, *Ecography* 40:913–929, for spatial blocks).

The bundle's training and validation rows (its test split stays out: it remains the final
hold-out) are dealt into ``K`` folds — each row drawn (``random``), or with ``blocks`` G whole
blocks of a G x G grid over the rows' places, balanced per species
(:func:`spmlkit.data.spatial_splits.block_folds`) — seeded.  For fold i: the model is
trained with the run's own configuration on the other folds, choosing on fold i+1
(learning rate, epoch, members) and, when the run refits (:mod:`.refit`), trained again
with those choices on every fold but i; it is scored on fold i, each species' records
against the fold's background: AUC, maximum TSS and the continuous Boyce index
(:mod:`.sdm_metrics`, the functions ``spml train`` reports and ``benchmarks/dismo.py``
cross-validates with).  Nothing is chosen on fold i.  Written to ``RUN/cv_metrics.json``:
per species and metric, the value of every fold (None where the fold holds none of the
species' records), the mean and the standard deviation (ddof 1) over the folds that have one.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .. import ownership
from ..config import TrainConfig
from ..data.memory import ArrayBundle
from ..errors import ConfigError
from ..sparse_labels import SparseLabels, as_sparse
from ..training.run import train
from .refit import chosen_members, merged_training, refit_state
from .saved import SavedModel, load_model
from .sdm_report import species_metrics

METRICS = ("auc", "tss", "boyce")
CV_FILE = "cv_metrics.json"


def _first_label(Z: SparseLabels) -> np.ndarray:
    """Each row's first observed species (-1: a background row)."""
    P = Z.positives()
    out = np.full(len(Z), -1, dtype=np.int64)
    rows, cols = P.row_of_entries(), P.indices
    first = np.unique(rows, return_index=True)[1]
    out[rows[first]] = cols[first]
    return out


def cv_folds(bundle, k: int, *, blocks: int | None = None, seed: int = 0) -> tuple[np.ndarray, str]:
    """``(fold of every training + validation row, description)``."""
    from ..data.spatial_splits import block_folds  # lazy: the CLI loads this module only with --cv

    n = bundle.size("train") + bundle.size("val")
    if k < 3 or k > n:
        raise ConfigError(f"--cv {k}: need at least 3 folds (one tests, the next validates, the others train) and no "
                          f"more than the {n} rows")
    if blocks is None:
        return np.random.default_rng(seed).integers(k, size=n), f"random folds (seed {seed})"
    xy = [bundle.xy(s) for s in ("train", "val") if bundle.size(s)]
    if any(v is None for v in xy):
        raise ConfigError("--cv-blocks: the bundle records no places (x, y) for its rows; use random folds (--cv "
                          "alone)")
    Z = SparseLabels.vstack([as_sparse(bundle.observations(s), dtype=np.int8) for s in ("train", "val")])
    fold = block_folds(np.concatenate(xy), _first_label(Z), k, blocks, seed)
    return fold, f"whole blocks of a {blocks} x {blocks} grid, balanced per species (seed {seed})"


def _fold_bundle(X, Z, fold: np.ndarray, i: int, k: int, names) -> ArrayBundle:
    val = (i + 1) % k
    part = {"train": (fold != i) & (fold != val), "val": fold == val, "test": fold == i}
    b = ArrayBundle(X[part["train"]], Z.take(np.flatnonzero(part["train"])), X_val=X[part["val"]],
                    Z_val=Z.take(np.flatnonzero(part["val"])), X_test=X[part["test"]],
                    Z_test=Z.take(np.flatnonzero(part["test"])), label_names=names, name=f"cv-fold{i + 1}")
    Zt = b.observations("train")
    b.meta["background_rows"] = int((Zt.row_counts(0) == Zt.shape[1]).sum())
    return b


def _fold_model(data: ArrayBundle, config: TrainConfig, like, *, refit: bool, device=None) -> SavedModel:
    """The run's configuration trained on a fold's bundle (and refitted on its training +
    validation rows when ``refit``), as a model that scores like the run's model ``like``."""
    (result,) = train(data, config, keep_state=True, device=device)
    st = result.state
    model = SavedModel.from_training_state(st, label_names=data.label_names, config=config.to_dict(),
                                           method=config.method, params=result.params, input=like.input,
                                           info={"feature_set": None})
    if refit:
        new = refit_state(merged_training(data), config, chosen_members(result.to_record(), config), device)
        model.state, model.mean, model.std = new["head"], new["mean"], new["std"]
    return model


def _summary(values: list) -> dict:
    v = [x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return {"per_fold": [None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x) for x in values],
            "mean": float(np.mean(v)) if v else None, "sd": float(np.std(v, ddof=1)) if len(v) > 1 else None,
            "folds": len(v)}


def cross_validate(run_dir, bundle, config: TrainConfig, *, k: int, blocks: int | None = None, seed: int = 0,
                   refit: bool = True, device=None, log=None) -> dict:
    """The cross-validated metrics (module docstring), written to ``RUN/cv_metrics.json``."""
    fold, how = cv_folds(bundle, k, blocks=blocks, seed=seed)
    X = np.concatenate([np.asarray(bundle.features(s, config.feature_set)) for s in ("train", "val")])
    Z = SparseLabels.vstack([as_sparse(bundle.observations(s), dtype=np.int8) for s in ("train", "val")])
    like = load_model(Path(run_dir))
    names = list(bundle.label_names)
    per = {n: {m: [] for m in METRICS} for n in names}
    records = {n: [] for n in names}
    for i in range(k):
        data = _fold_bundle(X, Z, fold, i, k, names)
        if not data.observations("train").count(1):
            raise ConfigError(f"--cv {k}: fold {i + 1}'s training folds hold no record (blocks too large for the "
                              "records' range: a finer --cv-blocks grid, or fewer folds)")
        if log is not None:
            log(f"cv fold {i + 1}/{k}: train {data.size('train'):,}, validation {data.size('val'):,}, "
                f"test {data.size('test'):,} rows")
        got = species_metrics(_fold_model(data, config, like, refit=refit, device=device), data)["species"]
        for n in names:
            row = got[n].get("test") or {}
            records[n].append(int(row.get("records", 0)))
            for m in METRICS:
                per[n][m].append(row.get(m) if row.get("records") else None)
    out = {"folds": k, "split": how, "refit": bool(refit), "rows": int(len(fold)),
           "species": {n: {"records_per_fold": records[n], **{m: _summary(per[n][m]) for m in METRICS}}
                       for n in names}}
    ownership.folder(Path(run_dir), "run")
    ownership.write_json(Path(run_dir) / CV_FILE, out)
    return out


def cv_lines(cv: dict, *, max_species: int = 12) -> list[str]:
    """What ``spml train --cv`` prints."""
    lines = [f"cross-validated (test fold's records against its background; {cv['folds']} folds, {cv['split']}"
             f"{', each refitted' if cv['refit'] else ''}): mean ± sd over folds"]
    fmt = lambda s, spec: "n/a" if s["mean"] is None else (  # noqa: E731
        f"{s['mean']:{spec}}" + (f" ± {s['sd']:{spec}}" if s["sd"] is not None else ""))
    items = list(cv["species"].items())
    for name, s in items[:max_species]:
        lines.append(f"  {name[:28]:28s} AUC {fmt(s['auc'], '.3f'):15s} TSS {fmt(s['tss'], '.2f'):11s} "
                     f"Boyce {fmt(s['boyce'], '.2f'):11s} records per fold {', '.join(map(str, s['records_per_fold']))}")
    if len(items) > max_species:
        aucs = [s["auc"]["mean"] for _, s in items if s["auc"]["mean"] is not None]
        lines.append(f"  ... {len(items) - max_species} more species; mean AUC over all {len(aucs)}: "
                     f"{np.mean(aucs):.3f}")
    return lines
