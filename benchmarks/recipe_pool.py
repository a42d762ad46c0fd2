"""The design data of the ``auto`` recipe (issue 35): a pool of candidate members trained
once on **development draws**, so that every way of choosing and weighing them can be
compared offline, **without test labels**.

``train`` trains, per dataset and development draw (prepare seeds that the measured
tables do not use), every candidate ``method × head`` at lr ∈ {1e-2, 1e-3, 1e-4}, one
seed, its best epoch chosen by observed-label validation mAP (what ``auto`` sees), and
keeps the validation logits of that epoch, the run's per-epoch validation history and
its seconds.  It stores the validation split's observed labels (single positives drawn
in the training regime, :meth:`spmlkit.data.Bundle.selection_observations`) and its full
labels.  **It never stores or reads a test label or a test score.**

``analyse`` (``benchmarks/recipe_strategies.py``) then scores each strategy by **2-fold
cross-fitting on the validation split**: the strategy chooses from the observed labels of
one half, it is scored with the full labels of the other half, and the halves swap.

    python benchmarks/recipe_pool.py --data-root ../shared/data                    # tabular + COCO subsets
    python benchmarks/recipe_pool.py --voc ../voccache/.../efficientnet-lite2-260/bundles/voc2007-s0 ...

Run it under ``flock /tmp/spml-heavy.lock`` on a shared machine; it resumes (one file per
dataset, draw, method and head).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "benchmarks" / "results" / "recipe-pool" / "work"
TABULAR = ["yeast", "scene", "emotions", "medical", "genbase", "birds", "flags", "foodtruck"]
IMAGES = ["digits", "coco-tiny", "coco-mini"]
DEV_DRAWS = [5, 6]  # prepare seeds; the measured tables use 0, 1, 2
LRS = [1e-2, 1e-3, 1e-4]
# method, heads: every family that needs neither full labels nor k, plus AN and the k-needing
# ROLE/EPR (with k from the full training labels: an upper bound of what an estimated k could give)
POOL = {"an": ("linear", "mlp"), "an-ls": ("linear",), "wan": ("linear", "mlp"), "l1r": ("linear",),
        "l2r": ("linear",), "em": ("linear",), "em-apl": ("linear", "mlp"), "gr": ("linear", "mlp"),
        "ll-r": ("linear", "mlp"), "ll-ct": ("linear",), "hill": ("linear",), "asl": ("linear",),
        "role": ("linear",), "epr": ("linear",)}


def dev_bundle(name: str, draw: int, data_root, work: Path):
    from spmlkit.data import Bundle, load_any, prepare_bundle
    from spmlkit.features import DEFAULT_BACKBONE, ensure_features

    target = work / "bundles" / f"{name}-s{draw}"
    b = Bundle(target) if (target / "meta.json").exists() else prepare_bundle(
        load_any(name, data_root=data_root), target, seed=draw, overwrite=True, log=lambda m: None)
    fs = ensure_features(b, backbone=DEFAULT_BACKBONE, weights=None, image_size=224,
                         log=lambda m: None) if b.kind == "images" else None
    return b, fs


def voc_dev_bundle(src_path: Path, draw: int, data_root, work: Path):
    """VOC 2007 prepared with prepare seed ``draw``, its feature caches filled by image path
    from the bundle at ``src_path`` (a feature is a function of the image alone)."""
    from spmlkit.data import Bundle, load_any, prepare_bundle

    src = Bundle(src_path)
    fs = next(iter(src.feature_sets()))
    target = work / "bundles" / f"voc2007-{fs}-s{draw}"
    b = Bundle(target) if (target / "meta.json").exists() else prepare_bundle(
        load_any("voc2007", data_root=data_root), target, seed=draw, overwrite=True, log=lambda m: None)
    fill_by_real_path(b, src, fs)
    return Bundle(target), fs


def fill_by_real_path(dst, src, name: str) -> None:
    """``dst``'s feature cache ``name`` from ``src``'s, row by row through the images' real
    paths (the two bundles may name one image file by different paths)."""
    import os

    from spmlkit.data.bundle import SPLITS
    from spmlkit.io import write_json

    folder = Path(dst.path) / "features" / name
    if (folder / "test.npy").exists():
        return
    where, arrays = {}, {}
    for s in SPLITS:
        arrays[s] = np.load(Path(src.path) / "features" / name / f"{s}.npy", mmap_mode="r", allow_pickle=False)
        for i, p in enumerate(src.paths(s)):
            where[os.path.realpath(p)] = (s, i)
    folder.mkdir(parents=True, exist_ok=True)
    meta = json.loads((Path(src.path) / "features" / name / "meta.json").read_text())
    meta.update(sizes={s: dst.size(s) for s in SPLITS}, filled_from=f"{src.path} (by image path)")
    write_json(folder / "meta.json", meta)
    for s in SPLITS:  # test.npy last: the cache is complete only at the end
        X = np.stack([arrays[a][i] for a, i in (where[os.path.realpath(p)] for p in dst.paths(s))])
        np.save(folder / f"{s}.npy", X.astype(np.float32))


def train_pool(key: str, b, fs, out: Path, *, methods: dict, epochs: int, batch: int, log=print, lrs=None) -> None:
    from spmlkit.config import TrainConfig
    from spmlkit.training.linear import train_linear

    folder = out / key
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "labels.npz").exists():
        np.savez(folder / "labels.npz", Y_val=np.asarray(b.labels("val"), dtype=np.int8),
                 Z_val=np.asarray(b.selection_observations("val", "single_positive"), dtype=np.int8))
    for m, heads in methods.items():
        for head in heads:
            f = folder / f"{m}--{head}.npz"
            if f.exists():
                continue
            t0 = time.perf_counter()
            cfg = TrainConfig(method=m, selection="observed_map", batch_size=batch, epochs=epochs, head=head,
                              feature_set=fs, threads=1)
            try:
                rates = lrs or LRS
                res = train_linear(b, cfg, lrs=rates, seeds=[0] * len(rates), keep_state=True)
            except Exception as e:  # noqa: BLE001 - a failed member is data too
                (folder / f"{m}--{head}.failed").write_text(f"{type(e).__name__}: {e}\n")
                log(f"{key} {m} {head}: FAILED {type(e).__name__}: {e}")
                continue
            tmp = folder / f".{m}--{head}.npz"
            with open(tmp, "wb") as fh:
                np.savez(fh, val_logits=np.stack([r.state["val_logits"] for r in res]).astype(np.float32),
                         meta=np.array(json.dumps({
                             "lrs": [r.lr for r in res], "best_epoch": [r.best_epoch for r in res],
                             "epochs_run": [r.epochs_run for r in res], "val_score": [r.val_score for r in res],
                             "val_history": [r.val_history for r in res], "seconds": res[0].seconds,
                             "expected_positives": res[0].expected_positives})))
            tmp.replace(f)
            log(f"{key} {m} {head}: {time.perf_counter() - t0:.1f} s, observed val "
                + ", ".join(f"{r.lr:g}:{r.val_score:.1f}@{r.best_epoch}" for r in res))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--datasets", nargs="*", default=TABULAR + IMAGES)
    ap.add_argument("--voc", nargs="*", type=Path, default=[],
                    help="VOC 2007 bundles (one per backbone) whose feature caches fill the development draws")
    ap.add_argument("--draws", nargs="*", type=int, default=DEV_DRAWS)
    ap.add_argument("--methods", nargs="*", default=list(POOL))
    ap.add_argument("--epochs", type=int, default=25)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--work", type=Path, default=WORK)
    ap.add_argument("--lrs", nargs="*", type=float, default=None, help=f"default {LRS}")
    ap.add_argument("--heads", nargs="*", default=None, help="the heads of every method (default: POOL's)")
    args = ap.parse_args(argv)
    if set(args.draws) & {0, 1, 2}:
        ap.error("draws 0, 1 and 2 are the measured tables' draws; the design uses others")
    methods = {m: tuple(args.heads) if args.heads else POOL.get(m, ("linear",)) for m in args.methods}
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    for draw in args.draws:
        for src in args.voc:
            b, fs = voc_dev_bundle(src, draw, args.data_root, args.work)
            train_pool(f"voc2007-{fs}-s{draw}", b, fs, args.work / "pool", methods=methods, epochs=args.epochs,
                       batch=args.batch_size, log=log, lrs=args.lrs)
        for name in args.datasets:
            b, fs = dev_bundle(name, draw, args.data_root, args.work)
            train_pool(f"{name}-s{draw}", b, fs, args.work / "pool", methods=methods, epochs=args.epochs,
                       batch=args.batch_size, log=log, lrs=args.lrs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
