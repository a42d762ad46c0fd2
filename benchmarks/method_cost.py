"""The cost of an epoch of each ``auto`` member against an epoch of ``-m an``, at wide L.

``auto``'s cost budget at scale (:mod:`spmlkit.training.budget`) plans its members in
epochs of one ``-m an`` run on the linear head.  Most losses cost what AN costs per
(example, label) entry — the head's matrix products dominate — but some do several
elementwise passes over the ``(B, L)`` logits per step (GR-Loss: σ(w·p + b), a Gaussian
weight, two losses with their gradients; Chen et al. 2024 §3.3), which at L = 10,000
is most of the step.  Each registered method declares that factor
(``register_method(..., epoch_cost=...)``, :attr:`spmlkit.methods.base.MethodSpec.epoch_cost`);
this benchmark measures it, so the declaration can be checked against a number:

* synthetic single positives as in ``benchmarks/scale.py`` (one Zipf label per training
  row, D = 64 features: the label's prototype plus noise), ``--rows`` training rows, ``--labels`` labels;
* each method's training loop exactly as ``fit()`` runs it
  (:func:`spmlkit.training.loop.train_epoch` through ``benchmarks/linear_speed.py``'s
  :class:`MethodRun`: warm-up epoch untimed, then ``--steps`` steps at batch 256, one member);
* ``an`` is timed right before each method, in the same repetition, and the ratio is
  the median over ``--reps`` repetitions of method / an (CPU time and wall time).

    python benchmarks/method_cost.py                          # benchmarks/results/method_cost.md
    python benchmarks/method_cost.py --methods gr,wan --reps 3
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from linear_speed import MethodRun  # noqa: E402  (the benchmark's own helpers, beside this script)
from scale import zipf_labels  # noqa: E402

from spmlkit.io import write_text  # noqa: E402
from spmlkit.methods.base import METHODS, get_method_spec  # noqa: E402
from spmlkit.training.linear import num_threads  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "method_cost.md"
D = 64
BATCH = 256
#: auto's linear members (spmlkit.methods.recipe.DEFAULT_MEMBERS; the presence-only ones need background rows)
DEFAULT_METHODS = "gr,wan,l1r,em-apl"


def synthetic(n: int, L: int, seed: int = 0) -> dict:
    """One positive per row (Zipf over labels), features the label's prototype plus noise."""
    rng = np.random.default_rng(seed)
    proto = rng.normal(size=(L, D)).astype(np.float32)
    data = {"d": D, "L": L}
    for split, rows in (("train", n), ("val", max(n // 10, 1))):
        y = zipf_labels(rng, rows, L)
        X = proto[y] + rng.normal(scale=1.5, size=(rows, D)).astype(np.float32)
        Y = np.zeros((rows, L), dtype=bool)
        Y[np.arange(rows), y] = True
        data[split] = (X, Y)
    return data


def measure(methods: list[str], data: dict, steps: int, reps: int, log) -> dict:
    """{method: [(wall ratio, cpu ratio), ...]} against ``an`` timed just before it."""
    runs = {m: MethodRun(m, data, BATCH) for m in ["an", *methods]}
    ratios: dict = {m: [] for m in methods}
    for rep in range(reps):
        for m in methods[rep % len(methods):] + methods[:rep % len(methods)]:
            base = runs["an"].epoch(steps)
            t = runs[m].epoch(steps)
            ratios[m].append((t[0] / base[0], t[1] / base[1]))
            log(f"rep {rep} {m}: {t[1]:.2f} s CPU against an {base[1]:.2f} s ({t[1] / base[1]:.2f}x)")
    return ratios


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", default=DEFAULT_METHODS)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--labels", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    METHODS.discover()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    t0, start = time.time(), dt.datetime.now(dt.timezone.utc)

    def log(msg: str) -> None:
        print(msg, flush=True)

    with num_threads(1):
        torch.manual_seed(0)
        ratios = measure(methods, synthetic(args.rows, args.labels), args.steps, args.reps, log)
    load = os.getloadavg()
    lines = ["# An epoch of each `auto` member against an epoch of `-m an` (the budget's `epoch_cost`)", "",
             f"- command: `python benchmarks/method_cost.py {shlex.join(sys.argv[1:] if argv is None else argv)}`",
             f"- date: {start:%Y-%m-%d %H:%M} UTC",
             f"- machine: {platform.platform()}; {os.cpu_count()} cores; python {platform.python_version()}; "
             f"torch {torch.__version__}; numpy {np.__version__}",
             "- device: cpu, one thread",
             f"- load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
             f"- wall time: {time.time() - t0:.0f} s", "",
             f"Synthetic single positives (module docstring): {args.rows:,} training rows x {args.labels:,} labels, "
             f"D = {D}, batch {BATCH}, one member on the linear head, {args.steps} steps per measurement after an "
             f"untimed warm-up epoch, {args.reps} repetitions, `an` timed just before each method.  Ratio: the median "
             "over repetitions of the method's time / `an`'s.  **declared**: the `epoch_cost` the method registers, "
             "which `auto`'s cost budget plans with.", "",
             "| method | CPU ratio | wall ratio | min-max (CPU) | declared |", "|---|---:|---:|---|---:|"]
    for m in methods:
        cpu = [r[1] for r in ratios[m]]
        wall = [r[0] for r in ratios[m]]
        lines.append(f"| {m} | {statistics.median(cpu):.2f} | {statistics.median(wall):.2f} | "
                     f"{min(cpu):.2f}-{max(cpu):.2f} | {get_method_spec(m).epoch_cost:g} |")
    text = "\n".join(lines) + "\n"
    print(text)
    write_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
