"""Test mAP and wall time of AN, AN+LinearInit and LAC on image data, linear and fine-tuned.

    PYTHONPATH=src python benchmarks/images_runs.py [--datasets digits coco-tiny coco-mini]
        [--data-root /work/shared/data] [--image-size 224] [--work DIR]

For each dataset: ``spml prepare`` (seed 0, single positive), EfficientNet-Lite0 features
at ``--image-size``, then

* linear: ``bce`` (full labels, the reference) and ``an`` — 25 epochs, lr 1e-3, batch 8, raw
  (not standardised) features as in the papers;
* fine-tuned: ``an`` — 10 epochs, Adam lr 1e-4, batch 8;
* fine-tuned: ``an`` + LinearInit — a linear phase on raw features (25 epochs, lr 1e-3), then 5 epochs at 1e-4;
* fine-tuned: ``lac`` — 10 epochs (5 stage-1 + 5 stage-2), AdamW + one-cycle, peak lr 1e-4,
  batch 8, EMA 0.9997, decoder d_model 512, the other LAC defaults; and two variants:
  the authors' supervised-contrastive form of the LAC loss (``lac_form=supcon``), and an EMA
  decay of 0.99 (0.9997 averages over ~3,300 steps, more than these runs take).

One seed (0), one configuration each: these are smoke-scale measurements on a shared
2-core CPU, not the papers' grid.  Every run writes its own folder under ``--work``
(resumable: rerunning the script skips finished runs).  Writes
``benchmarks/results/images_runs.md`` (+ ``.json``).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUNS = [  # (label, setting, TrainConfig overrides)
    ("linear BCE (full labels)", "linear", dict(method="bce", lr=1e-3, epochs=25, standardize=False)),
    ("linear AN", "linear", dict(method="an", lr=1e-3, epochs=25, standardize=False)),
    ("fine-tune AN", "finetune", dict(method="an", lr=1e-4, finetune_epochs=10)),
    ("fine-tune AN + LinearInit", "finetune", dict(method="an", lr=1e-4, linear_init=True, linear_init_lr=1e-3,
                                                    epochs=25, finetune_epochs=5)),
    ("fine-tune LAC", "finetune", dict(method="lac", lr=1e-4, finetune_epochs=10)),
    ("fine-tune LAC, supcon form", "finetune", dict(method="lac", lr=1e-4, finetune_epochs=10,
                                                    params={"lac_form": "supcon"})),
    ("fine-tune LAC, EMA 0.99", "finetune", dict(method="lac", lr=1e-4, finetune_epochs=10, ema_decay=0.99)),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["digits", "coco-tiny", "coco-mini"])
    ap.add_argument("--data-root", default=os.environ.get("SPMLKIT_DATA", "/work/shared/data"))
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--only", nargs="*", help="run only these labels (substring match)")
    ap.add_argument("--work", default="/tmp/spmlkit-images-runs")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "images_runs.md"))
    args = ap.parse_args(argv)
    t_start = time.perf_counter()

    from spmlkit.config import TrainConfig
    from spmlkit.data import Bundle, load_dataset, prepare_bundle
    from spmlkit.features import extract_features
    from spmlkit.training.finetune import train_finetune
    from spmlkit.training.linear import train_linear

    work = Path(args.work)
    records = []
    for name in args.datasets:
        bpath = work / name / "bundle"
        t = time.perf_counter()
        bundle = Bundle(bpath) if (bpath / "meta.json").exists() else prepare_bundle(
            load_dataset(name, data_root=args.data_root), bpath, log=lambda m: print(m, file=sys.stderr))
        print(bundle.summary(), flush=True)
        fs = extract_features(bundle, backbone="efficientnet-lite0", image_size=args.image_size, batch_size=16)
        t_feat = time.perf_counter() - t
        for label, setting, over in RUNS:
            if args.only and not any(o in label for o in args.only):
                continue
            run_dir = work / name / (label.replace(" ", "_").replace("+", "plus").replace("(", "").replace(")", "")
                                     .replace(",", ""))
            done = run_dir / "record.json"
            if done.exists():
                records.append(json.loads(done.read_text()))
                continue
            cfg = TrainConfig(setting=setting, batch_size=args.batch_size, image_size=args.image_size,
                              feature_set=fs if setting == "linear" else None, seed=0, **over)
            t0 = time.perf_counter()
            fn = train_linear if setting == "linear" else train_finetune
            (r,) = fn(bundle, cfg, run_dir=run_dir)
            wall = time.perf_counter() - t0
            rec = {"dataset": name, "run": label, "test_map": r.test_map, "val_map": r.val_score,
                   "best_epoch": r.best_epoch, "epochs_run": r.epochs_run, "train_map": r.train_map,
                   "wall_seconds": wall, "feature_seconds": t_feat,
                   "sizes": {s: bundle.size(s) for s in ("train", "val", "test")},
                   "config": {k: v for k, v in cfg.to_dict().items()
                              if k in ("method", "setting", "lr", "batch_size", "epochs", "finetune_epochs",
                                       "standardize", "linear_init", "linear_init_lr", "image_size", "backbone",
                                       "params")},
                   "details": getattr(r, "finetune", {})}
            run_dir.mkdir(parents=True, exist_ok=True)
            done.write_text(json.dumps(rec, indent=1, default=str))
            records.append(rec)
            print(f"{name:10s} {label:28s} test mAP {r.test_map:6.2f}  (val {r.val_score:6.2f}, best epoch "
                  f"{r.best_epoch}/{r.epochs_run})  {wall:7.1f} s", flush=True)

    env = " ".join(f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "SPMLKIT_CACHE") if k in os.environ)
    cmd = (env + " " if env else "") + "PYTHONPATH=src python benchmarks/images_runs.py " + " ".join(argv if argv is not None else sys.argv[1:])
    uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip()
    import torch

    from spmlkit.device import describe, device_info, resolve_device

    lines = ["# Image runs: test mAP and wall time (EfficientNet-Lite0, one seed)", "",
             f"- command: `{cmd.strip()}`",
             f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
             f"- machine: `{uname}`; torch {torch.__version__}, torch threads: {torch.get_num_threads()}; load average now "
             f"{os.getloadavg()[0]:.1f} (2 cores shared with other jobs: wall times are noisy upper bounds)",
             f"- device: {describe(device_info(resolve_device(None)))} (the trainers' default device, auto)",
             f"- wall time of this invocation: {time.perf_counter() - t_start:.0f} s (runs an earlier invocation "
             "finished under --work are read back with their own wall times, not re-run)",
             f"- images resized to {args.image_size} x {args.image_size}, batch {args.batch_size}, seed 0, "
             "single-positive training labels, full-label validation (model selection) and test",
             "- linear: 25 epochs, Adam lr 1e-3, raw features; fine-tune AN: 10 epochs, Adam lr 1e-4; "
             "AN + LinearInit: 25 linear epochs on raw features (lr 1e-3), then 5 fine-tuning epochs at lr 1e-4; "
             "LAC: 10 epochs "
             "(5 + 5 stages), AdamW + one-cycle peak 1e-4, EMA 0.9997, decoder d_model 512", "",
             "| dataset | train / val / test | run | test mAP | val mAP | best epoch | wall time (s) |",
             "|---|---|---|---|---|---|---|"]
    for r in records:
        s = r["sizes"]
        lines.append(f"| {r['dataset']} | {s['train']} / {s['val']} / {s['test']} | {r['run']} | "
                     f"{r['test_map']:.2f} | {r['val_map']:.2f} | {r['best_epoch']}/{r['epochs_run']} | "
                     f"{r['wall_seconds']:.0f} |")
    feats = {r["dataset"]: r["feature_seconds"] for r in records}
    lines += ["", "Feature extraction (first run of the dataset; 0 when the cache already existed): " +
              ", ".join(f"{k} {v:.0f} s" for k, v in feats.items()), ""]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    Path(args.out).with_suffix(".json").write_text(json.dumps(records, indent=1, default=str), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
