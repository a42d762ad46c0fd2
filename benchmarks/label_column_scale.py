"""Time of ``spml prepare TABLE --label-column`` as the number of distinct labels grows.

    PYTHONPATH=src python benchmarks/label_column_scale.py [--sizes 5000 10000 20000]

A CSV of N rows (2 features, one label name per row, every label distinct: N labels) is
read (``load_any``) and prepared (``prepare_bundle``) N = each ``--sizes``.  Labels are
held as a dense N x L int8 matrix throughout (parsing, the bundle's ``Z.npy``), so the
time grows with N·L: with one label per row that is quadratic (issue 22).  The table
reports each size's seconds and the ratio to the previous size (4 = quadratic for a
doubling, 2 = linear).  Writes ``benchmarks/results/label_column_scale.md`` with the
command, date, machine and wall time.
"""
from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def one(n: int, tmp: Path) -> tuple[float, float]:
    from spmlkit.data import load_any, prepare_bundle

    rng = np.random.default_rng(0)
    src = tmp / f"labels-{n}.csv"
    with open(src, "w") as fh:
        fh.write("f1,f2,label\n")
        for i, (a, b) in enumerate(rng.normal(size=(n, 2))):
            fh.write(f"{a:.4f},{b:.4f},label{i}\n")
    t0 = time.perf_counter()
    ds = load_any(str(src), label_column="label")
    t1 = time.perf_counter()
    prepare_bundle(ds, tmp / f"b{n}", log=lambda m: None)
    t2 = time.perf_counter()
    shutil.rmtree(tmp / f"b{n}")
    return t1 - t0, t2 - t1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 10000, 20000])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "label_column_scale.md"))
    args = ap.parse_args()
    from spmlkit.experiments.machine import machine_info

    start = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in args.sizes:
            read, prep = one(n, Path(d))
            rows.append((n, read, prep))
            print(f"N = L = {n}: read {read:.2f} s, prepare {prep:.2f} s", flush=True)
    wall = time.perf_counter() - start
    lines = ["# `--label-column` with one distinct label per row: time against N = L", "",
             f"- command: `PYTHONPATH=src python benchmarks/label_column_scale.py {' '.join(sys.argv[1:])}`".rstrip(),
             f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC}",
             f"- machine: {machine_info()}", "- device: cpu (no torch computation)",
             f"- wall time: {wall:.1f} s (shared machine: noisy)", "",
             "| N = L | read (s) | prepare (s) | total (s) | total / previous |", "|---:|---:|---:|---:|---:|"]
    prev = None
    for n, read, prep in rows:
        tot = read + prep
        lines.append(f"| {n} | {read:.2f} | {prep:.2f} | {tot:.2f} | {'' if prev is None else f'{tot / prev:.1f}'} |")
        prev = tot
    lines += ["", "Labels are a dense N x L matrix (the bundle stores `Z.npy` as int8 N x L), so the cost is "
              "O(N·L): a ratio near 4 per doubling. Issue 22 removed the slowest pass (`np.isin` over the matrix "
              "when validating observations); a sparse label store would be needed to make it linear."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
