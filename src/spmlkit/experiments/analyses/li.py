"""Li, Wang & Chen (OPML) analyses: confidence histograms and Grad-CAM.

* ``li-confidence-histogram`` — their Fig. 3: histograms of the predicted confidences
  ``σ(s)`` at the positions where the test label matrix is positive, for the baseline
  (their "BCE", i.e. AN on single-positive data) and OPML; here also at the negative
  positions.  The paper: with OPML "the predicted confidence scores of positive labels are
  more inclined to" the high end, and the low bins hold fewer positives than with BCE —
  "OPML can alleviate the domination of negative labels".
* ``li-gradcam`` — their Fig. 7 / §IV-E: Gradient-weighted Class Activation Mapping
  (Selvaraju et al., ICCV 2017, Eq. 1–2) of a fine-tuned model: for label ``c`` and the
  last feature map ``A`` (``C × h × w``), ``α_k = (1/hw) Σ_ij ∂y_c/∂A_kij`` and
  ``L_c = ReLU(Σ_k α_k A_k)``, upsampled bilinearly to the image and scaled to [0, 1].
  ``y_c`` is the label's logit.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ...config import TrainConfig, parse_params
from ...errors import ConfigError
from ...ownership import atomic_path, write_json
from .base import (
    Arg,
    prepare_out,
    pyplot,
    register_analysis,
    require_full_labels,
    resolve_bundle,
    save_figure,
    write_table_figure,
)


# ------------------------------------------------------------------------ histograms
def confidence_histogram(probs: np.ndarray, Y: np.ndarray, *, bins: int = 10) -> dict:
    """Counts of ``probs`` at the positive and at the negative entries of ``Y`` in ``bins``
    equal bins of [0, 1] (the last bin closed).

    >>> h = confidence_histogram(np.array([[.05, .95], [.5, .15]]), np.array([[0, 1], [1, 0]], bool), bins=2)
    >>> h["positive"], h["negative"]
    ([0, 2], [2, 0])
    """
    probs, Y = np.asarray(probs, dtype=np.float64), np.asarray(Y, dtype=bool)
    edges = np.linspace(0.0, 1.0, int(bins) + 1)
    pos, _ = np.histogram(probs[Y], bins=edges)
    neg, _ = np.histogram(probs[~Y], bins=edges)
    return {"edges": edges.tolist(), "positive": pos.astype(int).tolist(), "negative": neg.astype(int).tolist(),
            "n_positive": int(Y.sum()), "n_negative": int((~Y).sum())}


@register_analysis("li-confidence-histogram", help="histograms of test confidences of positives/negatives, AN vs OPML",
                   paper="Li et al. (OPML), Fig. 3",
                   arguments=(Arg(("--methods",), dict(nargs="+", default=["an", "opml"], help="methods to compare")),
                              Arg(("--bins",), dict(type=int, default=10, help="bins over [0, 1]")),
                              Arg(("--split",), dict(default="test", choices=["val", "test"],
                                                     help="split whose label matrix is used")),
                              Arg(("--epochs",), dict(type=int, default=25, help="training epochs")),
                              Arg(("--lr",), dict(type=float, default=1e-3, help="learning rate")),
                              Arg(("--batch-size",), dict(type=int, default=8, help="batch size")),))
def confidence_histograms(source, out, *, data_root=None, seed: int = 0, threads=None, device=None, methods=("an", "opml"),
                          bins: int = 10, split: str = "test", epochs: int = 25, lr: float = 1e-3,
                          batch_size: int = 8, log=print) -> dict:
    """Histogram of ``σ(logit)`` of the split's positives and negatives per method (OPML paper Fig. 3).

    Each method trains once (linear setting, the best validation epoch).  Writes
    ``confidence-histogram.csv`` (method, group, bin edges, count, frequency),
    ``confidence-histogram.json`` and ``confidence-histogram.png``."""
    from ...training import train_linear  # lazy: torch-free CLI start-up

    out = prepare_out(out, source)
    if bins < 1:
        raise ConfigError(f"--bins must be >= 1, got {bins}")
    bundle = resolve_bundle(source, out, data_root=data_root, log=log)
    require_full_labels(bundle, split)
    Y = np.asarray(bundle.labels(split), dtype=bool)
    result: dict = {}
    rows = []
    for m in methods:
        t0 = time.perf_counter()
        cfg = TrainConfig(method=m, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed, threads=threads, device=device or "auto")
        (res,) = train_linear(bundle, cfg, keep_state=True)
        logits = res.state["test_logits" if split == "test" else "val_logits"]
        probs = 1.0 / (1.0 + np.exp(-np.asarray(logits, dtype=np.float64)))
        h = confidence_histogram(probs, Y, bins=bins)
        h.update({"test_map": res.test_map, "best_epoch": res.best_epoch,
                  "mean_positive_confidence": float(probs[Y].mean()) if Y.any() else None,
                  "mean_negative_confidence": float(probs[~Y].mean()) if (~Y).any() else None})
        result[m] = h
        for group in ("positive", "negative"):
            n = h[f"n_{group}"]
            for i, c in enumerate(h[group]):
                rows.append({"method": m, "group": group, "bin_lo": h["edges"][i], "bin_hi": h["edges"][i + 1],
                             "count": c, "frequency": c / n if n else float("nan")})
        log(f"{m}: {split} mAP {res.test_map:.2f}, mean confidence of positives {h['mean_positive_confidence']:.3f} "
            f"({time.perf_counter() - t0:.0f}s)")
    summary = {"bundle": str(bundle.path), "dataset": bundle.name, "split": split, "bins": bins, "seed": seed,
               "epochs": epochs, "lr": lr, "batch_size": batch_size, "methods": result}
    write_table_figure(out, "confidence-histogram", rows, summary, plot_confidence_histograms)
    return summary


def plot_confidence_histograms(summary: dict, path):
    plt = pyplot()
    methods = list(summary["methods"])
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.4))
    for ax, group in zip(axes, ("positive", "negative")):
        n_m = len(methods)
        for i, m in enumerate(methods):
            h = summary["methods"][m]
            edges = np.array(h["edges"])
            n = h[f"n_{group}"]
            freq = np.array(h[group]) / max(n, 1)
            width = (edges[1] - edges[0]) / (n_m + 1)
            ax.bar(edges[:-1] + width * (i + 0.5), freq, width=width, align="edge",
                   label=f"{m.upper()} (mAP {h['test_map']:.1f})")
        ax.set_xlim(0, 1)
        ax.set_xlabel("predicted confidence σ(s)")
        ax.set_ylabel("frequency")
        n = summary["methods"][methods[0]][f"n_{group}"]
        ax.set_title(f"{summary['split']} {group}s ({n} entries)", fontsize=9)
        if group == "negative":
            ax.set_yscale("log")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(f"{summary['dataset']}: confidence histograms", fontsize=10)
    return save_figure(fig, path)


# ---------------------------------------------------------------------------- Grad-CAM
def head_logits_from_map(model, fmap):
    """Logits ``(B, L)`` of an :class:`~spmlkit.models.image.ImageModel` from the backbone's
    feature map ``(B, C, h, w)`` (pooled heads average it, the decoder attends over it)."""
    if model.head_kind == "decoder":
        return model.head(fmap)[0]
    return model.head(fmap.mean(dim=(2, 3)))[0]


def grad_cam(model, image, labels) -> tuple[np.ndarray, np.ndarray]:
    """Grad-CAM maps (Selvaraju et al. 2017, Eq. 1–2) of ``labels`` for one image.

    ``image`` ``(3, H, W)`` in [0, 1]; returns ``(maps (len(labels), h, w), logits (L,))``
    at the feature map's resolution, not normalised (``ReLU(Σ_k α_k A_k)``)."""
    import torch  # lazy: torch-free CLI start-up

    was = model.training
    model.eval()
    try:
        with torch.enable_grad():
            fmap = model.backbone.forward_map(image.unsqueeze(0)).detach().requires_grad_(True)
            logits = head_logits_from_map(model, fmap)[0]
            maps = []
            for c in labels:
                (g,) = torch.autograd.grad(logits[int(c)], fmap, retain_graph=True)
                alpha = g[0].mean(dim=(1, 2))  # (C,)
                maps.append(torch.relu((alpha[:, None, None] * fmap[0]).sum(0)).detach())
    finally:
        model.train(was)
    return torch.stack(maps).numpy() if maps else np.zeros((0,) + tuple(fmap.shape[-2:])), logits.detach().numpy()


def upsample_map(m: np.ndarray, size: tuple[int, int], *, normalise: bool = True) -> np.ndarray:
    """A ``(h, w)`` map resized bilinearly to ``size``, negatives clipped, and (``normalise``)
    scaled to [0, 1] by its maximum (all zero stays zero)."""
    import torch  # lazy: torch-free CLI start-up

    t = torch.as_tensor(np.asarray(m, dtype=np.float32))[None, None]
    up = torch.nn.functional.interpolate(t, size=size, mode="bilinear", align_corners=False)[0, 0].numpy()
    up = np.maximum(up, 0)
    mx = up.max()
    return up / mx if normalise and mx > 0 else up


def peak_pixel(m: np.ndarray, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The arg-max cell ``(i, j)`` of a ``(h, w)`` map (first in row-major order) and the
    centre of that cell in an image of ``size`` pixels: ``(i, j, row, col)``."""
    m = np.asarray(m)
    i, j = np.unravel_index(int(np.argmax(m)), m.shape)
    return int(i), int(j), int((i + 0.5) * size[0] / m.shape[0]), int((j + 0.5) * size[1] / m.shape[1])


def epoch_logger(log, prefix: str = ""):
    """An ``on_epoch`` callback printing one progress line per fine-tuning epoch."""

    def on_epoch(info) -> None:
        for row in info["rows"]:
            log(f"{prefix}epoch {info['epoch']}: train loss {row['train_loss']:.4f}, validation "
                f"{row['val_score']:.2f} ({info['seconds']:.0f}s)")

    return on_epoch


def finetune_model(bundle, config, *, log=print):
    """Fine-tune ``config`` on ``bundle`` (:func:`spmlkit.training.finetune.train_finetune`)
    and rebuild the kept (best-validation) model in eval mode; returns ``(model, result)``."""
    from ...models.image import build_image_model  # lazy: torch-free CLI start-up
    from ...training.finetune import train_finetune

    (res,) = train_finetune(bundle, config, keep_state=True, log=log, on_epoch=epoch_logger(log))
    model = build_image_model(res.state["spec"], image_size=config.image_size, weights=config.weights,
                              pretrained=False, seed=config.seed)
    model.load_state_dict(res.state["model"])
    model.eval()
    return model, res


_IMAGE_ARGS = (
    Arg(("--backbone",), dict(default="efficientnet-lite0", help="image backbone")),
    Arg(("--weights",), dict(default=None, help="local weights file of the backbone (resnet50)")),
    Arg(("--image-size",), dict(type=int, default=224, help="input size in pixels")),
    Arg(("--epochs",), dict(type=int, default=3, help="fine-tuning epochs")),
    Arg(("--lr",), dict(type=float, default=1e-4, help="learning rate")),
    Arg(("--batch-size",), dict(type=int, default=16, help="batch size")),
    Arg(("--ema-decay",), dict(type=float, default=None,
                               help="EMA of the weights per step (None: the method's recipe, LAC 0.9997; 0: off). "
                                    "On a few hundred images 0.9997 barely leaves the initial weights")),
    Arg(("--images",), dict(type=int, default=4, help="number of test images to draw (the first ones)")),
    Arg(("--top",), dict(type=int, default=3, help="labels drawn per image: the true ones first, then the most "
                                                   "confident, up to this many")),
)


def pick_labels(probs: np.ndarray, truth: np.ndarray, top: int) -> list[int]:
    """The true labels (most confident first), then the most confident others, ``top`` in all."""
    order = list(np.argsort(-probs, kind="stable"))
    true = [int(i) for i in order if truth[i]]
    rest = [int(i) for i in order if not truth[i]]
    return (true + rest)[:max(1, top)]


def load_eval_images(paths: list[str], size: int):
    from ...features.transforms import apply_view, load_image  # lazy: torch-free CLI start-up

    return [apply_view("eval", load_image(p), size, None) for p in paths]


def maps_on_test_images(source, out, *, what: str, method: str, param, backbone, weights, image_size: int,
                        epochs: int, lr: float, batch_size: int, ema_decay, seed: int, threads, device, data_root,
                        images: int, top: int, per_image, log) -> tuple[dict, dict]:
    """What Grad-CAM (OPML Fig. 7) and LAC's attention maps (Xie Fig. 6) share: fine-tune
    ``method`` on an image bundle, then call ``per_image(model, image, truth) -> (record,
    maps)`` on the first ``images`` test images.  Returns ``(summary, maps)`` with the
    summary's common keys and ``"images"`` (one record per image, with its path and true
    labels) and the maps by ``image<i>``."""
    import torch  # lazy: torch-free CLI start-up

    from ...training.linear import num_threads  # lazy: torch-free CLI start-up

    if images < 1 or top < 1:
        raise ConfigError("--images and --top must be >= 1")
    bundle = resolve_bundle(source, out, data_root=data_root, log=log)
    if bundle.kind != "images":
        raise ConfigError(f"{bundle.path} holds feature vectors; {what} need an image bundle")
    cfg = TrainConfig(method=method, params=parse_params(param), setting="finetune", backbone=backbone,
                      weights=weights, image_size=image_size, finetune_epochs=epochs, lr=lr, batch_size=batch_size,
                      ema_decay=ema_decay, seed=seed, threads=threads, device=device or "auto")
    with num_threads(threads), torch.random.fork_rng():
        log(f"fine-tuning {method} on {bundle.name} ({backbone}, {image_size}px, {epochs} epochs)")
        model, res = finetune_model(bundle, cfg, log=log)
        paths = bundle.paths("test")[:images]
        Y = bundle.labels("test")
        recs, maps = [], {}
        for i, (p, x) in enumerate(zip(paths, load_eval_images(paths, image_size))):
            truth = np.asarray(Y[i], dtype=bool) if Y is not None else np.zeros(bundle.n_labels, bool)
            record, maps[f"image{i}"] = per_image(bundle, model, x, truth)
            recs.append({"path": p, "true_labels": [bundle.label_names[j] for j in np.flatnonzero(truth)],
                         **record})
    summary = {"bundle": str(bundle.path), "dataset": bundle.name, "method": method, "backbone": backbone,
               "image_size": image_size, "epochs": epochs, "lr": lr, "seed": seed, "test_map": res.test_map,
               "images": recs}
    return summary, maps


def write_maps(out: Path, stem: str, summary: dict, maps: dict, **draw) -> None:
    """``STEM.json`` (the summary), ``STEM.npz`` (the maps), ``STEM.png`` (:func:`draw_overlays`)."""
    write_json(out / f"{stem}.json", summary)
    with atomic_path(out / f"{stem}.npz") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **maps)
    draw_overlays(summary, maps, out / f"{stem}.png", **draw)
    summary["written"] = [str(out / f"{stem}{ext}") for ext in (".json", ".npz", ".png")]


@register_analysis("li-gradcam", help="Grad-CAM maps of a fine-tuned model drawn on test images",
                   paper="Li et al. (OPML), Fig. 7 (Grad-CAM: Selvaraju et al. 2017)",
                   arguments=(Arg(("--method",), dict(default="opml", help="method to fine-tune")),
                              Arg(("--param",), dict(action="append", metavar="NAME=VALUE", default=None,
                                                     help="method hyper-parameter (repeatable)")),) + _IMAGE_ARGS)
def gradcam(source, out, *, data_root=None, seed: int = 0, threads=None, device=None, method: str = "opml", param=None,
            backbone: str = "efficientnet-lite0", weights=None, image_size: int = 224, epochs: int = 3,
            lr: float = 1e-4, batch_size: int = 16, ema_decay=None, images: int = 4, top: int = 3,
            log=print) -> dict:
    """Fine-tune ``method`` and draw Grad-CAM maps of its labels on test images (OPML paper Fig. 7).

    Writes ``gradcam.json`` (per image: the true labels and, per drawn label, its
    probability and the map's peak cell with its centre in image pixels, ``None`` for an
    empty map), ``gradcam.npz`` (the maps at feature resolution) and ``gradcam.png`` (each
    image, then one overlay per label, each map scaled by its own maximum)."""
    import torch  # lazy: torch-free CLI start-up

    def per_image(bundle, model, x, truth):
        with torch.no_grad():
            probs = torch.sigmoid(model(x.unsqueeze(0))[0, 0]).numpy()
        labs = pick_labels(probs, truth, top)
        cams, _ = grad_cam(model, x, labs)
        entries = []
        for c, cam in zip(labs, cams):
            ci, cj, r, q = peak_pixel(cam, (image_size, image_size))
            if not cam.max() > 0:  # no positive evidence anywhere: the map is empty, it has no peak
                ci = cj = r = q = None
            entries.append({"label": bundle.label_names[c], "index": c, "true": bool(truth[c]),
                            "probability": float(probs[c]), "peak_cell": None if ci is None else [ci, cj],
                            "peak_row": r, "peak_col": q, "map_max": float(cam.max())})
        return {"labels": entries}, cams

    out = prepare_out(out, source)
    summary, maps = maps_on_test_images(
        source, out, what="Grad-CAM maps", method=method, param=param, backbone=backbone, weights=weights,
        image_size=image_size, epochs=epochs, lr=lr, batch_size=batch_size, ema_decay=ema_decay, seed=seed,
        threads=threads, device=device, data_root=data_root, images=images, top=top, per_image=per_image, log=log)
    write_maps(out, "gradcam", summary, maps, image_size=image_size,
               title=f"{summary['dataset']}: Grad-CAM of {method.upper()} (test mAP {summary['test_map']:.1f})")
    return summary


def draw_overlays(summary: dict, maps: dict, path, *, image_size: int, title: str, value_range=None,
                  cmap: str = "jet"):
    """One row per image: the image, then each label's map over it, scaled to [0, 1] by its
    own maximum (Grad-CAM's usual display) or, with ``value_range=(lo, hi)``, all maps on
    that one colour scale."""
    plt = pyplot()
    from ...features.transforms import apply_view, load_image  # lazy: torch-free CLI start-up

    recs = summary["images"]
    vmin, vmax = value_range if value_range is not None else (0.0, 1.0)
    ncol = 1 + max(len(r["labels"]) for r in recs)
    fig, axes = plt.subplots(len(recs), ncol, figsize=(1.9 * ncol, 1.95 * len(recs)), squeeze=False)
    for i, r in enumerate(recs):
        img = apply_view("eval", load_image(r["path"]), image_size, None).permute(1, 2, 0).numpy()
        axes[i, 0].imshow(img)
        axes[i, 0].set_title("true: " + ", ".join(r["true_labels"][:4]), fontsize=7)
        for j, e in enumerate(r["labels"]):
            ax = axes[i, j + 1]
            ax.imshow(img)
            ax.imshow(upsample_map(maps[f"image{i}"][j], (image_size, image_size), normalise=value_range is None),
                      cmap=cmap, alpha=0.5, vmin=vmin, vmax=vmax)
            extra = f" max×{e['max_weight'] * e['n_tokens']:.1f}" if "max_weight" in e else ""
            if e["peak_row"] is not None:
                ax.plot([e["peak_col"]], [e["peak_row"]], "w+", ms=7)
            else:
                extra += " (empty)"
            ax.set_title(f"{e['label']}{'*' if e['true'] else ''} p={e['probability']:.2f}{extra}", fontsize=7,
                         color="black" if e["true"] else "dimgray")
        for ax in axes[i]:
            ax.set_xticks([])
            ax.set_yticks([])
        for ax in axes[i, 1 + len(r["labels"]):]:
            ax.axis("off")
    fig.suptitle(title + "\n(* = a true label)", fontsize=8)
    return save_figure(fig, path, dpi=75)  # photographs: keep the PNG small
