"""What species-distribution modellers read: response curves and
permutation importance per covariate and species, as tables and figures.

Response curves (partial dependence)
------------------------------------
For covariate ``c`` and species ``j``, the partial dependence at value ``v`` is the mean
predicted probability over a reference sample of rows with ``c`` set to ``v`` and every
other covariate left as it is (Friedman 2001, Eq. 40:
``f̄_c(v) = (1/n) Σ_i f(v, x_i,\\c)``).  The reference rows are the background rows of the
bundle's training split (the study area; all training rows when it has none), at most
``sample`` of them (seeded).  A continuous covariate is evaluated at ``points`` values
evenly spaced between its 1st and 99th percentiles over those rows; a categorical one at
each of its training levels (its one-hot columns set together).

Permutation importance
----------------------
The drop in per-species AUC when the values of one covariate are shuffled across the rows
of a held-out split, the others kept (Breiman 2001, §10; the model-agnostic form of
Fisher, Rudin & Dominici 2019).  The AUC of species ``j`` contrasts its held-out
presence records with the held-out background rows (the presence-background AUC SDM
users read; on presence-only data it measures how well a covariate separates where the
species was recorded from the study area, not transfer to surveyed sites — see
docs/presence_only.md).  A categorical covariate's one-hot columns are shuffled together;
``repeats`` shuffles (seeded) give the mean drop and its standard deviation.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from .. import ownership
from ..data.covariate_info import class_label, covariate_label, read_covariate_info
from ..errors import ConfigError
from ..io import safe_filename
from ..ownership import atomic_path


@dataclass
class ExplainData:
    """What :func:`explain` works on: the reference rows of the response curves, and the
    held-out rows of the importance (features, observations, which are background)."""

    reference: np.ndarray  # (n, D) encoded features
    held_out: np.ndarray  # (m, D)
    pos: np.ndarray  # (m, L) bool: a presence of the species
    neg: np.ndarray  # (m, L) bool: what the species' presences are contrasted with
    split: str
    contrast: str  # "background" (observed data) or "surveyed absences" (full labels)


def explain_data(bundle, *, split: str = "val", sample: int = 1000, seed: int = 0) -> ExplainData:
    """The rows of ``bundle`` for :func:`response_curves` (background rows of ``train``, at
    most ``sample``) and :func:`permutation_importance` (``split``, every row)."""
    rng = np.random.default_rng(seed)
    X = np.asarray(bundle.features("train"))
    Z = bundle.observations("train")  # sparse: background rows are those with nothing observed
    bg = np.flatnonzero(Z.row_counts(0) == Z.n_labels)
    ref = bg if len(bg) else np.arange(len(X))
    if len(ref) > sample:
        ref = np.sort(rng.choice(ref, sample, replace=False))
    if not bundle.size(split):
        raise ConfigError(f"{bundle.path}: the {split!r} split is empty; permutation importance needs held-out rows "
                          "(--split val or test)")
    Xh = np.asarray(bundle.features(split))
    Y = bundle.labels(split)
    if Y is None:  # observations: presences against the background rows (no observation)
        Zh = np.asarray(bundle.observations(split))
        pos = Zh == 1
        neg = np.repeat((Zh == 0).all(axis=1)[:, None], Zh.shape[1], axis=1)
        contrast = "background"
    else:  # surveyed sites: presences against absences, where surveyed
        Y = np.asarray(Y, dtype=bool)
        M = bundle.label_mask(split)
        M = np.ones_like(Y) if M is None else np.asarray(M, dtype=bool)
        pos, neg, contrast = Y & M, ~Y & M, "surveyed absences"
    return ExplainData(reference=X[ref], held_out=Xh, pos=pos, neg=neg, split=split, contrast=contrast)


def response_curves(model, reference: np.ndarray, *, points: int = 50) -> list[dict]:
    """Partial dependence of every species on every covariate (module docstring): rows
    ``{"species", "covariate", "value", "probability"}``.  ``model``: a saved model with a
    covariate encoding; ``reference``: ``(n, D)`` encoded rows."""
    enc = model.encoding
    if enc is None:
        raise ConfigError("this model records no covariate encoding (it was not trained on named covariates): "
                          "response curves need to know which columns form each covariate")
    out = []
    n = len(reference)
    for c, cols in enc.groups():
        if c in enc.levels:
            values = list(enc.levels[c])
            settings = [np.eye(len(cols), dtype=np.float32)[k] for k in range(len(cols))]
        else:
            v = reference[:, cols[0]]
            lo, hi = np.percentile(v, [1, 99])
            values = list(np.linspace(lo, hi, points)) if hi > lo else [float(lo)]
            settings = [np.array([x], dtype=np.float32) for x in values]
        X = np.repeat(reference[None], len(values), axis=0)  # (V, n, D)
        for k, s in enumerate(settings):
            X[k][:, cols] = s
        P = model.predict_proba(X.reshape(-1, X.shape[-1])).reshape(len(values), n, -1).mean(axis=1)
        for k, v in enumerate(values):
            for j, sp in enumerate(model.label_names):
                out.append({"species": sp, "covariate": c, "value": float(v), "probability": float(P[k, j])})
    return out


def _aucs(P: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Per-species AUC of the rows ``pos[:, j]`` against the rows ``neg[:, j]`` (NaN when
    either is empty)."""
    out = np.full(P.shape[1], np.nan)
    for j in range(P.shape[1]):
        p, n = pos[:, j], neg[:, j]
        if p.any() and n.any():
            y = np.r_[np.ones(p.sum()), np.zeros(n.sum())]
            out[j] = roc_auc_score(y, np.r_[P[p, j], P[n, j]])
    return out


def permutation_importance(model, X: np.ndarray, pos: np.ndarray, neg: np.ndarray, *, repeats: int = 5,
                           seed: int = 0) -> list[dict]:
    """Mean and standard deviation of the AUC drop per covariate and species (module
    docstring), the AUC of ``pos[:, j]`` rows against ``neg[:, j]`` rows: rows
    ``{"covariate", "species", "auc", "auc_drop", "auc_drop_sd", "n_presences",
    "n_contrast"}``."""
    enc = model.encoding
    if enc is None:
        raise ConfigError("this model records no covariate encoding: permutation importance needs to know which "
                          "columns form each covariate")
    if not neg.any():
        raise ConfigError("the held-out rows have nothing to contrast the presences with (no background row, no "
                          "surveyed absence)")
    base = _aucs(model.predict_proba(X), pos, neg)
    rng = np.random.default_rng(seed)
    out = []
    for c, cols in enc.groups():
        drops = []
        for _ in range(repeats):
            Xp = np.array(X, copy=True)
            Xp[:, cols] = X[rng.permutation(len(X))][:, cols]
            drops.append(base - _aucs(model.predict_proba(Xp), pos, neg))
        drops = np.array(drops)
        for j, sp in enumerate(model.label_names):
            out.append({"covariate": c, "species": sp, "auc": float(base[j]), "auc_drop": float(drops[:, j].mean()),
                        "auc_drop_sd": float(drops[:, j].std(ddof=1)) if repeats > 1 else 0.0,
                        "n_presences": int(pos[:, j].sum()), "n_contrast": int(neg[:, j].sum())})
    return out


def _write_csv(path: Path, rows: list[dict]) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def _savefig(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, metadata={"Software": "spmlkit explain"})


def response_figure(rows: list[dict], species: str, enc, path: Path, info: dict | None = None) -> Path:
    """One panel per covariate: the partial dependence of ``species`` (probability 0-1);
    ``info``: the covariates' names, units and class names (:mod:`spmlkit.data.covariate_info`)."""
    import matplotlib  # lazy: matplotlib, only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib, only when a figure is drawn

    covs = list(enc.covariates)
    ncol = min(4, len(covs))
    nrow = int(np.ceil(len(covs) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.0 * ncol, 2.4 * nrow), sharey=True, squeeze=False)
    for ax, c in zip(axes.ravel(), covs):
        pts = [(r["value"], r["probability"]) for r in rows if r["species"] == species and r["covariate"] == c]
        v, p = np.array(pts).T
        if c in enc.levels:
            ax.bar([class_label(info, c, x) for x in v], p, color="#4c72b0")
            named = any(class_label(info, c, x) != f"{x:g}" for x in v)
            ax.tick_params(axis="x", labelsize=7, rotation=90 if len(v) > 6 or named else 0)
        else:
            ax.plot(v, p, color="#4c72b0")
        ax.set_title(covariate_label(info, c), fontsize=9)
        ax.set_ylim(0, 1)
    for ax in axes.ravel()[len(covs):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("mean probability")
    fig.suptitle(f"{species}: response curves (partial dependence)", fontstyle="italic")
    fig.tight_layout()
    _savefig(fig, path)
    plt.close(fig)
    return path


def importance_figure(rows: list[dict], species: list[str], path: Path, split: str, info: dict | None = None) -> Path:
    """One panel per species: the AUC drop of each covariate (mean ± sd), largest on top."""
    import matplotlib  # lazy: matplotlib, only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib, only when a figure is drawn

    fig, axes = plt.subplots(1, len(species), figsize=(4.2 * len(species), 0.35 * (len({r['covariate'] for r in rows}))
                                                        + 1.6), squeeze=False)
    for ax, sp in zip(axes[0], species):
        rs = sorted((r for r in rows if r["species"] == sp), key=lambda r: r["auc_drop"])
        ax.barh([covariate_label(info, r["covariate"]) for r in rs], [r["auc_drop"] for r in rs], xerr=[r["auc_drop_sd"] for r in rs],
                color="#dd8452")
        auc = rs[0]["auc"] if rs else float("nan")
        ax.set_title(f"{sp}\n(AUC {auc:.3f} on {split})", fontstyle="italic", fontsize=9)
        ax.set_xlabel("AUC drop when shuffled")
        ax.axvline(0, color="black", linewidth=0.6)
    fig.tight_layout()
    _savefig(fig, path)
    plt.close(fig)
    return path


def explain(model, bundle, out, *, split: str = "val", species=None, points: int = 50, sample: int = 1000,
            repeats: int = 5, seed: int = 0, covariate_info=None) -> list[str]:
    """Response curves and permutation importance of ``model`` on ``bundle``, written into
    the folder ``out`` (a new or empty one, or one ``spml explain`` wrote): ``response.csv``,
    ``importance.csv``, ``response_<species>.png`` (for each of ``species``, default all)
    and ``importance.png``; ``covariate_info``: a sidecar of the covariates' names, units and
    class names for the figures (:mod:`spmlkit.data.covariate_info`).  Returns the paths written."""
    if list(bundle.label_names) != list(model.label_names):
        raise ConfigError(f"{bundle.path}: its species are not the model's; give the bundle the model was trained on")
    names = list(model.label_names)
    chosen = names if not species else [s.strip() for s in species]
    unknown = [s for s in chosen if s not in names]
    if unknown:
        raise ConfigError(f"--species: {unknown[0]!r} is not a species of the model ({', '.join(names[:8])})")
    enc = model.encoding
    if enc is None:
        raise ConfigError("this model records no covariate encoding (it was trained on ready-made features, not on "
                          "named covariates): nothing to explain per covariate")
    info = None if covariate_info is None else read_covariate_info(covariate_info, enc.covariates)
    data = explain_data(bundle, split=split, sample=sample, seed=seed)
    resp = response_curves(model, data.reference, points=points)
    imp = permutation_importance(model, data.held_out, data.pos, data.neg, repeats=repeats, seed=seed)
    ownership.register_kind("explain", "an explanation folder", layout=("*.csv", "*.png"))
    # a folder of the user's, a link, or one that is (or holds, or lies in) an input: refused
    out = ownership.claim(out, "explain", inputs=[bundle.path, getattr(model, "path", None)])
    written = []
    _write_csv(out / "response.csv", resp)
    _write_csv(out / "importance.csv", [{**r, "split": split, "contrast": data.contrast} for r in imp])
    written += [str(out / "response.csv"), str(out / "importance.csv")]
    for sp in chosen:
        p = out / f"response_{safe_filename(sp.replace(' ', '_'))}.png"
        response_figure(resp, sp, enc, p, info)
        written.append(str(p))
    importance_figure(imp, chosen, out / "importance.png", split, info)
    written.append(str(out / "importance.png"))
    return written
