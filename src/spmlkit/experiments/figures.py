"""Figures from a finished ``spml bench`` (PNG, matplotlib's Agg canvas, written atomically).

``fig1-train-fraction.png``  Cole et al. Fig. 1: test mAP against the number of
    observed training labels (log axis) when training on a nested, seeded subsample of
    the training set (``--train-fractions``); one curve per method, mean ± std band
    over the seeds of each point's selected configuration; one panel per dataset.
``fig2-<dataset>.png``  Cole et al. Fig. 2: per epoch, the normalised histogram of the
    predicted probabilities of the *unobserved true positives* of the training set
    (one column per epoch, probability 0 → 1 upwards, white = no entry), one panel
    per method, for the configuration selected on validation (histograms averaged
    over its seeds).
``partial.png``  Zhou et al. Fig. 5c: test mAP against the fraction of hidden labels
    (``--hide-fractions``), one curve per method, one panel per dataset.

``spml figures RESULTS_DIR`` (re)draws them from ``runs.json.gz`` / ``partial-runs.json.gz``
(``runs.json`` / ``partial-runs.json`` in folders written before run records were
compressed) and ``groups/``; ``spml bench`` draws them when it finishes.
"""
from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from .. import ownership
from ..errors import CorruptFileError, SpmlError
from ..io import json_record_path, read_json, safe_filename
from ..ownership import write_bytes
from .protocol import select_best
from .tables import select_cells


def _figure(n_panels: int, *, width: float = 4.2, height: float = 3.4, ncols: int | None = None):
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib, only when a figure is drawn
    from matplotlib.figure import Figure

    ncols = ncols or min(n_panels, 3)
    nrows = int(math.ceil(n_panels / ncols))
    fig = Figure(figsize=(width * ncols, height * nrows))
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(nrows, ncols, i + 1) for i in range(n_panels)]
    return fig, axes


def _save(fig, path: Path) -> Path:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    ownership.folder(path.parent, "bench")  # the bench's own folder (a folder of anyone else's is refused)
    write_bytes(path, buf.getvalue())
    return path


def _cells(runs: list[dict], key_fields: tuple) -> dict:
    """The selected configuration per cell of ``key_fields``; cells with no usable run left out."""
    return {k: s for k, s in select_cells(runs, by=key_fields).items() if s is not None}


def _plot_band(ax, pts, label: str) -> None:
    """A line of ``(x, mean, std)`` points with a ±std band in the line's colour."""
    x, y, e = (np.array(v, dtype=float) for v in zip(*pts))
    (line,) = ax.plot(x, y, marker="o", ms=3, label=label)
    ax.fill_between(x, y - e, y + e, color=line.get_color(), alpha=0.2, lw=0)


def _order(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def _curve_figure(runs: list[dict], path: Path, methods: list[str] | None, *, key: str, xs: list, x_of,
                  xlabel: str, title, log_x: bool = False) -> Path:
    """Test mAP against ``key`` (one of ``xs``): one panel per dataset, one curve per method
    through the configuration selected on validation at each value (:func:`_cells`), a
    ±std band over its seeds.  ``x_of(selected, value)`` is the point's x (e.g. the number
    of observed labels rather than the fraction); ``title(dataset)`` the panel's title."""
    datasets = _order(r["dataset"] for r in runs)
    methods = methods or _order(r["method"] for r in runs)
    sel = _cells(runs, ("dataset", "method", key))
    fig, axes = _figure(len(datasets))
    for ax, d in zip(axes, datasets):
        for m in methods:
            pts = [(x_of(s, v), s.test_mean, s.test_std) for v in xs
                   if (s := sel.get((d, m, v))) is not None and math.isfinite(s.test_mean)]
            if pts:
                _plot_band(ax, pts, m)
        if log_x:
            from matplotlib.ticker import NullFormatter  # lazy: matplotlib, only when a figure is drawn

            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test mAP")
        ax.set_title(title(d))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)


def figure_train_fraction(runs: list[dict], path: Path, methods: list[str] | None = None) -> Path | None:
    """Cole et al. Fig. 1: test mAP against the number of observed training labels (log
    axis), one point per training fraction (``--train-fractions``)."""
    fractions = sorted({r["train_fraction"] for r in runs})
    if len(fractions) < 2:
        return None
    return _curve_figure(runs, path, methods, key="train_fraction", xs=fractions,
                         x_of=lambda s, f: s.runs[0]["n_observed"], xlabel="observed training labels", log_x=True,
                         title=lambda d: f"{d}: training fractions {fractions[0]:g}–{fractions[-1]:g}")


#: what every run of a bench's runs.json has, with its type (checked when read back)
_NUM = (int, float)
_RUN_FIELDS = {"dataset": (str,), "method": (str,), "lr": _NUM, "batch_size": (int,), "seed": (int,),
               "train_fraction": _NUM, "val_score": (*_NUM, type(None)), "test_map": (*_NUM, type(None)),
               "hide_prob": (*_NUM, type(None))}


def read_runs(path: Path, *, manifest: bool = True) -> list[dict]:
    """The ``runs`` of a bench's ``runs.json.gz`` / ``partial-runs.json.gz`` (or, with
    ``manifest=False``, of a ``groups/HASH.json`` record), schema-checked: a JSON object
    whose ``runs`` is a list of run objects with the fields the figures use, of the right
    types; anything else is a one-line :class:`CorruptFileError` naming the file."""
    rec = read_json(path)
    fix = "re-run the same 'spml bench' command to rewrite it" if manifest else \
        "delete it and re-run the same 'spml bench' command"
    if not isinstance(rec, dict) or not isinstance(rec.get("runs"), list):
        raise CorruptFileError(f"{path}: expected a JSON object with a list of runs under 'runs'; {fix}")
    fields = _RUN_FIELDS if manifest else {k: v for k, v in _RUN_FIELDS.items() if k in ("lr", "seed")}
    for i, r in enumerate(rec["runs"]):
        if not isinstance(r, dict):
            raise CorruptFileError(f"{path}: run {i + 1} is not a JSON object; {fix}")
        for k, types in fields.items():
            v = r.get(k, None if k == "hide_prob" else ...)
            if not isinstance(v, types) or isinstance(v, bool):
                raise CorruptFileError(f"{path}: run {i + 1}: {k!r} is missing or not of the expected type; {fix}")
        if manifest and not isinstance(r.get("group", ""), str):
            raise CorruptFileError(f"{path}: run {i + 1}: 'group' is not a string; {fix}")
        hist = r.get("hist_unobserved_positives")
        if hist is not None and not (isinstance(hist, list) and all(
                isinstance(h, list) and all(isinstance(x, _NUM) for x in h) for h in hist)):
            raise CorruptFileError(f"{path}: run {i + 1}: 'hist_unobserved_positives' is not a list of "
                                   f"histograms; {fix}")
    return rec["runs"]


def selected_histograms(results_dir: Path, runs: list[dict], dataset: str, method: str):
    """Mean over seeds of the selected configuration's per-epoch histograms, ``(E, bins)``,
    or None when the runs recorded none."""
    rs = [r for r in runs if r["dataset"] == dataset and r["method"] == method and r["train_fraction"] == 1.0
          and r.get("hide_prob") is None]
    if not rs:
        return None
    try:
        s = select_best(rs)
    except ValueError:
        return None
    hists = []
    cache: dict = {}
    for r in s.runs:
        g = r["group"]
        if g not in cache:
            p = results_dir / "groups" / f"{g}.json"
            cache[g] = read_runs(p, manifest=False) if p.exists() else []
        for full in cache[g]:
            if full["lr"] == r["lr"] and full["seed"] == r["seed"] and full.get("hist_unobserved_positives"):
                hists.append(np.asarray(full["hist_unobserved_positives"], dtype=float))
    if not hists:
        return None
    e = min(len(h) for h in hists)
    return np.mean([h[:e] for h in hists], axis=0), s


def figure_histograms(results_dir: Path, runs: list[dict], dataset: str, path: Path,
                      methods: list[str] | None = None) -> Path | None:
    import matplotlib  # lazy: matplotlib, only when a figure is drawn

    methods = methods or _order(r["method"] for r in runs if r["dataset"] == dataset)
    panels = []
    for m in methods:
        got = selected_histograms(results_dir, runs, dataset, m)
        if got is not None:
            panels.append((m, *got))
    if not panels:
        return None
    fig, axes = _figure(len(panels), width=3.8, height=3.4, ncols=min(len(panels), 4))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
    for ax, (m, H, s) in zip(axes, panels):
        E, bins = H.shape
        data = np.ma.masked_where(H.T <= 0, H.T)
        im = ax.imshow(data, origin="lower", aspect="auto", cmap=cmap, vmin=0, vmax=max(float(H.max()), 1e-9),
                       extent=(0.5, E + 0.5, 0.0, 1.0), interpolation="nearest")
        ax.set_xlabel("epoch")
        ax.set_ylabel("predicted probability")
        ax.set_title(f"{m} (lr {s.lr:.0e}, bs {s.batch_size})", fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.suptitle(f"{dataset}: predicted probabilities of unobserved true positives (training set)", fontsize=10)
    return _save(fig, path)


def figure_partial(runs: list[dict], path: Path, methods: list[str] | None = None) -> Path | None:
    """Zhou et al. Fig. 5c: test mAP against the fraction of hidden training labels
    (``--hide-fractions``)."""
    hides = sorted({r["hide_prob"] for r in runs if r.get("hide_prob") is not None})
    if not hides:
        return None
    return _curve_figure(runs, path, methods, key="hide_prob", xs=hides, x_of=lambda s, p: p,
                         xlabel="fraction of hidden training labels", title=lambda d: d)


def make_figures(results_dir: str | Path, methods: list[str] | None = None) -> list[Path]:
    """Draw every figure the results in ``results_dir`` allow; returns the files written."""
    d = Path(results_dir)
    main, partial = json_record_path(d / "runs.json"), json_record_path(d / "partial-runs.json")
    if not main.exists() and not partial.exists():
        raise SpmlError(f"{d}: no runs.json or partial-runs.json; is this a 'spml bench' results folder?")
    written = []
    if main.exists():
        runs = read_runs(main)
        f1 = figure_train_fraction(runs, d / "fig1-train-fraction.png", methods)
        if f1:
            written.append(f1)
        for ds in _order(r["dataset"] for r in runs):
            f2 = figure_histograms(d, runs, ds, d / f"fig2-{safe_filename(ds)}.png", methods)
            if f2:
                written.append(f2)
    if partial.exists():
        fp = figure_partial(read_runs(partial), d / "partial.png", methods)
        if fp:
            written.append(fp)
    return written
