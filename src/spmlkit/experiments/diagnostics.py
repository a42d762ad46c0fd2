"""Zhou et al. (2022) diagnostics of trained runs: figures and a summary.

Given saved runs (folders written by ``spml train``) and their bundle,
:func:`diagnose` recomputes each run's predictions and writes

* ``wasserstein-<run>.png`` — per class, the Wasserstein distance between the
  training-set probabilities of unobserved positives and unobserved negatives, reference
  run (x, normally AN) against the run (y), with the diagonal and the share of classes
  above it in the title (Zhou Fig. 4a);
* ``ap-change-<run>.png`` — class-wise test AP change of the run over the reference,
  sorted, with the share of improved classes (Zhou Fig. 4c);
* ``diagnostics.json`` — every number behind the figures, plus the precision of the
  APL pseudo-labels against the full training labels per epoch (Zhou Table 2, right)
  for runs whose checkpoint holds an APL state.

The library functions are in :mod:`spmlkit.metrics`; PNGs are written atomically.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import ownership
from ..data.bundle import Bundle
from ..errors import SpmlError
from ..io import read_json
from ..methods.apl import AsymmetricPseudoLabeler
from ..ownership import atomic_path, write_json
from ..metrics import (class_ap_change, mean_average_precision, pseudo_label_precision,
                       pseudo_label_precision_by_epoch, share_above_diagonal, unobserved_wasserstein)
from ..practitioner.saved import load_model
from ..training.checkpoint import load_run_checkpoint

#: the state key of APL's component (:attr:`spmlkit.methods.base.Component.state_key`); checkpoints
#: written before state keys hold it as ``"<position>:AsymmetricPseudoLabeler"``
APL_STATE_KEY = AsymmetricPseudoLabeler.state_key


# ------------------------------------------------------------------------ figures
def _pyplot():
    import matplotlib  # lazy: matplotlib, only when a figure is drawn

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt  # lazy: matplotlib, only when a figure is drawn

    return plt


def save_png(fig, path: str | Path) -> Path:
    """Save a matplotlib figure as PNG atomically and close it."""
    plt = _pyplot()
    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def plot_wasserstein_scatter(w_reference, w_method, path, *, reference_name: str = "AN",
                             method_name: str = "EM", title: str | None = None) -> Path:
    """Scatter of per-class Wasserstein distances, reference on x, method on y (Zhou Fig. 4a)."""
    plt = _pyplot()
    x = np.asarray(w_reference, dtype=float)
    y = np.asarray(w_method, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    share = share_above_diagonal(x, y)
    fig, ax = plt.subplots(figsize=(4.6, 4.4))
    ax.scatter(x[ok], y[ok], s=18, alpha=0.8, color="tab:blue", edgecolor="none")
    hi = max(float(np.max(x[ok], initial=0)), float(np.max(y[ok], initial=0)), 1e-3) * 1.05
    ax.plot([0, hi], [0, hi], color="tab:red", lw=1)
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_aspect("equal")
    ax.set_xlabel(f"Wasserstein distance, {reference_name}")
    ax.set_ylabel(f"Wasserstein distance, {method_name}")
    pct = "n/a" if math.isnan(share) else f"{100 * share:.1f}%"
    ax.set_title((title + "\n" if title else "") + f"{method_name} above the diagonal on {pct} of {int(ok.sum())} classes",
                 fontsize=9)
    return save_png(fig, path)


def plot_ap_change(delta, label_names, path, *, method_name: str = "EM", reference_name: str = "AN",
                   title: str | None = None) -> Path:
    """Bar chart of class-wise AP change (AP points), sorted decreasingly (Zhou Fig. 4c)."""
    plt = _pyplot()
    d = np.asarray(delta, dtype=float)
    ok = np.isfinite(d)
    order = [i for i in np.argsort(-np.where(ok, d, -np.inf), kind="stable") if ok[i]]
    vals = d[order]
    share = float((vals > 0).mean()) if vals.size else float("nan")
    fig, ax = plt.subplots(figsize=(max(4.0, 0.18 * len(order) + 1.5), 3.4))
    ax.bar(range(len(order)), vals, color=["tab:green" if v > 0 else "tab:red" for v in vals])
    ax.axhline(0, color="black", lw=0.8)
    if len(order) <= 60:
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels([str(label_names[i]) for i in order], rotation=90, fontsize=6)
    else:
        ax.set_xticks([])
    ax.set_xlabel("class")
    ax.set_ylabel(f"AP({method_name}) − AP({reference_name})")
    pct = "n/a" if math.isnan(share) else f"{100 * share:.1f}%"
    ax.set_title((title + "\n" if title else "") + f"{method_name} improves AP on {pct} of {len(order)} classes",
                 fontsize=9)
    return save_png(fig, path)


# --------------------------------------------------------------------------- runs
@dataclass
class RunInfo:
    """A saved run: its model, method and (if any) APL pseudo-label state."""

    path: Path
    name: str
    method: str
    model: object
    apl_state: dict | None = None
    extra: dict = field(default_factory=dict)


def find_apl_state(method_state: dict) -> dict | None:
    """The APL component's state inside a method's ``state_dict`` (None without APL)."""
    for key, value in (method_state or {}).items():
        if key.rpartition(":")[2] == APL_STATE_KEY and isinstance(value, dict) and "kind" in value:
            return value
    return None


def load_run(path: str | Path) -> RunInfo:
    """Load a run folder written by ``spml train`` (or a bare model folder)."""
    path = Path(path)
    model = load_model(path)
    run_dir = path if (path / "model").is_dir() else path.parent if path.name == "model" else path
    apl = None
    ckpt = run_dir / "last.pt"
    if ckpt.exists():
        apl = find_apl_state(load_run_checkpoint(ckpt)["method"])
    return RunInfo(path=run_dir, name=run_dir.name, method=model.method or "?", model=model, apl_state=apl)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "run"


def apl_precision(state: dict, Y_train: np.ndarray, member: int = 0) -> dict:
    """Final and per-epoch precision of an APL state (one member) against full labels."""
    kind = np.asarray(state["kind"][member])
    ep = np.asarray(state["assigned_epoch"][member])
    return {"final": pseudo_label_precision(kind, Y_train),
            "by_epoch": pseudo_label_precision_by_epoch(kind, ep, Y_train)}


def _register_kind() -> None:
    ownership.register_kind("diagnostics", "a diagnostics folder", is_ours=_is_diagnostics_folder,
                            layout=("diagnostics.json", "*.png"))


def _is_diagnostics_folder(path: Path) -> bool:
    """A diagnostics folder written before the marker existed: its ``diagnostics.json``
    (a summary with ``runs`` and ``split``), not merely a file of that name."""
    try:
        summary = read_json(Path(path) / "diagnostics.json")
    except (OSError, SpmlError):
        return False
    return isinstance(summary, dict) and isinstance(summary.get("runs"), list) and "split" in summary


_register_kind()


def diagnose(bundle: Bundle | str | Path, runs: list[str | Path], out_dir: str | Path, *,
             reference: str | Path | None = None, split: str = "test", regime: str | None = None,
             log=print) -> dict:
    """Diagnostics of Zhou et al. for saved runs; returns the summary written to ``diagnostics.json``.

    ``reference`` is the run the others are compared with (Zhou: AN); by default the
    one run among ``runs`` whose method is ``an``.  ``regime`` chooses the training
    observations whose unobserved entries are analysed (default: the bundle's)."""
    bundle = bundle if isinstance(bundle, Bundle) else Bundle(bundle)

    def claim(create: bool) -> Path:  # never a folder of the user's, nor an input (checked first, made when writing)
        return ownership.claim(out_dir, "diagnostics", create=create, inputs=[bundle.path, *runs])

    out = claim(False)
    Y_train = bundle.labels("train")
    Y_eval = bundle.labels(split)
    if Y_train is None or Y_eval is None:
        raise SpmlError(f"{bundle.path}: the diagnostics need full labels (training and {split}); "
                        "this bundle holds observations only")
    Z = bundle.observations("train", regime=regime)
    infos = [load_run(r) for r in runs]
    if reference is not None:
        ref_path = Path(reference)
        ref = next((i for i in infos if i.path.resolve() == load_run(ref_path).path.resolve()), None)
        if ref is None:
            ref = load_run(ref_path)
            infos.insert(0, ref)
    else:
        ans = [i for i in infos if i.method == "an"]
        if len(ans) > 1:
            raise SpmlError("several AN runs given; choose the reference with --reference")
        ref = ans[0] if ans else None
        if ref is None and len(infos) > 1:
            raise SpmlError("no run with method 'an' among the runs; choose the reference with --reference RUN")
    names = {}
    for i in infos:  # unique, filename-safe names
        base = _slug(i.name)
        names[id(i)] = base if base not in names.values() else f"{base}-{len(names)}"

    summary = {"bundle": str(bundle.path), "split": split, "regime": regime or bundle.regime,
               "reference": None if ref is None else str(ref.path), "runs": []}
    preds = {}
    for i in infos:
        if i.model.label_names != bundle.label_names:
            raise SpmlError(f"{i.path}: the model's labels differ from the bundle's")
        fs = i.model.info.get("feature_set")
        p_train = i.model.predict_proba(bundle.features("train", fs))
        # AP on logits: probabilities of confident logits saturate to 1.0 and would create ties
        p_eval = i.model.decision_function(bundle.features(split, fs))
        w = unobserved_wasserstein(p_train, Z, Y_train)
        preds[id(i)] = (p_eval, w)
        rec = {"run": str(i.path), "name": names[id(i)], "method": i.method,
               f"{split}_map": mean_average_precision(Y_eval, p_eval).map,
               "wasserstein": [None if math.isnan(v) else float(v) for v in w],
               "mean_wasserstein": float(np.nanmean(w)) if np.isfinite(w).any() else None}
        if i.apl_state is not None:
            rec["apl_precision"] = apl_precision(i.apl_state, Y_train)
        summary["runs"].append(rec)

    out = claim(True)
    if ref is not None:
        p_ref, w_ref = preds[id(ref)]
        for i, rec in zip(infos, summary["runs"]):
            if i is ref:
                continue
            p_eval, w = preds[id(i)]
            n = names[id(i)]
            title = f"{bundle.name}: {i.method} ({n}) vs {ref.method} ({names[id(ref)]})"
            plot_wasserstein_scatter(w_ref, w, out / f"wasserstein-{n}.png", reference_name=ref.method.upper(),
                                     method_name=i.method.upper(), title=title)
            delta, share = class_ap_change(Y_eval, p_eval, p_ref)
            plot_ap_change(delta, bundle.label_names, out / f"ap-change-{n}.png", method_name=i.method.upper(),
                           reference_name=ref.method.upper(), title=f"{title}, {split} set")
            rec["share_above_diagonal"] = share_above_diagonal(w_ref, w)
            rec["ap_change"] = [None if math.isnan(v) else float(v) for v in delta]
            rec["share_classes_improved"] = share
            rec["figures"] = [f"wasserstein-{n}.png", f"ap-change-{n}.png"]
    write_json(out / "diagnostics.json", summary)
    return summary


def format_summary(summary: dict) -> str:
    """Plain-text report of :func:`diagnose`'s summary."""
    split = summary["split"]
    lines = [f"{'run':32s} {'method':8s} {split + ' mAP':>9s} {'mean W1':>8s} {'W1 > ref':>9s} "
             f"{'AP up':>7s} {'APL precision':>14s}"]
    for r in summary["runs"]:
        ref = r["run"] == summary["reference"]
        above = "ref" if ref else ("" if "share_above_diagonal" not in r else f"{100 * r['share_above_diagonal']:.1f}%")
        up = "ref" if ref else ("" if "share_classes_improved" not in r else f"{100 * r['share_classes_improved']:.1f}%")
        mw = "" if r["mean_wasserstein"] is None else f"{r['mean_wasserstein']:.4f}"
        prec = ""
        if "apl_precision" in r:
            f = r["apl_precision"]["final"]
            prec = "none" if not f["n_negative"] else f"{f['negative']:.2f}% of {f['n_negative']}"
        lines.append(f"{r['name'][:32]:32s} {r['method'][:8]:8s} {r[split + '_map']:9.2f} {mw:>8s} {above:>9s} "
                     f"{up:>7s} {prec:>14s}")
    for r in summary["runs"]:
        if r.get("apl_precision", {}).get("by_epoch"):
            lines.append(f"\nAPL negative pseudo-labels of {r['name']} vs full training labels (cumulative):")
            lines.append(f"  {'epoch':>5s} {'labels':>8s} {'precision':>10s} {'new':>6s} {'new prec.':>10s}")
            for e in r["apl_precision"]["by_epoch"]:
                lines.append(f"  {e['epoch']:5d} {e['n_negative']:8d} {e['negative']:9.2f}% {e['n_new_negative']:6d} "
                             f"{e['new_negative']:9.2f}%")
    return "\n".join(lines)
