"""Xie, Xiao & Huang (NeurIPS 2022, LAC) analyses: hyper-parameter sensitivity and attention maps.

* ``xie-sensitivity`` — their Figs. 3–5: test mAP of LAC as one hyper-parameter varies and
  the others keep their defaults: the PLC threshold δ (``threshold_stage2``, the stage-2
  threshold that also selects LAC's valid embeddings, Eq. 4–6; paper range 0.5–0.9), the
  temperature τ of the label-aware contrastive loss (Eq. 7; 0.1–2.0) and the queue size K
  (512–8192).  The paper: "the performance of the proposed method is generally insensitive
  to these three parameters" (largest gaps 0.3/0.2/0.2 mAP).  Runs shared between sweeps
  (the all-defaults point) are trained once.
* ``xie-attention`` — their Fig. 6: the label-wise decoder's attention of each label query
  over the image (the cross-attention weights of the last decoder layer, averaged over
  heads, one weight per spatial token of the backbone's feature map; they sum to 1), drawn
  over the image for the observed/true labels and the most confident others.  The weights
  are read with forward hooks on the attention module (``need_weights=True``), so the
  decoder itself is unchanged.
"""
from __future__ import annotations

import time

import numpy as np

from ...config import TrainConfig
from ...errors import ConfigError
from .base import (
    Arg,
    check_positive,
    prepare_out,
    pyplot,
    register_analysis,
    resolve_bundle,
    save_figure,
    write_table_figure,
)
from .li import _IMAGE_ARGS, epoch_logger, maps_on_test_images, peak_pixel, pick_labels, write_maps

SWEEPS = {  # parameter of the lac method -> (paper values, axis label)
    "threshold_stage2": ((0.5, 0.6, 0.7, 0.8, 0.9), "PLC threshold δ (stage 2)"),
    "temperature": ((0.1, 0.5, 1.0, 1.5, 2.0), "temperature τ"),
    "queue_size": ((512, 1024, 2048, 4096, 8192), "queue size K"),
}
_SWEEP_ARGS = {"threshold_stage2": "thresholds", "temperature": "temperatures", "queue_size": "queue_sizes"}

_FT_ARGS = tuple(a for a in _IMAGE_ARGS if a.dest not in ("images", "top"))


@register_analysis("xie-sensitivity", help="LAC's test mAP against its threshold, temperature and queue size",
                   paper="Xie et al. 2022, Figs. 3-5",
                   arguments=(Arg(("--sweeps",), dict(nargs="+", default=list(SWEEPS), choices=list(SWEEPS),
                                                      help="which hyper-parameters to sweep")),
                              Arg(("--thresholds",), dict(nargs="+", type=float,
                                                          default=list(SWEEPS["threshold_stage2"][0]),
                                                          help="values of threshold_stage2 (δ)")),
                              Arg(("--temperatures",), dict(nargs="+", type=float,
                                                            default=list(SWEEPS["temperature"][0]),
                                                            help="values of the temperature τ")),
                              Arg(("--queue-sizes",), dict(nargs="+", type=int, default=list(SWEEPS["queue_size"][0]),
                                                           help="values of the queue size K")),) + _FT_ARGS)
def sensitivity(source, out, *, data_root=None, seed: int = 0, threads=None, device=None, sweeps=tuple(SWEEPS),
                thresholds=SWEEPS["threshold_stage2"][0], temperatures=SWEEPS["temperature"][0],
                queue_sizes=SWEEPS["queue_size"][0], backbone: str = "efficientnet-lite0", weights=None,
                image_size: int = 224, epochs: int = 3, lr: float = 1e-4, batch_size: int = 16, ema_decay=None,
                log=print) -> dict:
    """Fine-tune LAC once per value of each swept hyper-parameter (others at their defaults; Xie Figs. 3–5).

    Writes ``lac-sensitivity.csv`` (parameter, value, test mAP, best epoch),
    ``lac-sensitivity.json`` (with the largest gap per parameter) and
    ``lac-sensitivity.png`` (one panel per parameter)."""
    import torch  # lazy: torch-free CLI start-up

    from ...methods.base import get_method_spec  # lazy: torch-free CLI start-up
    from ...training.finetune import train_finetune
    from ...training.linear import num_threads

    out = prepare_out(out, source)
    bundle = resolve_bundle(source, out, data_root=data_root, log=log)
    if bundle.kind != "images":
        raise ConfigError(f"{bundle.path} holds feature vectors; LAC fine-tunes on images")
    values = {"threshold_stage2": list(thresholds), "temperature": list(temperatures),
              "queue_size": [int(q) for q in queue_sizes]}
    defaults = get_method_spec("lac").hyperparameters
    for p in sweeps:
        flag = f"--{_SWEEP_ARGS[p].replace('_', '-')}"
        if p == "temperature":
            check_positive(flag, values[p])
        elif not values[p]:
            raise ConfigError(f"{flag}: give at least one value")
    cache: dict = {}
    rows = []
    for p in sweeps:
        for v in values[p]:
            params = {p: v}
            key = tuple(sorted({**defaults, **params}.items()))
            if key not in cache:
                t0 = time.perf_counter()
                cfg = TrainConfig(method="lac", params=params, setting="finetune", backbone=backbone,
                                  weights=weights, image_size=image_size, finetune_epochs=epochs, lr=lr,
                                  batch_size=batch_size, ema_decay=ema_decay, seed=seed, threads=threads, device=device or "auto")
                with num_threads(threads), torch.random.fork_rng():
                    (res,) = train_finetune(bundle, cfg, log=log, on_epoch=epoch_logger(log, f"{p}={v:g} "))
                cache[key] = res
                log(f"lac {p}={v:g}: test mAP {res.test_map:.2f} ({time.perf_counter() - t0:.0f}s)")
            res = cache[key]
            rows.append({"parameter": p, "value": v, "test_map": res.test_map, "best_epoch": res.best_epoch,
                         "val_score": res.val_score, "trained": res.params.get(p)})
    summary = {"bundle": str(bundle.path), "dataset": bundle.name, "backbone": backbone, "image_size": image_size,
               "epochs": epochs, "lr": lr, "batch_size": batch_size, "ema_decay": ema_decay, "seed": seed,
               "defaults": dict(defaults),
               "runs_trained": len(cache), "rows": rows, "largest_gap": {}}
    for p in sweeps:
        maps = [r["test_map"] for r in rows if r["parameter"] == p]
        summary["largest_gap"][p] = float(max(maps) - min(maps))
    write_table_figure(out, "lac-sensitivity", rows, summary, plot_sensitivity)
    return summary


def plot_sensitivity(summary: dict, path):
    """One panel per swept parameter, all on one mAP axis (at least 2 mAP tall, so that
    differences of a few hundredths are not blown up into slopes)."""
    plt = pyplot()
    params = list(summary["largest_gap"])
    maps = [r["test_map"] for r in summary["rows"]]
    lo, hi = min(maps), max(maps)
    mid, half = (lo + hi) / 2, max((hi - lo) / 2 * 1.15, 1.0)
    fig, axes = plt.subplots(1, len(params), figsize=(3.3 * len(params), 3.0), squeeze=False, sharey=True)
    for ax, p in zip(axes[0], params):
        pts = [r for r in summary["rows"] if r["parameter"] == p]
        x = [r["value"] for r in pts]
        ax.plot(range(len(x)), [r["test_map"] for r in pts], marker="o")
        ax.set_xticks(range(len(x)))
        ax.set_xticklabels([f"{v:g}" for v in x], fontsize=8)
        if summary["defaults"][p] in x:
            ax.axvline(x.index(summary["defaults"][p]), color="grey", ls=":", lw=1)
        ax.set_ylim(mid - half, mid + half)
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.set_xlabel(SWEEPS[p][1])
        ax.set_title(f"largest gap {summary['largest_gap'][p]:.2f} mAP", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("test mAP")
    fig.suptitle(f"{summary['dataset']}: LAC sensitivity ({summary['epochs']} epochs, {summary['backbone']}, "
                 f"{summary['image_size']} px; dotted: default)", fontsize=9, y=1.02)
    return save_figure(fig, path)


# --------------------------------------------------------------------------- attention
def decoder_attention(model, image) -> tuple[np.ndarray, np.ndarray]:
    """Label-wise attention of a decoder-head model for one image ``(3, H, W)``.

    Returns ``(attention (L, h, w), logits (L,))``: the last decoder layer's
    cross-attention weights from each label query to the ``h·w`` tokens of the feature map,
    averaged over heads (each label's weights sum to 1).  Read with hooks on the layer's
    ``nn.MultiheadAttention`` that ask it for its weights; the logits are unchanged."""
    import torch  # lazy: torch-free CLI start-up

    if getattr(model, "head_kind", None) != "decoder":
        raise ConfigError("label-wise attention maps need a model with the 'decoder' head (e.g. method lac)")
    attn = model.head.decoder[-1].attn
    seen: dict = {}

    def pre(module, args, kwargs):
        kwargs = dict(kwargs, need_weights=True, average_attn_weights=True)
        return args, kwargs

    def post(module, args, kwargs, output):
        seen["w"] = output[1].detach()

    h1 = attn.register_forward_pre_hook(pre, with_kwargs=True)
    h2 = attn.register_forward_hook(post, with_kwargs=True)
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            fmap = model.backbone.forward_map(image.unsqueeze(0))
            logits, _ = model.head(fmap)
    finally:
        h1.remove()
        h2.remove()
        model.train(was)
    h, w = fmap.shape[-2:]
    return seen["w"][0].reshape(-1, h, w).numpy(), logits[0].numpy()


@register_analysis("xie-attention", help="label-wise attention maps of the LAC decoder drawn on test images",
                   paper="Xie et al. 2022, Fig. 6",
                   arguments=(Arg(("--param",), dict(action="append", metavar="NAME=VALUE", default=None,
                                                     help="LAC hyper-parameter (repeatable)")),) + _IMAGE_ARGS)
def attention(source, out, *, data_root=None, seed: int = 0, threads=None, device=None, param=None,
              backbone: str = "efficientnet-lite0", weights=None, image_size: int = 224, epochs: int = 3,
              lr: float = 1e-4, batch_size: int = 16, ema_decay=None, images: int = 4, top: int = 3,
              log=print) -> dict:
    """Fine-tune LAC and draw its label-wise attention maps over test images (Xie Fig. 6).

    Writes ``attention.json`` (per image and drawn label: probability, attention peak in
    image pixels, the attention's maximum and its entropy relative to uniform),
    ``attention.npz`` (the maps at feature resolution) and ``attention.png`` (every map on one
    diverging colour scale centred on uniform attention 1/(h·w): white = uniform, red = up to
    twice it, blue = less, so near-uniform attention looks flat)."""
    def per_image(bundle, model, x, truth):
        att, logits = decoder_attention(model, x)
        probs = 1.0 / (1.0 + np.exp(-logits))
        labs = pick_labels(probs, truth, top)
        entries = []
        n_tok = att.shape[1] * att.shape[2]
        for c in labs:
            ci, cj, r, q = peak_pixel(att[c], (image_size, image_size))
            a = att[c].ravel()
            ent = float(-(a * np.log(np.clip(a, 1e-12, None))).sum() / np.log(n_tok)) if n_tok > 1 else 0.0
            entries.append({"label": bundle.label_names[c], "index": c, "true": bool(truth[c]),
                            "probability": float(probs[c]), "peak_cell": [ci, cj], "peak_row": r,
                            "peak_col": q, "max_weight": float(a.max()), "n_tokens": n_tok, "relative_entropy": ent})
        return {"feature_map": [int(att.shape[1]), int(att.shape[2])], "labels": entries}, att[labs]

    out = prepare_out(out, source)
    summary, maps = maps_on_test_images(
        source, out, what="attention maps", method="lac", param=param, backbone=backbone, weights=weights,
        image_size=image_size, epochs=epochs, lr=lr, batch_size=batch_size, ema_decay=ema_decay, seed=seed,
        threads=threads, device=device, data_root=data_root, images=images, top=top, per_image=per_image, log=log)
    n_tok = int(np.prod(maps["image0"].shape[1:]))
    write_maps(out, "attention", summary, maps, image_size=image_size,
               title=f"{summary['dataset']}: LAC label-wise attention (last decoder layer) as a multiple of uniform "
                     f"(white = 1/{n_tok}, red = more); test mAP {summary['test_map']:.1f}",
               value_range=(0.0, 2.0 / n_tok), cmap="bwr")
    return summary
