"""Cole et al. (CVPR 2021) analyses: sensitivity to k, and ROLE's estimated label matrix.

* ``cole-k-sensitivity`` — test mAP of EPR and ROLE when they are given a wrong number of
  expected positives per example: ``k = f × k̂`` for factors ``f`` (default
  0.25, 0.5, 1, 2, 4), ``k̂`` the mean number of positives per training example (Eq. A1,
  the "true" k* of their Table A3) unless ``--k`` is given.  Their appendix B / Fig. A1
  sweeps k over the interval ``I_5`` of Table A2 and finds ROLE "stable for values of k in
  I_5"; the factors here go further, to show where it stops being stable.
* ``cole-role-estimator`` — ROLE's label estimator ``Ỹ = σ(φ)`` (§5.4, Eq. 11) against the
  full training labels after every epoch: precision and recall of its top entries among the
  *unobserved* entries.  Two budgets: the ``M_k = round(N·k) − #observed positives`` top
  entries (the number of unobserved positives the EPR term of Eq. 11 asks for) and the
  entries with ``ŷ ≥ 0.5`` (the estimator's own decisions); plus R-precision (the top
  ``M*`` = number of unobserved true positives, where precision = recall).  Their Fig. 2 /
  Table 2 make the qualitative claim that ROLE "recovers many of the unobserved positive
  labels during training".
"""
from __future__ import annotations

import math
import time

import numpy as np

from ...config import TrainConfig, parse_params
from ...errors import ConfigError
from ...labels import expected_positives
from .base import (
    Arg,
    check_positive,
    linear_setup,
    prepare_out,
    pyplot,
    register_analysis,
    require_full_labels,
    resolve_bundle,
    save_figure,
    seed_list,
    write_table_figure,
)

K_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
K_METHODS = ("epr", "role")

_TRAIN_ARGS = (
    Arg(("--epochs",), dict(type=int, default=25, help="training epochs (Cole et al. §6.1: 25)")),
    Arg(("--lr",), dict(type=float, default=1e-3, help="learning rate")),
    Arg(("--batch-size",), dict(type=int, default=8, help="batch size")),
    Arg(("--seeds",), dict(type=int, default=3, help="number of seeds (members trained together)")),
)


# ------------------------------------------------------------------ k sensitivity
@register_analysis("cole-k-sensitivity", help="mAP of EPR/ROLE against the assumed number of positives k",
                   paper="Cole et al. 2021, appendix B, Fig. A1",
                   arguments=(Arg(("--methods",), dict(nargs="+", default=list(K_METHODS),
                                                       help="methods that take k")),
                              Arg(("--factors",), dict(nargs="+", type=float, default=list(K_FACTORS),
                                                       help="k = factor x the estimated k")),
                              Arg(("--k",), dict(type=float, default=None,
                                                 help="the estimated k (default: mean positives per training "
                                                      "example, Eq. A1)")),) + _TRAIN_ARGS)
def k_sensitivity(source, out, *, data_root=None, seed: int = 0, threads=None, device=None, methods=K_METHODS,
                  factors=K_FACTORS, k=None, epochs: int = 25, lr: float = 1e-3, batch_size: int = 8,
                  seeds: int = 3, log=print) -> dict:
    """Test mAP of each method in ``methods`` trained with ``k = factor × k̂`` (Cole appendix B, Fig. A1).

    Each (method, factor) trains ``seeds`` members together (linear setting, the best
    validation epoch's test mAP, as ``spml bench``).  Writes ``k-sensitivity.csv`` (one row
    per run), ``k-sensitivity.json`` (k̂, and mean/std per method and factor) and
    ``k-sensitivity.png`` (mAP ± std against k, log scale, k̂ marked).  Factors that would
    make k exceed the number of labels L are skipped (the losses need 0 < k ≤ L)."""
    from ...methods.base import get_method_spec  # lazy: torch-free CLI start-up
    from ...training import train_linear

    out = prepare_out(out, source)
    bundle = resolve_bundle(source, out, data_root=data_root, log=log)
    factors = check_positive("--factors", factors)
    for m in methods:
        if "k" not in get_method_spec(m).hyperparameters:
            raise _config_error(f"method {m!r} takes no k; choose among methods with a k (e.g. epr, role)")
    if k is None:
        require_full_labels(bundle, "train")
        k = expected_positives(bundle.labels("train"))
    elif not k > 0:
        raise _config_error(f"--k must be > 0, got {k}")
    skipped = [float(f) for f in factors if f * k > bundle.n_labels]  # EPR/ROLE need 0 < k <= L
    factors = [f for f in factors if f * k <= bundle.n_labels]
    if skipped:
        log(f"skipping factor(s) {skipped}: k would exceed the number of labels L = {bundle.n_labels}")
    if not factors:
        raise _config_error(f"every factor gives k > L = {bundle.n_labels} (k = {k:.3g}); choose smaller --factors")
    sl = seed_list(seed, seeds)
    rows = []
    for m in methods:
        for f in factors:
            t0 = time.perf_counter()
            cfg = TrainConfig(method=m, epochs=epochs, lr=lr, batch_size=batch_size, expected_positives=f * k,
                              threads=threads, device=device or "auto")
            res = train_linear(bundle, cfg, lrs=[lr] * len(sl), seeds=sl)
            for r in res:
                rows.append({"method": m, "factor": float(f), "k": float(r.expected_positives), "seed": r.seed,
                             "test_map": r.test_map, "best_epoch": r.best_epoch, "train_map": r.train_map})
            maps = [r.test_map for r in res]
            log(f"{m} k={f * k:.3g} (x{f:g}): test mAP {np.mean(maps):.2f} ({time.perf_counter() - t0:.0f}s)")
    summary = summarise_k(rows, k)
    summary.update({"skipped_factors": skipped, "n_labels": bundle.n_labels})
    summary.update({"bundle": str(bundle.path), "dataset": bundle.name, "epochs": epochs, "lr": lr,
                    "batch_size": batch_size, "seeds": sl})

    write_table_figure(out, "k-sensitivity", rows, summary, plot_k_sensitivity)
    return summary


def _config_error(msg):
    return ConfigError(msg)


def summarise_k(rows: list[dict], k_hat: float) -> dict:
    """Mean and std (over seeds, ``ddof=0``) of test mAP per method and factor."""
    out: dict = {"k_hat": float(k_hat), "methods": {}}
    for m in dict.fromkeys(r["method"] for r in rows):
        pts = []
        for f in dict.fromkeys(r["factor"] for r in rows if r["method"] == m):
            vals = [r["test_map"] for r in rows if r["method"] == m and r["factor"] == f]
            pts.append({"factor": f, "k": f * k_hat, "mean": float(np.mean(vals)), "std": float(np.std(vals)),
                        "n": len(vals)})
        out["methods"][m] = pts
    return out


def plot_k_sensitivity(summary: dict, path):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for m, pts in summary["methods"].items():
        ks = np.array([p["k"] for p in pts])
        mu = np.array([p["mean"] for p in pts])
        sd = np.array([p["std"] for p in pts])
        order = np.argsort(ks)
        ax.errorbar(ks[order], mu[order], yerr=sd[order], marker="o", capsize=3, label=m.upper())
    ax.axvline(summary["k_hat"], color="grey", ls="--", lw=1, label=f"estimated k = {summary['k_hat']:.2f}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("assumed number of positives per example k (log scale)")
    ax.set_ylabel("test mAP")
    ax.set_title(f"{summary.get('dataset', '')}: sensitivity to a wrong k (mean ± std over "
                 f"{len(summary.get('seeds', [])) or '?'} seeds)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


# ------------------------------------------------------------- ROLE's label estimator
def estimator_precision_recall(probs: np.ndarray, Z: np.ndarray, Y: np.ndarray, *, budget: int,
                               threshold: float = 0.5) -> dict:
    """Precision and recall of an estimated label matrix on the **unobserved** entries.

    ``probs`` ``(N, L)`` estimated probabilities, ``Z`` observations (0 = unobserved),
    ``Y`` full labels.  Entries ``Z == 0`` are ranked by ``probs`` (ties by position, stable):

    * ``top``: the ``budget`` highest are predicted positive;
    * ``threshold``: entries with ``probs >= threshold`` are predicted positive
      (precision ``nan`` when there is none);
    * ``r_precision``: precision of the top ``M*`` entries, ``M*`` = number of unobserved
      true positives (there precision equals recall).

    >>> P = np.array([[.9, .8, .1], [.2, .7, .6]]); Z = np.array([[1, 0, 0], [0, 0, 0]])
    >>> Y = np.array([[1, 1, 0], [0, 0, 1]], bool)
    >>> r = estimator_precision_recall(P, Z, Y, budget=2)
    >>> r["top_precision"], r["top_recall"], r["threshold_precision"], r["r_precision"]
    (0.5, 0.5, 0.6666666666666666, 0.5)
    """
    probs, Z, Y = np.asarray(probs, dtype=np.float64), np.asarray(Z), np.asarray(Y, dtype=bool)
    unobs = Z == 0
    s, t = probs[unobs], Y[unobs]
    n_pos = int(t.sum())
    order = np.argsort(-s, kind="stable")
    budget = int(max(0, min(budget, s.size)))
    tp_top = int(t[order[:budget]].sum())
    pred = s >= threshold
    tp_thr = int((t & pred).sum())
    tp_r = int(t[order[:n_pos]].sum())
    nan = float("nan")
    return {"budget": budget, "top_tp": tp_top,
            "top_precision": tp_top / budget if budget else nan,
            "top_recall": tp_top / n_pos if n_pos else nan,
            "threshold_predicted": int(pred.sum()), "threshold_tp": tp_thr,
            "threshold_precision": tp_thr / int(pred.sum()) if pred.any() else nan,
            "threshold_recall": tp_thr / n_pos if n_pos else nan,
            "r_precision": tp_r / n_pos if n_pos else nan,
            "unobserved_positives": n_pos, "unobserved": int(s.size),
            "mean_positives_per_example": float(probs.sum(1).mean()) if probs.size else nan}


def k_budget(k: float, Z: np.ndarray) -> int:
    """``round(N·k) − #observed positives``: the unobserved positives that k implies (≥ 0)."""
    Z = np.asarray(Z)
    return int(max(0, round(len(Z) * float(k)) - int((Z == 1).sum())))


@register_analysis("cole-role-estimator", help="ROLE's estimated label matrix against the truth, per epoch",
                   paper="Cole et al. 2021, §5.4 (Eq. 11), Fig. 2 / Table 2",
                   arguments=(Arg(("--threshold",), dict(type=float, default=0.5,
                                                         help="probability above which an entry counts as a "
                                                              "predicted positive")),
                              Arg(("--param",), dict(action="append", metavar="NAME=VALUE", default=None,
                                                     help="ROLE hyper-parameter (repeatable), e.g. lr_mult=10")),)
                   + _TRAIN_ARGS)
def role_estimator(source, out, *, data_root=None, seed: int = 0, threads=None, device=None, threshold: float = 0.5,
                   param=None, epochs: int = 25, lr: float = 1e-3, batch_size: int = 8, seeds: int = 3,
                   log=print) -> dict:
    """Precision/recall of ROLE's estimator ``σ(φ)`` on the unobserved training entries after every epoch.

    Epoch 0 is the §6.1 initialisation.  Writes ``role-estimator.csv`` (one row per seed and
    epoch), ``role-estimator.json`` (the same, with the budget ``M_k`` and the mean over
    seeds) and ``role-estimator.png`` (precision and recall against the epoch)."""
    import torch  # lazy: torch-free CLI start-up

    from ...methods.role import LabelEstimator  # lazy: torch-free CLI start-up
    from ...training.linear import num_threads

    out = prepare_out(out, source)
    bundle = resolve_bundle(source, out, data_root=data_root, log=log)
    require_full_labels(bundle, "train")
    if not 0 < threshold < 1:
        raise _config_error(f"--threshold must be in (0, 1), got {threshold}")
    params = parse_params(param)
    sl = seed_list(seed, seeds)
    cfg = TrainConfig(method="role", params=params, epochs=epochs, lr=lr, batch_size=batch_size, threads=threads, device=device or "auto")
    Y = np.asarray(bundle.labels("train"), dtype=bool)
    rows: list[dict] = []
    with num_threads(threads), torch.random.fork_rng():
        setup = linear_setup(bundle, cfg, sl)
        est = setup.method.component(LabelEstimator)
        Z = np.asarray(setup.Z)
        budget = k_budget(setup.k, Z)

        def record(epoch: int) -> None:
            for g, s in enumerate(sl):
                r = estimator_precision_recall(est.probabilities(g), Z, Y, budget=budget, threshold=threshold)
                rows.append({"epoch": epoch, "seed": s, **r})
            last = rows[-len(sl):]
            log(f"epoch {epoch}: top-{budget} precision {np.nanmean([r['top_precision'] for r in last]):.3f}, "
                f"recall {np.nanmean([r['top_recall'] for r in last]):.3f}")

        record(0)
        setup.fit(on_epoch=lambda info: record(info["epoch"]))
    summary = {"bundle": str(bundle.path), "dataset": bundle.name, "k": setup.k, "budget": budget,
               "threshold": threshold, "seeds": sl, "epochs": epochs, "lr": lr, "batch_size": batch_size,
               "params": dict(setup.method.params), "rows": rows, "mean": _mean_by_epoch(rows)}
    write_table_figure(out, "role-estimator", rows, summary, plot_role_estimator)
    return summary


_CURVES = ("top_precision", "top_recall", "threshold_precision", "threshold_recall", "r_precision")


def _mean_by_epoch(rows: list[dict]) -> list[dict]:
    out = []
    for e in sorted({r["epoch"] for r in rows}):
        sel = [r for r in rows if r["epoch"] == e]
        d = {"epoch": e}
        for c in _CURVES:
            vals = [r[c] for r in sel if not (isinstance(r[c], float) and math.isnan(r[c]))]
            d[c] = float(np.mean(vals)) if vals else float("nan")
        out.append(d)
    return out


def plot_role_estimator(summary: dict, path):
    plt = pyplot()
    mean = summary["mean"]
    ep = [m["epoch"] for m in mean]
    fig, ax = plt.subplots(figsize=(5.4, 3.6))
    styles = {"top_precision": ("tab:blue", "-", f"precision, top {summary['budget']} (k budget)"),
              "top_recall": ("tab:orange", "-", f"recall, top {summary['budget']} (k budget)"),
              "threshold_precision": ("tab:blue", ":", f"precision, ŷ ≥ {summary['threshold']:g}"),
              "threshold_recall": ("tab:orange", ":", f"recall, ŷ ≥ {summary['threshold']:g}"),
              "r_precision": ("tab:green", "--", "R-precision")}
    for c, (col, ls, lab) in styles.items():
        ax.plot(ep, [m[c] for m in mean], color=col, ls=ls, marker="o", ms=3, label=lab)
    rows0 = [r for r in summary["rows"] if r["epoch"] == 0]
    if rows0:
        share = rows0[0]["unobserved_positives"] / max(rows0[0]["unobserved"], 1)
        ax.axhline(share, color="grey", lw=0.8, ls="-.", label=f"share of positives among unobserved ({share:.2f})")
    ax.set_xlabel("epoch (0 = initialisation)")
    ax.set_ylabel("precision / recall vs full labels")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{summary['dataset']}: ROLE's estimated labels on unobserved training entries\n"
                 f"(k = {summary['k']:.2f}, mean over {len(summary['seeds'])} seeds)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    return save_figure(fig, path)
