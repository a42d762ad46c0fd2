"""Zhou et al. (ECCV 2022) analyses: the annotated positives' loss, and loss landscapes.

* ``zhou-positive-loss`` — their Fig. 2b: the loss ``L_+ = −log σ(s)`` of the annotated
  (observed) positive labels over training, for AN and EM (with α = 1, as in the figure).
  The paper: "L_+ of AN loss is more unstable and would increase in early training",
  because the C−1 assumed negatives dominate the AN gradient (§3.2).  Here it is
  measured on the whole training set after every epoch (epoch 0: the initial head), mean
  over the observed positives, per seed.
* ``zhou-landscape`` — their Fig. 5a,b: the loss around the trained weights θ* of AN, EM and
  EM+APL along filter-normalised random directions (Li, Xu, Taylor, Studer & Goldstein,
  "Visualizing the Loss Landscape of Neural Nets", NeurIPS 2018, §4): a Gaussian direction
  ``d`` with each filter ``d_j`` rescaled to ``‖θ*_j‖`` — for a linear head the filter is
  one label's weight vector (a column of ``W``, one output unit); biases get direction 0
  (Li et al. do the same for biases and batch-norm parameters).  The 1-D slice is
  ``L(θ* + a·δ)``, the 2-D slice ``L(θ* + a·δ + b·η)``, ``a, b ∈ [−r, r]``; the same raw
  random directions (one seed) are used for every method before normalisation.  L is each
  method's own training objective on the full training set with its final state (APL's
  pseudo-labels included), as the paper plots each model's loss around its own minimum.
"""
from __future__ import annotations

import numpy as np

from ...config import TrainConfig, parse_params
from ...errors import ConfigError
from ...ownership import atomic_path, write_json
from .base import (
    Arg,
    linear_setup,
    prepare_out,
    pyplot,
    register_analysis,
    resolve_bundle,
    save_figure,
    seed_list,
    write_table_figure,
)

_TRAIN_ARGS = (
    Arg(("--epochs",), dict(type=int, default=25, help="training epochs")),
    Arg(("--lr",), dict(type=float, default=1e-3, help="learning rate")),
    Arg(("--batch-size",), dict(type=int, default=8, help="batch size")),
)


# ---------------------------------------------------------------- observed-positive loss
def observed_positive_loss(logits, Z) -> np.ndarray:
    """Mean ``−log σ(s)`` over the observed positives (``Z == 1``), per member.

    ``logits`` ``(G, N, L)`` (or ``(N, L)``), ``Z`` ``(N, L)``; computed as
    ``softplus(−s)`` on logits.  Returns ``(G,)`` (nan without observed positives).

    >>> observed_positive_loss(np.zeros((1, 2, 2)), np.array([[1, 0], [0, 1]]))
    array([0.69314718])
    """
    import torch  # lazy: torch-free CLI start-up

    s = torch.as_tensor(np.asarray(logits), dtype=torch.float64)
    if s.dim() == 2:
        s = s.unsqueeze(0)
    mask = torch.as_tensor(np.asarray(Z) == 1)
    if not bool(mask.any()):
        return np.full(s.shape[0], np.nan)
    vals = torch.nn.functional.softplus(-s)[:, mask]
    return vals.mean(dim=1).numpy()


@register_analysis("zhou-positive-loss", help="loss of the annotated positives over epochs, AN vs EM",
                   paper="Zhou et al. 2022, Fig. 2b",
                   arguments=(Arg(("--methods",), dict(nargs="+", default=["an", "em"],
                                                       help="methods to compare")),
                              Arg(("--alpha",), dict(type=float, default=1.0,
                                                     help="EM's alpha (Fig. 2b uses 1; the training default is 0.1)")),
                              Arg(("--seeds",), dict(type=int, default=3, help="number of seeds (Fig. 2b: 3 runs)")),)
                   + _TRAIN_ARGS)
def positive_loss(source, out, *, data_root=None, seed: int = 0, threads=None, device=None, methods=("an", "em"),
                  alpha: float = 1.0, seeds: int = 3, epochs: int = 25, lr: float = 1e-3, batch_size: int = 8,
                  log=print) -> dict:
    """``L_+`` (mean −log σ over the observed positives of the training set) after every epoch (Zhou Fig. 2b).

    Writes ``positive-loss.csv`` (method, seed, epoch, loss), ``positive-loss.json`` (with
    the mean and std over seeds per epoch) and ``positive-loss.png``."""
    import torch  # lazy: torch-free CLI start-up

    from ...training.linear import num_threads  # lazy: torch-free CLI start-up

    out = prepare_out(out, source)
    bundle = resolve_bundle(source, out, data_root=data_root, log=log)
    sl = seed_list(seed, seeds)
    rows: list[dict] = []
    for m in methods:
        params = {"alpha": alpha} if m in ("em", "em-apl") else {}
        cfg = TrainConfig(method=m, params=params, epochs=epochs, lr=lr, batch_size=batch_size, threads=threads, device=device or "auto")
        with num_threads(threads), torch.random.fork_rng():
            setup = linear_setup(bundle, cfg, sl)
            Z = np.asarray(setup.Z)

            def record(epoch: int, _m=m, _setup=setup, _Z=Z) -> None:
                with torch.no_grad():
                    vals = observed_positive_loss(_setup.learner.scores("train").cpu(), _Z)
                for s, v in zip(sl, vals):
                    rows.append({"method": _m, "seed": s, "epoch": epoch, "positive_loss": float(v)})
                if epoch % 5 == 0 or epoch == epochs:
                    log(f"{_m} epoch {epoch}: L+ = {np.mean(vals):.4f}")

            record(0)
            setup.fit(on_epoch=lambda info, _r=record: _r(info["epoch"]))
    mean = {}
    for m in methods:
        mean[m] = []
        for e in range(epochs + 1):
            v = [r["positive_loss"] for r in rows if r["method"] == m and r["epoch"] == e]
            mean[m].append({"epoch": e, "mean": float(np.mean(v)), "std": float(np.std(v))})
    summary = {"bundle": str(bundle.path), "dataset": bundle.name, "methods": list(methods), "alpha": alpha,
               "seeds": sl, "epochs": epochs, "lr": lr, "batch_size": batch_size, "rows": rows, "mean": mean}
    write_table_figure(out, "positive-loss", rows, summary, plot_positive_loss)
    return summary


def plot_positive_loss(summary: dict, path):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.5))
    for m, pts in summary["mean"].items():
        e = np.array([p["epoch"] for p in pts])
        mu = np.array([p["mean"] for p in pts])
        sd = np.array([p["std"] for p in pts])
        lab = m.upper() + (f" (α = {summary['alpha']:g})" if m in ("em", "em-apl") else "")
        line, = ax.plot(e, mu, marker="o", ms=3, label=lab)
        ax.fill_between(e, mu - sd, mu + sd, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("epoch (0 = initial head)")
    ax.set_ylabel("loss of annotated positives  L+ = −log σ(s)")
    ax.set_title(f"{summary['dataset']}: L+ on the training set (mean ± std over {len(summary['seeds'])} seeds)",
                 fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


# -------------------------------------------------------------------------- landscape
def filter_normalized_direction(params: dict, generator) -> dict:
    """A random direction with each filter scaled to the norm of the weights' filter (Li et al. 2018, §4).

    ``params`` maps names to tensors of a stacked head (leading member axis of size 1):
    weights ``(1, D, H)`` have one filter per output unit (column ``h``); a 1-D parameter
    per unit (bias, ``(1, 1, H)``) gets direction 0.  Draws from ``generator`` in the
    order of ``params``."""
    import torch  # lazy: torch-free CLI start-up

    out = {}
    for name, w in params.items():
        d = torch.randn(w.shape, generator=generator, dtype=w.dtype).to(w.device)  # CPU draws: same on any device
        if name.endswith("bias") or w.dim() < 2 or w.shape[-2] == 1:
            out[name] = torch.zeros_like(w)
            continue
        wn = w.norm(dim=-2, keepdim=True)  # per output unit: norm over the input dimension
        dn = d.norm(dim=-2, keepdim=True).clamp_min(1e-12)
        out[name] = d * (wn / dn)
    return out


def landscape_slices(loss_fn, params: dict, d1: dict, d2: dict, *, radius: float = 1.0, steps_1d: int = 41,
                     steps_2d: int = 21) -> dict:
    """``loss_fn(params)`` along ``θ* + a·d1`` and on the grid ``θ* + a·d1 + b·d2``.

    Returns ``{"a": (n1,), "loss_1d": (n1,), "grid": (n2,), "loss_2d": (n2, n2)}`` with
    ``loss_2d[i, j] = L(θ* + grid[j]·d1 + grid[i]·d2)`` (rows: b, columns: a)."""
    a = np.linspace(-radius, radius, steps_1d)
    grid = np.linspace(-radius, radius, steps_2d)

    def at(x, y):
        return float(loss_fn({k: v + x * d1[k] + y * d2[k] for k, v in params.items()}))

    l1 = np.array([at(x, 0.0) for x in a])
    l2 = np.array([[at(x, y) for x in grid] for y in grid])
    return {"a": a, "loss_1d": l1, "grid": grid, "loss_2d": l2}


def method_loss_fn(setup, member: int = 0):
    """``params -> the method's full-batch training objective`` for member ``member`` of a
    trained :class:`LinearSetup` (model weights swapped in, the method's state as it is)."""
    import torch  # lazy: torch-free CLI start-up

    from ...methods.base import Batch  # lazy: torch-free CLI start-up

    X = setup.train_inputs()
    N = X.shape[0]
    Z = torch.from_numpy(np.asarray(setup.Z, dtype=np.int8).copy()).to(X.device)
    model = setup.learner.model
    batch = Batch(inputs=X.unsqueeze(0), index=torch.arange(N, device=X.device).unsqueeze(0), observed=Z.unsqueeze(0),
                  distinct=True)
    names = [n for n, _ in model.named_parameters()]
    if model.n_members != 1:
        raise ValueError("the landscape needs a single-member model")

    @torch.no_grad()
    def loss_fn(params: dict) -> float:
        saved = {n: p.detach().clone() for n, p in model.named_parameters()}
        try:
            for n, p in model.named_parameters():
                p.copy_(params[n])
            logits = model(batch.inputs)
            return float(setup.method.compute_loss(logits, batch, model)[0])
        finally:
            for n, p in model.named_parameters():
                p.copy_(saved[n])

    loss_fn.names = names  # type: ignore[attr-defined]
    return loss_fn


LANDSCAPE_METHODS = ("an", "em", "em-apl")


@register_analysis("zhou-landscape", help="1-D/2-D loss-landscape slices around the trained weights",
                   paper="Zhou et al. 2022, Fig. 5a,b (Li et al. 2018 filter normalisation)",
                   arguments=(Arg(("--methods",), dict(nargs="+", default=list(LANDSCAPE_METHODS),
                                                       help="methods to train and slice")),
                              Arg(("--radius",), dict(type=float, default=1.0,
                                                      help="slices cover a, b in [-radius, radius]")),
                              Arg(("--steps-1d",), dict(type=int, default=41, help="points of the 1-D slice")),
                              Arg(("--steps-2d",), dict(type=int, default=21, help="grid points per axis, 2-D")),
                              Arg(("--param",), dict(action="append", metavar="METHOD:NAME=VALUE", default=None,
                                                     help="a method's hyper-parameter, e.g. em:alpha=0.2")),)
                   + _TRAIN_ARGS)
def landscape(source, out, *, data_root=None, seed: int = 0, threads=None, device=None, methods=LANDSCAPE_METHODS,
              radius: float = 1.0, steps_1d: int = 41, steps_2d: int = 21, param=None, epochs: int = 25,
              lr: float = 1e-3, batch_size: int = 8, log=print) -> dict:
    """Loss around each method's trained head along filter-normalised random directions (Zhou Fig. 5a,b).

    Writes ``landscape.json`` (per method: the trained loss, the 1-D and 2-D slices, and a
    sharpness summary: the mean rise of the 1-D slice at ``|a| = radius/2``),
    ``landscape.npz`` (the arrays) and ``landscape.png`` (1-D slices together; one 2-D
    contour panel per method on a common colour scale)."""
    import torch  # lazy: torch-free CLI start-up

    from ...training.linear import num_threads  # lazy: torch-free CLI start-up

    out = prepare_out(out, source)
    if not radius > 0 or steps_1d < 3 or steps_2d < 3:
        raise ConfigError("--radius must be > 0 and --steps-1d/--steps-2d >= 3")
    bundle = resolve_bundle(source, out, data_root=data_root, log=log)
    per_method = _method_params(param, methods)
    results: dict = {}
    arrays: dict = {}
    for m in methods:
        cfg = TrainConfig(method=m, params=per_method.get(m, {}), epochs=epochs, lr=lr, batch_size=batch_size,
                          threads=threads, device=device or "auto")
        with num_threads(threads), torch.random.fork_rng():
            setup = linear_setup(bundle, cfg, seed_list(seed, 1))
            setup.fit()
            loss_fn = method_loss_fn(setup)
            params = {n: p.detach().clone() for n, p in setup.learner.model.named_parameters()}
            gen = torch.Generator().manual_seed(int(seed))  # the same raw directions for every method
            d1 = filter_normalized_direction(params, gen)
            d2 = filter_normalized_direction(params, gen)
            trained = loss_fn(params)
            sl = landscape_slices(loss_fn, params, d1, d2, radius=radius, steps_1d=steps_1d, steps_2d=steps_2d)
        half = np.abs(np.abs(sl["a"]) - radius / 2) < 1e-9
        rise = float(np.mean(sl["loss_1d"][half]) - trained) if half.any() else float("nan")
        results[m] = {"params": dict(setup.method.params), "trained_loss": trained,
                      "rise_at_half_radius": rise, "loss_1d": sl["loss_1d"].tolist(),
                      "loss_2d": sl["loss_2d"].tolist()}
        arrays[f"{m}_loss_1d"] = sl["loss_1d"]
        arrays[f"{m}_loss_2d"] = sl["loss_2d"]
        log(f"{m}: trained loss {trained:.4f}, rise at a = ±{radius / 2:g}: {rise:.4f}")
    summary = {"bundle": str(bundle.path), "dataset": bundle.name, "epochs": epochs, "lr": lr,
               "batch_size": batch_size, "seed": seed, "radius": radius, "a": sl["a"].tolist(),
               "grid": sl["grid"].tolist(), "methods": results}
    arrays["a"], arrays["grid"] = sl["a"], sl["grid"]
    write_json(out / "landscape.json", summary)
    with atomic_path(out / "landscape.npz") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    plot_landscape(summary, out / "landscape.png")
    summary["written"] = [str(out / n) for n in ("landscape.json", "landscape.npz", "landscape.png")]
    return summary


def _method_params(pairs, methods) -> dict:
    out: dict = {}
    for p in pairs or []:
        if ":" not in p:
            raise ConfigError(f"--param {p!r}: expected METHOD:NAME=VALUE")
        m, rest = p.split(":", 1)
        if m not in methods:
            raise ConfigError(f"--param {p!r}: method {m!r} is not among --methods {list(methods)}")
        out.setdefault(m, {}).update(parse_params([rest]))
    return out


def plot_landscape(summary: dict, path):
    """1-D slices and 2-D contours of ``L − L(θ*)`` (the rise above the trained loss) on one
    common scale, so the panels compare sharpness, as Zhou Fig. 5 puts its z-axes on the same
    scale; the trained losses are in the titles."""
    plt = pyplot()
    methods = list(summary["methods"])
    n = len(methods)
    fig, axes = plt.subplots(1, n + 1, figsize=(3.3 * (n + 1), 3.3), gridspec_kw={"wspace": 0.35})
    a = np.array(summary["a"])
    ax = axes[0]
    for m in methods:
        r = summary["methods"][m]
        ax.plot(a, np.array(r["loss_1d"]) - r["trained_loss"], label=f"{m.upper()} (L* = {r['trained_loss']:.3f})")
    ax.set_xlabel("a (filter-normalised direction δ)")
    ax.set_ylabel("L(θ* + a·δ) − L(θ*)")
    ax.set_title("1-D slices", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    g = np.array(summary["grid"])
    rises = {m: np.array(summary["methods"][m]["loss_2d"]) - summary["methods"][m]["trained_loss"] for m in methods}
    lo = min(float(v.min()) for v in rises.values())
    hi = max(float(v.max()) for v in rises.values())
    levels = np.linspace(lo, hi, 16) if hi > lo else None
    cs = None
    for i, (ax, m) in enumerate(zip(axes[1:], methods)):
        cs = ax.contourf(g, g, rises[m], levels=levels, cmap="viridis")
        ax.contour(g, g, rises[m], levels=levels, colors="white", linewidths=0.3)
        ax.plot([0], [0], "r+", ms=8)
        ax.set_title(f"{m.upper()}: L − L*", fontsize=9)
        ax.set_xlabel("a (δ)")
        if i == 0:
            ax.set_ylabel("b (η)")
        ax.set_aspect("equal")
    if cs is not None:
        fig.colorbar(cs, ax=list(axes[1:]), shrink=0.8, label="rise above the trained loss (common scale)")
    fig.suptitle(f"{summary['dataset']}: loss landscapes around the trained heads (each method's own training "
                 f"loss; Li et al. 2018 directions)", fontsize=10)
    return save_figure(fig, path)
