"""``digits``: a built-in multi-label *image* dataset, composed from scikit-learn's digits.

scikit-learn ships 1,797 handwritten digits as 8x8 grey images
(:func:`sklearn.datasets.load_digits`; Alpaydin & Kaynak 1998, UCI "optdigits").  Each
example here is an RGB canvas with 2–4 of them pasted at non-overlapping random places:
the canvas is cut into a 2x2 grid of cells and each digit (upscaled ``scale`` times with
bilinear interpolation) goes into a different cell at a random offset, in a random bright
colour over a dark background.  Its labels are the set of digit classes present (10 labels,
``"0"``–``"9"``; a class drawn twice counts once).

The 1,797 source digits are first split (seeded) into disjoint pools for train, val and
test in proportion to the requested sizes, so no source digit appears in two splits and
test accuracy measures generalisation to new handwriting.

Because bundles store image paths, the canvases are rendered to PNG files in a cache
folder keyed by the generation parameters (``$SPMLKIT_CACHE`` or ``~/.cache/spmlkit``,
``digits-<hash>/``), written atomically (a temporary folder renamed into place) and reused
when present.  Everything is deterministic given the parameters.

Default size: 160 train / 48 val / 96 test canvases of 64x64 pixels (304 images), small
enough that EfficientNet-Lite0 features at 224 pixels take well under a minute on two CPU
cores (see docs/images.md).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from .. import ownership
from ..errors import ConfigError
from .dataset import MultiLabelDataset, Split

DIGITS_VERSION = 1
DEFAULTS = dict(n_train=160, n_val=48, n_test=96, canvas=64, scale=3, min_digits=2, max_digits=4, seed=0)


def cache_root() -> Path:
    env = os.environ.get("SPMLKIT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "spmlkit"


def _params_key(params: dict) -> str:
    blob = json.dumps({"version": DIGITS_VERSION, **params}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def _render(rng: np.random.Generator, sources: np.ndarray, images: np.ndarray, canvas: int, scale: int):
    """One canvas (H, W, 3) uint8 with the given source digits in distinct grid cells."""
    from PIL import Image  # lazy: torch-free CLI start-up

    cell = canvas // 2
    side = 8 * scale
    if side > cell:
        raise ConfigError(f"digits: a digit of {side} px does not fit a {cell} px cell; lower scale or enlarge canvas")
    bg = rng.integers(0, 48, size=3)
    out = np.empty((canvas, canvas, 3), dtype=np.float32)
    out[:] = bg
    cells = rng.permutation(4)[:len(sources)]
    for src, c in zip(sources, cells):
        g = Image.fromarray((images[src] * (255.0 / 16.0)).astype(np.uint8), "L").resize((side, side), Image.BILINEAR)
        alpha = np.asarray(g, dtype=np.float32)[..., None] / 255.0
        colour = rng.integers(128, 256, size=3).astype(np.float32)
        oy = (c // 2) * cell + int(rng.integers(0, cell - side + 1))
        ox = (c % 2) * cell + int(rng.integers(0, cell - side + 1))
        patch = out[oy:oy + side, ox:ox + side]
        out[oy:oy + side, ox:ox + side] = patch * (1 - alpha) + colour * alpha
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def make_digits(*, n_train: int = DEFAULTS["n_train"], n_val: int = DEFAULTS["n_val"], n_test: int = DEFAULTS["n_test"],
                canvas: int = DEFAULTS["canvas"], scale: int = DEFAULTS["scale"],
                min_digits: int = DEFAULTS["min_digits"], max_digits: int = DEFAULTS["max_digits"],
                seed: int = DEFAULTS["seed"], cache_dir: str | Path | None = None) -> MultiLabelDataset:
    """Render (or reuse) the digits canvases and return the dataset (train/val/test splits)."""
    if not 1 <= min_digits <= max_digits <= 4:
        raise ConfigError(f"digits per canvas must satisfy 1 <= min <= max <= 4, got {min_digits}..{max_digits}")
    sizes = {"train": int(n_train), "val": int(n_val), "test": int(n_test)}
    if min(sizes.values()) < 1:
        raise ConfigError(f"every split needs at least one canvas, got {sizes}")
    params = dict(n_train=n_train, n_val=n_val, n_test=n_test, canvas=canvas, scale=scale, min_digits=min_digits,
                  max_digits=max_digits, seed=seed)
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    folder = root / f"digits-{_params_key(params)}"
    if not (folder / "labels.json").exists():
        _generate(folder, params, sizes)
    info = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    splits = {}
    for name in ("train", "val", "test"):
        rows = info["splits"][name]
        Y = np.zeros((len(rows), 10), dtype=bool)
        for r, row in enumerate(rows):
            Y[r, row["labels"]] = True
        splits[name] = Split(paths=[str(folder / row["file"]) for row in rows], Y=Y,
                             ids=[Path(row["file"]).stem for row in rows])
    return MultiLabelDataset(
        name="digits", label_names=[str(d) for d in range(10)], splits=splits, source=str(folder),
        notes=[f"{canvas}x{canvas} canvases with {min_digits}-{max_digits} sklearn digits each (seed {seed}); "
               "source digits disjoint between train, val and test"])


def _generate(folder: Path, params: dict, sizes: dict) -> None:
    from PIL import Image  # lazy: torch-free CLI start-up
    from sklearn.datasets import load_digits

    digits = load_digits()
    images, targets = digits.images, digits.target
    ss = np.random.SeedSequence(int(params["seed"]))
    pool_ss, *split_ss = ss.spawn(4)
    perm = np.random.default_rng(pool_ss).permutation(len(images))
    total = sum(sizes.values())
    cuts = np.cumsum([int(round(len(images) * sizes[s] / total)) for s in ("train", "val")])
    pools = dict(zip(("train", "val", "test"), np.split(perm, cuts)))

    try:
        with ownership.build(folder, "digits") as tmp:  # written beside the cache folder, renamed at the end
            info = {"params": params, "version": DIGITS_VERSION,
                    "pools": {k: sorted(map(int, v)) for k, v in pools.items()}, "splits": {}}
            for (name, n), sss in zip(sizes.items(), split_ss):
                rng = np.random.default_rng(sss)
                pool = pools[name]
                rows = []
                for i in range(n):
                    k = int(rng.integers(params["min_digits"], params["max_digits"] + 1))
                    src = pool[rng.choice(len(pool), size=k, replace=False)]
                    img = _render(rng, src, images, params["canvas"], params["scale"])
                    rel = f"{name}/{i:05d}.png"
                    Image.fromarray(img, "RGB").save(ownership.new_file(tmp / rel), format="PNG")
                    rows.append({"file": rel, "sources": [int(s) for s in src],
                                 "labels": sorted({int(targets[s]) for s in src})})
                info["splits"][name] = rows
            ownership.write_text(tmp / "labels.json", json.dumps(info))
    except ownership.OwnershipError:  # another process finished first: keep theirs
        if not (folder / "labels.json").exists():
            raise
