"""Overhead of the ``spml bench`` runner over bare training, on one stacked group.

Trains the same group (Yeast, AN, 4 learning rates x 3 seeds = 12 members, batch 16,
25 epochs by default) three ways and prints wall and CPU seconds of each:

1. ``train_linear`` alone (no run folder): the training itself;
2. ``train_linear`` with a run folder (per-epoch checkpoint + metrics.jsonl), which the
   bench needs to resume a killed group mid-way;
3. the bench (``run_bench`` on one method and batch size): 2. + per-epoch histograms
   of the unobserved positives (Cole Fig. 2) + group file + tables.

(and 4. the bench with ``--no-histograms``).

Usage: PYTHONPATH=src python benchmarks/bench_overhead.py [--epochs 25] [--batch-size 16] [--repeat 2]
CPU seconds are the steadier number on a shared machine.  Writes
``benchmarks/results/bench_overhead.md`` (``--out``) with the command, date, machine and
wall time, and each variant's CPU time relative to ``train_linear`` alone.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=25)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "bench_overhead.md"))
    args = ap.parse_args()
    import shlex
    import sys

    t_start = time.perf_counter()

    from spmlkit.config import TrainConfig
    from spmlkit.data import load_dataset, prepare_bundle
    from spmlkit.experiments.bench import BenchSpec, run_bench
    from spmlkit.experiments.machine import machine_info
    from spmlkit.training.linear import train_linear

    tmp = Path(tempfile.mkdtemp(prefix="spml-overhead-"))
    bundle = prepare_bundle(load_dataset("yeast"), tmp / "yeast", log=lambda m: None)
    lrs = [1e-2, 1e-3, 1e-4, 1e-5]
    seeds = [0, 1, 2]
    cfg = TrainConfig(method="an", epochs=args.epochs, batch_size=args.batch_size)
    members = dict(lrs=[lr for lr in lrs for _ in seeds], seeds=[s for _ in lrs for s in seeds])

    def plain():
        train_linear(bundle, cfg, **members)

    def with_run_dir():
        shutil.rmtree(tmp / "run", ignore_errors=True)
        train_linear(bundle, cfg, run_dir=tmp / "run", **members)

    def bench(histograms=True):
        shutil.rmtree(tmp / "bench", ignore_errors=True)
        run_bench(BenchSpec(datasets=[str(bundle.path)], methods=["an"], lrs=tuple(lrs), seeds=tuple(seeds),
                            batch_sizes=(args.batch_size,), epochs=args.epochs, histograms=histograms),
                  tmp / "bench", progress=False, figures=False, log=lambda m: None)

    print(f"machine: {machine_info()}")
    print(f"one group: yeast, an, 12 members, batch {args.batch_size}, {args.epochs} epochs; best of {args.repeat}")
    rows = []
    for name, fn in (("train_linear alone", plain), ("train_linear + run folder (checkpoint, metrics.jsonl)",
                                                     with_run_dir),
                     ("spml bench (+ Fig. 2 histograms, group file, tables)", bench),
                     ("spml bench --no-histograms", lambda: bench(False))):
        best = None
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            fn()
            r = (time.perf_counter() - t, time.process_time() - c)
            best = r if best is None or r[1] < best[1] else best
        rows.append((name, *best))
        print(f"{name:56s} wall {best[0]:7.2f} s   cpu {best[1]:7.2f} s", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    base = rows[0][2]
    lines = ["# Overhead of the spml bench runner over bare training (one stacked group)", "",
             f"- command: `python benchmarks/bench_overhead.py{' ' if sys.argv[1:] else ''}{shlex.join(sys.argv[1:])}`",
             f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; wall time "
             f"{time.perf_counter() - t_start:.0f} s",
             f"- machine: {machine_info()}",
             f"- one group: yeast, an, 4 learning rates x 3 seeds = 12 members (one stacked model), batch "
             f"{args.batch_size}, {args.epochs} epochs; best CPU time of {args.repeat} (the steadier number on a "
             "shared machine)", "",
             "| variant | wall (s) | CPU (s) | CPU vs train_linear alone |", "|---|---:|---:|---:|"]
    lines += [f"| {n} | {w:.2f} | {c:.2f} | {c / base:.2f}x |" for n, w, c in rows]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
