"""Speed of the GPU path (issues 13 and 28).  Needs a CUDA device; without one it says so and exits 0.

    PYTHONPATH=src python benchmarks/gpu_speed.py               # every section (grid: 1 and 3 epochs)
    PYTHONPATH=src python benchmarks/gpu_speed.py --grid-epochs 25   # the whole grid, not extrapolated
    PYTHONPATH=src python benchmarks/gpu_speed.py --sections finetune,map
    PYTHONPATH=src python benchmarks/gpu_speed.py --smoke-cpu --out /tmp/smoke.md   # the code runs (CPU, tiny)

Sections, run in the order ``--sections`` gives (Markdown tables; written to
``benchmarks/results/gpu_speed.md``, or ``--out``, **only when run on a real GPU**, with
the command, date, wall time, machine and the device with its memory and CUDA/driver/torch
versions in the header; the file is rewritten after each section, so a run stopped part
way keeps the sections it finished; a last section compares with the targets):

1. ``finetune`` — ResNet-50 fine-tuning, images/s, at 224 and 448 px, batch 16 and 64,
   fp32 and bf16, spmlkit beside a bare PyTorch loop of the same model, precision and
   memory format (``BCEWithLogitsLoss`` + ``torch.optim.Adam``, fused on CUDA like ours),
   interleaved; ratio = bare images/s ÷ ours (target ≤ 1.15).  Two measurements
   (issue 28, item 18):

   * ``full path`` — what users run: the learner's own ``batches()`` (the persistent
     DataLoader with ``--workers`` processes decoding and resizing PNG files of a
     digits bundle written to a temporary folder, pinned memory, the row numbers and
     observations of each batch) and :func:`spmlkit.training.loop.train_epoch` (the
     ``an`` loss through the method's hooks, channels-last, autocast inside the model);
     the bare loop reads the same files through the same loader;
   * ``step only`` — random tensors already on the GPU fed to the same step: the
     training step without the input pipeline.

   **The ResNet-50 has random weights** (:func:`spmlkit.features.backbones.resnet50_random_init`,
   labelled "for benchmarks only"): speed does not depend on the weights, and no
   pretrained file is available here.
2. ``features`` — feature extraction, images/s, as ``spml features`` runs it
   (:func:`spmlkit.features.extract_features` on the same PNG bundle: loader, pinned
   overlapped copies, finiteness checks, the memory-mapped cache with its periodic
   flushes and progress markers), fp32 and bf16, 224/448 px.
3. ``grid`` — the COCO-sized linear AN grid: 65,665 × 2,048 → 80 training features
   (synthetic), 16,416 validation and 40,137 test rows; 4 learning rates × 2 batch sizes
   (8 configurations) × 3 seeds, 25 epochs, validation mAP every epoch.  Per batch size
   the 12 members train as one stack, against the same 12 members one at a time.  Each
   is run for 1 and for ``--grid-epochs E`` epochs: the difference gives the time per
   epoch, the rest is the fixed cost (CUDA set-up, feature upload, the final test and
   training-set mAP on the host), and 25 epochs = fixed + 25 × per epoch (issue 28, item
   17: scaling the whole time by 25/E multiplied the fixed costs too).  E = 25: the
   whole grid, nothing estimated.  Target: the whole grid (both batch sizes) ≤ 2 min on
   an H100.  ``--grid-modes stacked`` leaves out the one-at-a-time comparison (12 times
   the work; benchmarks/gpu/first_run.py does, to fit a short lease).
5. ``sinr`` (not in the default ``--sections``: about 5 min on one H100) — SINR scale
   (Cole et al., ICML 2023: 35.5 million presence-only records of 47,375 species),
   synthetic: ``--sinr-rows`` records (default 35,500,000) with one Zipf-distributed
   species each, D = 4 location features (sin/cos of longitude and latitude, SINR's
   input encoding), an MLP head of 256 hidden units, ``an`` (the full per-row loss over
   every species: SINR's cost per record), batch 2,048, one epoch, observations stored
   sparse (one int32 a record; a dense N × L array would be 1.7 TB).  spmlkit
   (:func:`~spmlkit.training.linear.train_linear`: features and labels on the device,
   each batch's dense block built there) beside a bare loop of the same model, optimizer
   and batch that builds each batch's targets by scatter; seconds per epoch, the ratio
   (target ≤ 1.3, issue 32) and the peak GPU memory of each.
4. ``map`` — mAP of 40,137 × 80 scores on the device
   (:func:`spmlkit.metrics.average_precision_torch`) vs the NumPy version on the host.

Nothing here was run in the repository's own environment (no GPU); docs/gpu.md says so.
"""
from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "gpu_speed.md"
GRID_LRS = (1e-2, 1e-3, 1e-4, 1e-5)
GRID_BATCHES = (8, 16)
GRID_SEEDS = (0, 1, 2)
COCO = dict(train=65665, val=16416, test=40137, dim=2048, labels=80, positives=2.9)
SINR = dict(rows=35_500_000, labels=47_375, dim=4, hidden=256, batch=2048, val=10_000, test=10_000, zipf=1.1)


def backbone(*, image_size: int, seed: int = 0):
    """The measured network: the random-weight ResNet-50; under ``--smoke-cpu`` the tiny
    random CNN of the tests (the smoke run checks the code, not the speed)."""
    from spmlkit.features.backbones import TinyRandom, resnet50_random_init

    if SMOKE:
        return TinyRandom(image_size=image_size, seed=seed)
    return resnet50_random_init(image_size=image_size, seed=seed)


SMOKE = False  # --smoke-cpu


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------- fine-tuning
def _models(image_size, n_labels, device, precision):
    """(ours, bare): the same random-init ResNet-50 architecture + a linear head, each its own copy."""
    from spmlkit.models.image import ImageModel

    with torch.device("cpu"):
        ours = ImageModel(backbone(image_size=image_size, seed=0), n_labels, head="linear", seed=0)
        bb = backbone(image_size=image_size, seed=0)
        bare = nn.Sequential()
        bare.add_module("backbone", bb)
        bare.add_module("head", nn.Linear(bb.out_dim, n_labels))
    bare.to(device).to(memory_format=torch.channels_last)
    return ours, bare


def image_bundle(folder: Path, n_train: int, canvas: int = 64):
    """A digits bundle of ``n_train`` PNG canvases (resized to the measured size by the loader)."""
    from spmlkit.data import prepare_bundle
    from spmlkit.data.digits import make_digits

    ds = make_digits(n_train=n_train, n_val=8, n_test=8, canvas=canvas, scale=4, seed=0, cache_dir=folder / "cache")
    return prepare_bundle(ds, folder / "bundle", log=lambda m: None)


def finetune_section(device, args, rows_out, bundle):
    from spmlkit.device import autocast, cuda_numerics
    from spmlkit.features.transforms import ImageSet, image_loader, iterate_loader, persistent_loader
    from spmlkit.methods import build_method
    from spmlkit.methods.base import Batch, TrainContext
    from spmlkit.training.finetune import ImageLearner
    from spmlkit.training.loop import train_epoch

    L = bundle.n_labels
    steps, warm = args.steps, args.warmup
    fused = {"fused": True} if device.type == "cuda" else {}
    for size in args.sizes:
        for bs in args.batches:
            for precision in ("32", "bf16"):
                ours_model, bare = _models(size, L, device, precision)
                n = bs * (steps + warm)
                paths = bundle.paths("train")[:n]
                observed = bundle.observations("train")[:n]
                learner = ImageLearner({"train": paths, "val": [], "test": []}, observed, ours_model,
                                       lr=1e-4, seed=0, batch_size=bs, image_size=size, epochs=1, device=device,
                                       precision=precision, num_workers=args.workers)
                real_batches = learner.batches
                gen = torch.Generator(device="cpu").manual_seed(0)
                x = torch.rand(bs, 3, size, size, generator=gen, device="cpu").to(device)
                x = x.contiguous(memory_format=torch.channels_last)
                obs_dev = learner.observed.to(device)  # spmlkit.sparse_labels.DeviceLabels: dense blocks of rows

                def synthetic(epoch, k):
                    for t in range(k):
                        idx = torch.arange(t * bs, (t + 1) * bs, device=device).view(1, -1)
                        yield Batch(inputs=x, index=idx, observed=obs_dev.block(idx), distinct=True)

                method = build_method("an")
                method.setup(TrainContext(n_train=n, n_labels=L, observed=learner.observed, device=device))
                learner.model.train()
                targets = (obs_dev.block(torch.arange(bs, device=device)) == 1).float()
                opt = torch.optim.Adam(bare.parameters(), lr=1e-4, **fused)
                crit = nn.BCEWithLogitsLoss()
                bare.train()
                bare_loader = bare_sampler = None
                bare_set = ImageSet(paths, ("train",), size, 0)  # the same files and augmentation as ours
                pin = device.type == "cuda"
                if args.workers > 0:  # persistent workers, as the learner's loader
                    bare_loader, bare_sampler = persistent_loader(bare_set, num_workers=args.workers, pin_memory=pin,
                                                                  prefetch_factor=4 if pin else None)

                def bare_step(xb, yb):
                    with autocast(device, precision):
                        logits = bare.head(bare.backbone(xb))
                    loss = crit(logits.float(), yb)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()

                def bare_full(k):
                    rows = [list(range(t * bs, (t + 1) * bs)) for t in range(k)]
                    if args.workers > 0:
                        bare_sampler.batches = [[(1, i) for i in r] for r in rows]
                        loaded = iterate_loader(bare_loader)
                    else:
                        loaded = image_loader(bare_set, rows, num_workers=0, pin_memory=pin)
                    for (xb,) in loaded:
                        xb = xb.to(device, non_blocking=True).contiguous(memory_format=torch.channels_last)
                        bare_step(xb, targets[:len(xb)])

                def bare_synthetic(k):
                    for _ in range(k):
                        bare_step(x, targets)

                def ours_full(k):  # the learner's own batches over the first k batches' worth of images
                    learner.batches, learner.n_train = real_batches, k * bs
                    train_epoch(learner, method, 1)

                def ours_synthetic(k):
                    learner.batches = lambda epoch: synthetic(epoch, k)
                    train_epoch(learner, method, 1)

                with cuda_numerics(device, precision):
                    for path, ours_run, bare_run in (("full path", ours_full, bare_full),
                                                     ("step only", ours_synthetic, bare_synthetic)):
                        ours_run(warm)
                        bare_run(warm)
                        t_ours, t_bare = [], []
                        for _ in range(args.repeats):  # interleaved
                            _sync(device)
                            t0 = time.perf_counter()
                            ours_run(steps)
                            _sync(device)
                            t_ours.append(time.perf_counter() - t0)
                            t0 = time.perf_counter()
                            bare_run(steps)
                            _sync(device)
                            t_bare.append(time.perf_counter() - t0)
                        ips_ours = bs * steps / min(t_ours)
                        ips_bare = bs * steps / min(t_bare)
                        row = {"size": size, "batch": bs, "precision": precision, "path": path, "ours": ips_ours,
                               "bare": ips_bare, "ratio": ips_bare / ips_ours}
                        rows_out.append(row)
                        print(f"finetune {size}px batch {bs} {precision} {path}: ours {ips_ours:.1f} img/s, bare "
                              f"{ips_bare:.1f} img/s, ratio {row['ratio']:.3f}", flush=True)
                learner = ours_model = bare = opt = bare_loader = bare_sampler = real_batches = None  # free them
                if device.type == "cuda":
                    torch.cuda.empty_cache()


def features_section(device, args, rows_out, bundle):
    """``extract_features`` as ``spml features`` runs it, with the random-weight ResNet-50
    standing in for the ``resnet50`` backbone (its weights file is not available here)."""
    import shutil

    import spmlkit.features.extract as ex
    orig = ex.build_backbone
    bs = max(args.batches)
    try:
        for size in args.sizes:
            net = backbone(image_size=size)  # built once, outside the timing (weights do not matter)
            ex.build_backbone = lambda name, weights=None, image_size=448, _net=net: _net
            for precision in ("32", "bf16"):
                kw = dict(backbone="resnet50", image_size=size, batch_size=bs, num_workers=args.workers,
                          progress=False, log=lambda m: None, device=str(device), precision=precision)
                name = ex.extract_features(bundle, max_batches=args.warmup, **kw)  # warm-up (stopped early)
                folder = Path(bundle.path) / "features" / ex.feature_set_name("resnet50", size, precision)
                shutil.rmtree(folder, ignore_errors=True)
                _sync(device)
                t0 = time.perf_counter()
                name = ex.extract_features(bundle, **kw)
                _sync(device)
                sec = time.perf_counter() - t0
                n = sum(bundle.size(s) for s in ("train", "val", "test"))
                shutil.rmtree(folder, ignore_errors=True)
                assert name is not None
                rows_out.append({"size": size, "batch": bs, "precision": precision, "ips": n / sec, "images": n})
                print(f"features {size}px batch {bs} {precision}: {n / sec:.1f} img/s ({n} images)", flush=True)
            net = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
    finally:
        ex.build_backbone = orig


# ---------------------------------------------------------------------- linear grid
def coco_arrays(seed=0):
    rng = np.random.default_rng(seed)
    c = COCO
    n = c["train"] + c["val"] + c["test"]
    W = rng.normal(size=(c["dim"], c["labels"])).astype(np.float32) / np.sqrt(c["dim"])
    X = np.abs(rng.normal(size=(n, c["dim"])).astype(np.float32))  # ResNet features are non-negative
    scores = X @ W
    thr = np.quantile(scores, 1 - c["positives"] / c["labels"], axis=0)
    Y = scores > thr
    Y[~Y.any(1), 0] = True
    pos = np.array([rng.choice(np.flatnonzero(y)) for y in Y[:c["train"]]])
    Z = np.zeros((c["train"], c["labels"]), dtype=np.int8)
    Z[np.arange(c["train"]), pos] = 1
    a, b = c["train"], c["train"] + c["val"]
    return X[:a], Z, X[a:b], Y[a:b], X[b:], Y[b:]


def grid_section(device, args, rows_out):
    from spmlkit.config import TrainConfig
    from spmlkit.data.memory import ArrayBundle
    from spmlkit.training.linear import train_linear

    Xtr, Z, Xv, Yv, Xte, Yte = coco_arrays()
    bundle = ArrayBundle(Xtr, Z, X_val=Xv, Y_val=Yv, X_test=Xte, Y_test=Yte, name="coco-synthetic")
    E = args.grid_epochs
    modes = [m for m in ("stacked", "one at a time") if m in args.grid_modes]
    totals = {m: 0.0 for m in modes}
    members = [(lr, s) for lr in GRID_LRS for s in GRID_SEEDS]

    def timed(cfg, mode):
        _sync(device)
        t0 = time.perf_counter()
        if mode == "stacked":
            train_linear(bundle, cfg, lrs=[m[0] for m in members], seeds=[m[1] for m in members])
        else:
            for lr, s in members:
                train_linear(bundle, cfg, lrs=[lr], seeds=[s])
        _sync(device)
        return time.perf_counter() - t0

    for bs in GRID_BATCHES:
        # patience None: every run trains exactly its epochs (early stopping would blur the per-epoch cost)
        cfg = TrainConfig(method="an", epochs=E, batch_size=bs, device=str(device), standardize=False, patience=None)
        for mode in modes:
            sec = timed(cfg, mode)
            if E >= 25:
                per_epoch, fixed, full = sec / E, None, sec * 25 / E
            else:
                one = timed(cfg.replace(epochs=1), mode)
                per_epoch = (sec - one) / (E - 1)
                fixed = one - per_epoch
                full = fixed + 25 * per_epoch
            totals[mode] += full
            rows_out.append({"batch": bs, "mode": mode, "epochs_run": E, "seconds": sec, "per_epoch": per_epoch,
                             "fixed": fixed, "seconds_25": full})
            print(f"grid batch {bs} {mode}: {sec:.1f} s for {E} epochs; {per_epoch:.2f} s per epoch"
                  + ("" if fixed is None else f", fixed {fixed:.1f} s") + f" -> {full:.1f} s for 25", flush=True)
    for mode, sec in totals.items():
        rows_out.append({"batch": "8 + 16", "mode": mode, "epochs_run": E, "seconds": None, "per_epoch": None,
                         "fixed": None, "seconds_25": sec})


def map_section(device, args, rows_out):
    from spmlkit.metrics import average_precision, average_precision_torch

    rng = np.random.default_rng(0)
    n, L = COCO["test"], COCO["labels"]  # 40,137 × 80 (tiny under --smoke-cpu)
    Y = rng.random((n, L)) < 0.036
    Y[0] = True  # every class has a positive (the smoke run's 64 rows could leave one without)
    S = rng.normal(size=(n, L)).astype(np.float32)
    Yd, Sd = torch.from_numpy(Y).to(device), torch.from_numpy(S).to(device)
    average_precision_torch(Yd, Sd)
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(10):
        ap_dev = average_precision_torch(Yd, Sd)
    _sync(device)
    t_dev = (time.perf_counter() - t0) / 10
    t0 = time.perf_counter()
    ap_host = average_precision(Y, S)
    t_host = time.perf_counter() - t0
    diff = float(np.nanmax(np.abs(ap_dev.cpu().numpy() - ap_host)))
    rows_out.append({"device_s": t_dev, "host_s": t_host, "max_diff": diff, "rows": n, "labels": L})
    print(f"mAP {n:,} x {L}: device {t_dev * 1e3:.2f} ms, host NumPy {t_host * 1e3:.1f} ms, max |dAP| {diff:.1e}",
          flush=True)


def sinr_arrays(rows: int, labels: int, seed: int = 0):
    """Synthetic SINR-scale data: location features (sin/cos of a uniform longitude and
    latitude), one Zipf-distributed species per training record (the label index, int32),
    and small validation/test splits whose full labels are the record's species plus the
    next-ranked species with probability 1/2 (sparse)."""
    from spmlkit.sparse_labels import SparseLabels

    rng = np.random.default_rng(seed)

    def features(n):
        lon, lat = rng.uniform(-np.pi, np.pi, n), rng.uniform(-np.pi / 2, np.pi / 2, n)
        return np.stack([np.sin(lon), np.cos(lon), np.sin(lat), np.cos(lat)], axis=1).astype(np.float32)

    def species(n):
        s = rng.zipf(SINR["zipf"], size=n) - 1
        return np.where(s < labels, s, rng.integers(0, labels, size=n)).astype(np.int64)

    X = features(rows)
    Z = SparseLabels.single(species(rows), labels)
    held = []
    for n in (SINR["val"], SINR["test"]):
        first = species(n)
        second = np.where(rng.random(n) < 0.5, (first + 1) % labels, -1)
        rows_ = np.concatenate([np.arange(n), np.flatnonzero(second >= 0)])
        cols = np.concatenate([first, second[second >= 0]])
        held.append((features(n), SparseLabels.from_coo(rows_, cols, shape=(n, labels), dtype=bool)))
    return X, Z, held


def sinr_section(device, args, rows_out):
    from spmlkit.config import TrainConfig
    from spmlkit.data.memory import ArrayBundle
    from spmlkit.training.linear import train_linear

    n, L, B = args.sinr_rows, SINR["labels"] if not SMOKE else 300, SINR["batch"] if not SMOKE else 64
    X, Z, ((Xv, Yv), (Xt, Yt)) = sinr_arrays(n, L)
    bundle = ArrayBundle(X, Z, X_val=Xv, Y_val=Yv, X_test=Xt, Y_test=Yt, name="sinr-synthetic")
    cfg = TrainConfig(method="an", epochs=1, batch_size=B, head="mlp", hidden=SINR["hidden"], lr=1e-3,
                      device=str(device), standardize=False, patience=None)
    marks = {}

    def on_epoch(*a, **k):  # the first epoch (with its validation pass) has ended
        _sync(device)
        marks.setdefault("epoch_end", time.perf_counter())

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    _sync(device)
    t0 = time.perf_counter()
    train_linear(bundle, cfg, lrs=[1e-3], seeds=[0], on_epoch=on_epoch)
    _sync(device)
    whole = time.perf_counter() - t0
    ours = marks.get("epoch_end", t0 + whole) - t0
    ours_peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None

    # the bare loop: the same model (Linear 4 -> 256, ReLU, Linear 256 -> L), Adam, BCE on
    # each batch's targets built by scatter from one label per record, data on the device
    del bundle
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(X.shape[1], SINR["hidden"]), nn.ReLU(), nn.Linear(SINR["hidden"], L)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=device.type == "cuda")
    Xd = torch.from_numpy(X).to(device)
    labels = torch.from_numpy(Z.indices.astype(np.int64)).to(device)
    gen = torch.Generator(device=device).manual_seed(0)
    _sync(device)
    t0 = time.perf_counter()
    perm = torch.randperm(n, device=device, generator=gen)
    for s in range(0, n, B):
        idx = perm[s:s + B]
        logits = model(Xd[idx])
        target = torch.zeros_like(logits)
        target[torch.arange(len(idx), device=device), labels[idx]] = 1.0
        loss = nn.functional.binary_cross_entropy_with_logits(logits, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    _sync(device)
    bare = time.perf_counter() - t0
    bare_peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    rows_out.append({"rows": n, "labels": L, "batch": B, "ours_epoch": ours, "ours_whole": whole, "bare_epoch": bare,
                     "ratio": ours / bare, "ours_peak": ours_peak, "bare_peak": bare_peak})
    print(f"sinr {n:,} x {L:,}: spmlkit epoch (+ validation) {ours:.1f} s (whole call {whole:.1f} s), bare loop "
          f"{bare:.1f} s, ratio {ours / bare:.2f}", flush=True)


# ---------------------------------------------------------------------------- report
TARGET_GRID_S = 120.0  # the whole COCO-sized AN grid (both batch sizes, 25 epochs) on one H100
TARGET_FT_RATIO = 1.15  # bare PyTorch images/s ÷ spmlkit's, fine-tuning


def targets_lines(res) -> list[str]:
    """How far the measured numbers are from the targets (docs/gpu.md)."""
    out = []
    tot = [r for r in res["grid"] if r["batch"] == "8 + 16" and r["mode"] == "stacked"]
    if tot:
        sec = tot[0]["seconds_25"]
        out.append(f"- COCO-sized AN grid, stacked, 25 epochs: {sec:.1f} s against ≤ {TARGET_GRID_S:.0f} s "
                   f"({sec / TARGET_GRID_S:.2f} × the target: {'met' if sec <= TARGET_GRID_S else 'missed'})")
    for path in ("full path", "step only"):
        rows = [r for r in res["finetune"] if r["path"] == path]
        if rows:
            worst = max(rows, key=lambda r: r["ratio"])
            n_ok = sum(r["ratio"] <= TARGET_FT_RATIO for r in rows)
            out.append(f"- fine-tuning, {path}: bare ÷ spmlkit ≤ {TARGET_FT_RATIO} in {n_ok} of {len(rows)} "
                       f"configurations; worst {worst['ratio']:.3f} ({worst['size']} px, batch {worst['batch']}, "
                       f"{worst['precision']})")
    return (["## Against the targets (docs/gpu.md)", "", *out, ""]) if out else []


def write_report(out: Path, args, res, wall: float, *, argv, smoke: bool = False) -> None:
    import shlex

    from spmlkit.experiments.machine import machine_info
    from spmlkit.io import write_text

    title = "# GPU speed (issues 13 and 38)" if not smoke else \
        "# GPU speed: SMOKE RUN on the CPU (tiny sizes, a tiny CNN for the ResNet-50; the numbers mean nothing)"
    done = [s for s in args.sections if res.get(s)]
    L = [title, "",
         f"- command: `{' '.join(['python', 'benchmarks/gpu_speed.py', *(shlex.quote(a) for a in argv)])}`",
         f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
         f"- wall time: {wall:.0f} s (sections finished: {', '.join(done) or 'none'} of "
         f"{', '.join(args.sections)})",
         f"- machine: {machine_info(jobs=1, device=str(args.device_used), setting='finetune')}",
         f"- host: {platform.node()}; cuDNN {torch.backends.cudnn.version()}",
         "- the ResNet-50 has **random weights** (benchmarking only; speed does not depend on the weights)", ""]
    if res["finetune"]:
        L += [f"## Fine-tuning ResNet-50 (images/s; full path: PNG files through {args.workers} loader workers; "
              "step only: random tensors already on the GPU)", "",
              f"{args.steps} timed steps, best of {args.repeats} interleaved repeats, after {args.warmup} warm-up "
              "steps.", "",
              "| size | batch | precision | measured | spmlkit | bare PyTorch | bare ÷ spmlkit (target ≤ 1.15) |",
              "|---:|---:|---|---|---:|---:|---:|"]
        L += [f"| {r['size']} | {r['batch']} | {r['precision']} | {r['path']} | {r['ours']:.1f} | {r['bare']:.1f} "
              f"| {r['ratio']:.3f} |" for r in res["finetune"]]
        L.append("")
    if res["features"]:
        L += [f"## Feature extraction (images/s, batch {max(args.batches)}, `extract_features` on PNG files, "
              f"{args.workers} loader workers, the cache written; the whole call, loader start-up included)", "",
              "| size | precision | images | images/s |", "|---:|---|---:|---:|"]
        L += [f"| {r['size']} | {r['precision']} | {r['images']} | {r['ips']:.1f} |" for r in res["features"]]
        L.append("")
    if res["grid"]:
        c = COCO
        L += [f"## COCO-sized linear AN grid ({c['train']:,} × {c['dim']:,} → {c['labels']}; "
              f"{len(GRID_LRS)} lr × {len(GRID_BATCHES)} batch × {len(GRID_SEEDS)} seeds, 25 epochs; target "
              "≤ 120 s in all)", "",
              "Runs of 1 and E epochs: per epoch = their difference / (E − 1), fixed = the 1-epoch run − one "
              "epoch, 25 epochs = fixed + 25 × per epoch.", "",
              "| batch | members | E | seconds for E epochs | seconds per epoch | fixed seconds "
              "| seconds for 25 epochs |", "|---|---|---:|---:|---:|---:|---:|"]

        def f1(v):
            return "" if v is None else f"{v:.2f}"

        for r in res["grid"]:
            L.append(f"| {r['batch']} | {r['mode']} | {r['epochs_run']} | {f1(r['seconds'])} | {f1(r['per_epoch'])} "
                     f"| {f1(r['fixed'])} | {r['seconds_25']:.1f} |")
        L.append("")
    if res["map"]:
        r = res["map"][0]
        L += [f"## mAP of {r['rows']:,} × {r['labels']}", "",
              f"On the device {r['device_s'] * 1e3:.2f} ms; NumPy on the host {r['host_s'] * 1e3:.1f} ms; "
              f"max per-class AP difference {r['max_diff']:.1e}.", ""]
    if res["sinr"]:
        r = res["sinr"][0]

        def gib(v):
            return "—" if v is None else f"{v / 2 ** 30:.1f} GiB"

        L += [f"## SINR scale (synthetic: {r['rows']:,} records × {r['labels']:,} species, D = 4, MLP 256, `an`, "
              f"batch {r['batch']}, one epoch)", "",
              "| | seconds per epoch | peak GPU memory |", "|---|---:|---:|",
              f"| spmlkit `train_linear` (epoch + validation) | {r['ours_epoch']:.1f} | {gib(r['ours_peak'])} |",
              f"| bare loop (per-batch targets by scatter) | {r['bare_epoch']:.1f} | {gib(r['bare_peak'])} |", "",
              f"Ratio spmlkit ÷ bare: {r['ratio']:.2f} (target ≤ 1.3); spmlkit's whole call (set-up, the "
              f"epoch, validation, test) {r['ours_whole']:.1f} s.", ""]
    L += targets_lines(res)
    write_text(out, "\n".join(L))
    print(f"wrote {out}", flush=True)


SECTIONS = ("map", "finetune", "features", "grid", "sinr")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    t_start = time.perf_counter()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sections", default="map,finetune,features,grid",
                   help="comma-separated, run in this order (default map,finetune,features,grid)")
    p.add_argument("--sizes", default="224,448")
    p.add_argument("--batches", default="16,64")
    p.add_argument("--steps", type=int, default=30, help="timed steps per fine-tuning/feature measurement")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--grid-epochs", type=int, default=3,
                   help="epochs E of the longer grid run (>= 2; with a 1-epoch run: per-epoch and fixed costs)")
    p.add_argument("--grid-modes", default="stacked,single",
                   help="stacked (the 12 members of a batch size as one model) and/or single (one at a time)")
    p.add_argument("--sinr-rows", type=int, default=SINR["rows"],
                   help=f"records of the sinr section (default {SINR['rows']:,}, SINR's)")
    p.add_argument("--workers", type=int, default=8, help="image-loading worker processes (default 8)")
    p.add_argument("--device", default="cuda", help="a CUDA device (default cuda)")
    p.add_argument("--out", type=Path, default=None, help=f"the report (default {RESULTS.relative_to(REPO)})")
    p.add_argument("--no-write", action="store_true", help="print only")
    p.add_argument("--smoke-cpu", action="store_true",
                   help="check that the code runs, on the CPU with tiny sizes (prints numbers that mean nothing; "
                        "writes a report only to an explicit --out, titled as a smoke run)")
    args = p.parse_args(argv)
    if args.grid_epochs < 2:
        p.error("--grid-epochs must be at least 2 (the per-epoch cost is the difference with a 1-epoch run)")
    args.sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(args.sections) - set(SECTIONS))
    if unknown:
        p.error(f"--sections: unknown {', '.join(unknown)} (expected some of {', '.join(SECTIONS)})")
    modes = {"stacked": "stacked", "single": "one at a time"}
    try:
        args.grid_modes = [modes[m.strip()] for m in args.grid_modes.split(",") if m.strip()]
    except KeyError:
        p.error("--grid-modes: expected stacked and/or single")
    if not args.grid_modes:
        p.error("--grid-modes: expected stacked and/or single")
    import tempfile

    res = {"finetune": [], "features": [], "grid": [], "map": [], "sinr": []}
    if args.smoke_cpu:
        global SMOKE
        SMOKE = True
        for k in ("train", "val", "test"):
            COCO[k] = 64
        COCO["dim"], COCO["labels"] = 16, 8
        args.sizes, args.batches = [64], [2]
        args.steps = args.warmup = args.repeats = 1
        args.grid_epochs, args.workers = 2, min(args.workers, 1)
        args.sinr_rows = min(args.sinr_rows, 4096)
        device = torch.device("cpu")
    else:
        if not torch.cuda.is_available():
            print("gpu_speed: no GPU (CUDA is not available here): nothing measured, no results written")
            return 0
        from spmlkit.device import resolve_device

        device = resolve_device(args.device)
        if device.type != "cuda":
            print(f"gpu_speed: --device {args.device} is not a CUDA device: nothing measured")
            return 0
        args.sizes = [int(s) for s in args.sizes.split(",")]
        args.batches = [int(b) for b in args.batches.split(",")]
    args.device_used = device
    write = not args.no_write and (not args.smoke_cpu or args.out is not None)
    args.out = args.out or RESULTS

    def report():
        if write:
            write_report(args.out, args, res, time.perf_counter() - t_start, argv=argv, smoke=args.smoke_cpu)

    with tempfile.TemporaryDirectory() as tmp:
        bundle = None
        for section in args.sections:
            if section in ("finetune", "features") and bundle is None:
                n = (args.steps + args.warmup) * max(args.batches) * (2 if args.smoke_cpu else 1)
                bundle = image_bundle(Path(tmp), n)
            if section == "map":
                map_section(device, args, res["map"])
            elif section == "finetune":
                finetune_section(device, args, res["finetune"], bundle)
            elif section == "features":
                features_section(device, args, res["features"], bundle)
            elif section == "grid":
                grid_section(device, args, res["grid"])
            elif section == "sinr":
                sinr_section(device, args, res["sinr"])
            report()
    for line in targets_lines(res)[2:]:
        print(line, flush=True)
    if args.smoke_cpu:
        print("gpu_speed: smoke run on the CPU finished" + (f" (report: {args.out})" if write else
                                                             " (no results written)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
