"""Quick sanity run of every Cole et al. (2021) method in the linear setting.

For each dataset and method: one stacked run over lr ∈ {1e-2, 1e-3, 1e-4} (seed 0, batch 8,
25 epochs, standardised features), the learning rate chosen on validation mAP, and the
test mAP at its best-validation epoch.  Not the paper's protocol (that is ``spml bench``:
2 batch sizes × 4 learning rates × 3 seeds) and defaults are not tuned to these sets.
ROLE also runs with ``adam=dense`` (its default since c5ee570, so that row repeats the
``role`` row), ``adam=rowwise`` (the default before) and the other estimator storages.
``--datasets`` and ``--only`` re-run a few rows, e.g. ``--datasets scene --only pr role``.

    PYTHONPATH=src python benchmarks/cole2021_quick.py --datasets yeast scene emotions \\
        --data-root ../shared/data --out benchmarks/results/cole2021_quick.md
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

from spmlkit.config import TrainConfig
from spmlkit.data import load_dataset, prepare_bundle
from spmlkit.device import describe, device_info, resolve_device
from spmlkit.training import train_linear

METHODS = [("bce", {}), ("bce-ls", {}), ("an", {}), ("an-ls", {}), ("an-ls-asym", {}), ("wan", {}), ("epr", {}),
           ("pr", {}), ("role", {}), ("role", {"adam": "dense"}), ("role", {"adam": "rowwise"}),
           ("role", {"storage": "float16"}),
           ("role", {"storage": "memmap"}), ("role", {"storage": "factorised", "rank": 4})]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["yeast"])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--epochs", type=int, default=25)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[8], help="batch sizes of the grid (default 8)")
    ap.add_argument("--only", nargs="+", help="run only these method rows, e.g. pr role role:adam=rowwise "
                                              "role:storage=factorised:rank=4")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    torch.set_num_threads(args.threads)
    lrs = [1e-2, 1e-3, 1e-4]
    methods = METHODS
    if args.only:
        def label(m, p):
            return m + "".join(f":{a}={b}" for a, b in p.items())
        unknown = sorted(set(args.only) - {label(m, p) for m, p in METHODS})
        if unknown:
            ap.error(f"--only {' '.join(unknown)}: no such row; rows: {' '.join(label(m, p) for m, p in METHODS)}")
        methods = [(m, p) for m, p in METHODS if label(m, p) in args.only]
    lines = ["# Cole et al. (2021) methods: quick linear runs", "",
             f"- command: `{' '.join(['python', *sys.argv])}`",
             f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
             f"- machine: {platform.machine()} {os.cpu_count()} CPUs, torch {torch.__version__}, {args.threads} "
             f"thread(s), load average {os.getloadavg()[0]:.1f} (shared machine: times are noisy)",
             f"- device: {describe(device_info(resolve_device(None)))}",
             "- wall time: (filled in at the end)",
             f"- protocol: lr ∈ {lrs} stacked in one run, seed 0, batch {args.batch_sizes}, {args.epochs} epochs, "
             "bundle seed 0 (official test split, 20% of training held out for validation); (lr, batch) chosen "
             "on validation mAP; "
             "test mAP at the best-validation epoch", ""]
    tmp = Path(tempfile.mkdtemp(prefix="cole-quick-"))
    for name in args.datasets:
        bundle = prepare_bundle(load_dataset(name, data_root=args.data_root), tmp / name, log=lambda m: None)
        k = float(bundle.labels("train").sum(1).mean())
        lines += [f"## {name} (train {bundle.size('train')}, val {bundle.size('val')}, test {bundle.size('test')}, "
                  f"L = {bundle.n_labels}, k = {k:.2f})", "",
                  "| method | params | best lr | batch | val mAP | test mAP | best epoch | seconds |",
                  "|---|---|---|---|---|---|---|---|"]
        for method, params in methods:
            t0 = time.perf_counter()
            runs = []
            for bs in args.batch_sizes:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    runs += train_linear(bundle, TrainConfig(method=method, epochs=args.epochs, batch_size=bs,
                                                             params=params), lrs=lrs, seeds=[0] * len(lrs))
            best = max(runs, key=lambda r: r.val_score)
            p = ", ".join(f"{a}={b}" for a, b in params.items())
            lines.append(f"| {method} | {p} | {best.lr:g} | {best.batch_size} | {best.val_score:.2f} | "
                         f"{best.test_map:.2f} | {best.best_epoch} | {time.perf_counter() - t0:.1f} |")
            print(lines[-1], file=sys.stderr, flush=True)
        lines.append("")
    wall = time.perf_counter() - t_start
    lines[lines.index("- wall time: (filled in at the end)")] = (
        f"- wall time: {wall:.0f} s (the whole command: data preparation and every row's training)")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        from spmlkit.io import write_text

        write_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
