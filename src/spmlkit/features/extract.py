"""Backbone features of an image bundle, cached as memory-mapped arrays.

``extract_features(bundle)`` (CLI: ``spml features BUNDLE``) writes::

    <bundle>/features/<backbone>-<size>/meta.json      backbone, weights, input size, dimension
    <bundle>/features/<backbone>-<size>/{train,val,test}.npy   float32 (N, C), rows in bundle order

(``<backbone>-<size>-bf16`` / ``-fp16`` when computed with ``precision`` ``bf16`` /
``16-mixed``: the precision is part of the cache's identity, recorded in meta.json and
checked when a cache is reused or resumed.)

Each split is filled batch by batch into ``.<split>.npy.partial`` (``np.lib.format.open_memmap``,
never held in memory whole); after every batch the array is flushed and a progress marker
``.<split>.progress.json`` is written atomically, so a killed extraction continues where it
stopped when run again.  A finished split is renamed to ``<split>.npy``; the splits are done
in the order train, val, test, so a cache is complete — and listed by
:meth:`~spmlkit.data.Bundle.feature_sets` — exactly when ``test.npy`` exists.  A complete
cache is skipped.  Features are computed in eval mode on the ``eval`` view (resize only),
globally average-pooled (Cole et al. 2021 §6, the "linear" setting).
"""
from __future__ import annotations

import datetime as _dt
import sys
import time
from pathlib import Path

import numpy as np
import torch

from .._version import __version__
from ..data.bundle import SPLITS, Bundle
from ..device import autocast, check_precision, cuda_numerics, resolve_device
from ..errors import ConfigError, DataFormatError, SpmlError, UnknownNameError
from .. import ownership
from ..io import read_json, sha256_file
from ..ownership import write_json
from ..progress import progress as progress_bar
from .backbones import BACKBONES, DEFAULT_BACKBONE, build_backbone
from .transforms import ImageSet, image_loader


#: batches between two progress markers (and flushes of the memory map): a killed extraction
#: redoes at most this many batches; writing the marker after every batch (an fsync'd file)
#: kept a GPU idle between batches
PROGRESS_EVERY = 16

#: the name suffix of a reduced-precision cache (float32 caches keep the plain name)
_PRECISION_SUFFIX = {"32": "", "bf16": "-bf16", "16-mixed": "-fp16"}


def feature_set_name(backbone: str, image_size: int, precision: str = "32") -> str:
    """``<backbone>-<size>`` for float32 features, ``-bf16`` / ``-fp16`` appended for the
    reduced precisions (precision is part of a cache's identity, so a
    float32 run never reuses bf16 features and a resumed cache never mixes precisions).

    >>> feature_set_name("resnet50", 448), feature_set_name("resnet50", 448, "bf16")
    ('resnet50-448', 'resnet50-448-bf16')
    """
    return f"{backbone}-{int(image_size)}{_PRECISION_SUFFIX.get(str(precision), '-' + str(precision))}"


def _meta_identity(meta: dict, keys) -> dict:
    """A cache's identity as recorded in its meta.json (caches written before the precision
    was recorded were float32)."""
    return {k: meta.get(k, "32" if k == "precision" else None) for k in keys}


def _weights_id(weights) -> dict:
    if not weights:
        return {"weights": None}
    p = Path(weights).resolve()
    return {"weights": str(p), "weights_bytes": p.stat().st_size if p.exists() else None}


def feature_set_meta(bundle: Bundle, name: str) -> dict | None:
    """The ``meta.json`` of a feature cache (None when absent)."""
    p = Path(bundle.path) / "features" / name / "meta.json"
    return read_json(p) if p.exists() else None


def extract_features(bundle: Bundle | str | Path, *, backbone: str = DEFAULT_BACKBONE, weights: str | None = None,
                     image_size: int = 448, batch_size: int = 32, num_workers: int = 0, name: str | None = None,
                     max_batches: int | None = None, progress: bool = True, log=None, device="cpu",
                     precision: str = "32") -> str | None:
    """Compute (or finish) the feature cache of ``bundle``; returns its name, or ``None`` when
    stopped early by ``max_batches`` (used to test resumption).  ``device`` (``auto``,
    ``cpu``, ``cuda[:N]``, ``mps``) runs the backbone there, with ``precision`` ``32``,
    ``bf16`` or ``16-mixed`` (autocast; the cache is float32 either way)."""
    device = resolve_device(device)
    check_precision(precision, device)
    log = log or (lambda m: print(m, file=sys.stderr))
    bundle = bundle if isinstance(bundle, Bundle) else Bundle(bundle)
    if bundle.kind != "images":
        raise ConfigError(f"{bundle.path} holds feature vectors, not images; 'spml features' is for image bundles")
    if backbone not in BACKBONES:
        raise UnknownNameError("backbone", backbone, BACKBONES)
    if batch_size < 1:
        raise ConfigError(f"batch size must be >= 1, got {batch_size}")
    name = name or feature_set_name(backbone, image_size, precision)
    folder = Path(bundle.path) / "features" / name
    wanted = {"backbone": backbone, "image_size": int(image_size), **_weights_id(weights), "precision": str(precision)}
    meta = feature_set_meta(bundle, name)
    if meta is not None:
        got = _meta_identity(meta, wanted)
        if got != wanted:
            raise ConfigError(f"{folder} holds features of {got}, not {wanted}; delete it or choose another --name")
        if (folder / "test.npy").exists():
            sealed = _seal_checksums(bundle, folder)
            log(f"feature set {name!r} of {bundle.path} is complete; nothing to do" +
                (f" (recorded the checksums of its {sealed} array(s), which an older spmlkit wrote without them)"
                 if sealed else ""))
            return name

    net = _backbone_on(device, backbone, weights=weights, image_size=image_size)
    ownership.folder(bundle.path, "bundle")  # the bundle spmlkit wrote: its features/NAME/ made and checked
    ownership.mkdir(folder)
    if meta is None:
        write_json(folder / "meta.json", {
            **wanted, "dim": net.out_dim, "normalisation": {"mean": net.norm_mean.flatten().tolist(),
                                                            "std": net.norm_std.flatten().tolist()},
            "view": "eval (resize, no crop)", "pooling": "global average",
            "sizes": {s: bundle.size(s) for s in SPLITS}, "spmlkit_version": __version__,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})

    todo = {}
    for split in SPLITS:
        if (folder / f"{split}.npy").exists():
            continue
        todo[split] = _progress_rows(folder, split)
    total = sum(bundle.size(s) - done for s, done in todo.items())

    # a bar on a terminal, a line every few seconds (elapsed, time left) in a log file
    bar = progress_bar(total, f"features {name}", unit="img", disable=None if progress else True)
    n_images, n_batches, t0 = 0, 0, time.perf_counter()
    try:
        for split, done in todo.items():
            paths = bundle.paths(split)
            n = len(paths)
            partial = folder / f".{split}.npy.partial"
            if done > 0 and partial.exists():
                arr = ownership.open_memmap(partial, mode="r+")  # spmlkit's own file (never a link); never unpickles
                if arr.shape != (n, net.out_dim) or arr.dtype != np.float32:
                    raise SpmlError(f"{partial} has shape {arr.shape}, expected ({n}, {net.out_dim}); delete {folder}")
            else:
                done = 0
                arr = ownership.open_memmap(partial, mode="w+", dtype=np.float32, shape=(n, net.out_dim))
            starts = list(range(done, n, batch_size))
            batches = [list(range(s, min(s + batch_size, n))) for s in starts]
            if max_batches is not None:
                batches = batches[:max(0, max_batches - n_batches)]
            for i, (rows, f) in enumerate(_batch_features(net, paths, batches, image_size, num_workers,
                                                          device=device, precision=precision)):
                arr[rows[0]:rows[-1] + 1] = f
                if (i + 1) % PROGRESS_EVERY == 0 or i + 1 == len(batches):
                    arr.flush()  # the rows first, then the marker that says they are there
                    write_json(folder / f".{split}.progress.json", {"rows": rows[-1] + 1, "of": n})
                n_images += len(rows)
                n_batches += 1
                bar.update(len(rows))
            finished = (batches[-1][-1] + 1 if batches else done) >= n
            del arr
            if not finished:
                return None
            ownership.write_text(folder / f"{split}.npy.sha256", sha256_file(partial) + "\n")  # (checked on read)
            ownership.rename(partial, folder / f"{split}.npy")
            ownership.remove(folder / f".{split}.progress.json")
    finally:
        bar.close()
    dt = time.perf_counter() - t0
    log(f"feature set {name!r}: {n_images} image(s) in {dt:.1f} s ({n_images / max(dt, 1e-9):.1f} images/s), "
        f"{net.out_dim} features each, in {folder} (device {device}, precision {precision})")
    return name


def extract_image_features(paths: list[str], *, backbone: str = DEFAULT_BACKBONE, image_size: int = 448,
                           weights: str | None = None, batch_size: int = 32, num_workers: int = 0,
                           device="cpu", precision: str = "32") -> np.ndarray:
    """Features ``(N, D)`` of image files, computed exactly as :func:`extract_features`
    computes a bundle's cache (same backbone, weights, input size, eval view and memory
    layout), so a head trained on a cache predicts from new images (``spml predict``).
    Unknown keywords are an error (a misspelt ``imagesize=`` is not silently ignored)."""
    if backbone not in BACKBONES:
        raise UnknownNameError("backbone", backbone, BACKBONES)

    device = resolve_device(device)
    check_precision(precision, device)
    net = _backbone_on(device, backbone, weights=weights, image_size=image_size)
    paths = [str(p) for p in paths]
    out = np.empty((len(paths), net.out_dim), dtype=np.float32)
    batches = [list(range(s, min(s + batch_size, len(paths)))) for s in range(0, len(paths), batch_size)]
    for rows, f in _batch_features(net, paths, batches, image_size, num_workers, device=device, precision=precision):
        out[rows[0]:rows[-1] + 1] = f
    return out


def _backbone_on(device: torch.device, backbone: str, **kw):
    """The backbone built on the CPU (seeded initialisations are the same everywhere), in
    eval mode, channels-last (~25% faster on CPU, benchmarks/images_speed.py), on ``device``."""
    with torch.device("cpu"):
        net = build_backbone(backbone, **kw)
    net.eval().to(memory_format=torch.channels_last)
    return net.to(device)


def _batch_features(net, paths: list[str], batches: list[list[int]], image_size: int, num_workers: int, *,
                    device=torch.device("cpu"), precision: str = "32"):
    """``(rows, features)`` per batch: the eval view, channels-last, inference mode; the one
    computation behind the bundle cache and the per-file extractor (so they agree).  On a
    GPU the loader pins its batches and the copies do not block."""
    loader = image_loader(ImageSet(paths, ("eval",), image_size), batches, num_workers=num_workers,
                          pin_memory=device.type == "cuda")

    def checked(rows, f):
        if not np.isfinite(f).all():
            bad = rows[int(np.argwhere(~np.isfinite(f))[0, 0])]
            raise DataFormatError(paths[bad], "the backbone produced non-finite features for this image")
        return rows, f

    # cuda_numerics: float32 without TF32 for precision 32, cuDNN's kernel timing on, both restored after
    with torch.inference_mode(), autocast(device, precision), cuda_numerics(device, precision):
        if device.type != "cuda":
            for rows, (x,) in zip(batches, loader):
                x = x.to(device, non_blocking=True)
                yield checked(rows, net(x.contiguous(memory_format=torch.channels_last)).float().cpu().numpy())
            return
        # CUDA: batch t's features are copied into one of two pinned host
        # buffers without blocking, and batch t-1's are handed out (waiting for its copy only)
        # after batch t is queued, so the GPU computes while the host writes
        slots: list = [None, None]  # [pinned buffer, event, rows, n]
        prev = None
        for t, (rows, (x,)) in enumerate(zip(batches, loader)):
            x = x.to(device, non_blocking=True)
            f = net(x.contiguous(memory_format=torch.channels_last)).float()
            slot = slots[t % 2]
            if slot is None or slot[0].shape[0] < f.shape[0]:
                slot = slots[t % 2] = [torch.empty(f.shape, dtype=torch.float32, device="cpu").pin_memory(),
                                       None, None, 0]
            slot[0][:f.shape[0]].copy_(f, non_blocking=True)
            slot[1] = torch.cuda.Event()
            slot[1].record(torch.cuda.current_stream(device))
            slot[2], slot[3] = rows, f.shape[0]
            if prev is not None:
                yield _drain(prev, checked)
            prev = slot
        if prev is not None:
            yield _drain(prev, checked)


def _drain(slot, checked):
    """The features of a pinned slot once its copy has finished (a NumPy copy: the buffer is reused)."""
    buf, event, rows, n = slot
    event.synchronize()
    return checked(rows, buf[:n].numpy().copy())


def _progress_rows(folder: Path, split: str) -> int:
    p = folder / f".{split}.progress.json"
    if not p.exists() or not (folder / f".{split}.npy.partial").exists():
        return 0
    try:
        return int(read_json(p)["rows"])
    except (KeyError, ValueError, TypeError, SpmlError):
        return 0


def _seal_checksums(bundle: Bundle, folder: Path) -> int:
    """A complete cache written before checksums were recorded: its arrays' SHA-256
    sidecars are written now (the reader refuses an array without one).  Returns how many."""
    n = 0
    for split in SPLITS:
        p = folder / f"{split}.npy"
        side = folder / f"{split}.npy.sha256"
        if p.is_file() and not side.exists():
            ownership.folder(bundle.path, "bundle")
            ownership.write_text(side, sha256_file(p) + "\n")
            n += 1
    return n


def ensure_features(bundle: Bundle, *, backbone: str, weights: str | None, image_size: int, batch_size: int = 32,
                    num_workers: int = 0, log=None, device="cpu", precision: str = "32") -> str:
    """The name of a complete feature cache for this backbone and size, computing it if missing."""
    log = log or (lambda m: print(m, file=sys.stderr))
    name = feature_set_name(backbone, image_size, precision)
    if name in bundle.feature_sets():
        meta = _meta_identity(feature_set_meta(bundle, name) or {}, ("weights", "precision"))
        if meta == {"weights": _weights_id(weights)["weights"], "precision": str(precision)}:
            sealed = _seal_checksums(bundle, Path(bundle.path) / "features" / name)
            if sealed:  # (reused by spml bench: the arrays become readable as 'spml features' makes them)
                log(f"feature set {name!r} of {bundle.path}: recorded the checksums of its {sealed} array(s), "
                    "which an older spmlkit wrote without them")
            return name
    return extract_features(bundle, backbone=backbone, weights=weights, image_size=image_size, batch_size=batch_size,
                            num_workers=num_workers, log=log, device=device, precision=precision)
