"""`spml predict` on wide outputs, before and after streaming (issue 32, item 4).

A synthetic linear model with D = 64 features and L = 50,000 labels (random weights,
rule expected-k with k = 2) predicts N rows of random features.  Each case runs
`spml predict` as its own process and records its wall time and peak RSS (its own
``ru_maxrss``, through ``os.wait4``):

* **before**: the code at ``--before`` (default 75e1ce7, the commit streaming started
  from), extracted with ``git archive``: it scores all N x L probabilities in float64,
  writes a CSV with one format call per value, and turns them into label sets by a full
  sort of every row;
* **after**: this checkout: rows in chunks of ``4M / L`` rows (memory O(chunk x L)),
  ``--proba`` to ``.npy`` appended chunk by chunk, CSV one format call per row (refused above
  50 million values), label sets by the model's rule applied chunk by chunk, ``--top-k``
  by partial selection.

The old code cannot run the largest cases on this machine (N = 20,000: 8 GB of float64
probabilities plus 4 GB of logits before any output); they are listed with that reason.

    python benchmarks/predict_stream.py            # writes benchmarks/results/predict_stream.md
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from snapshot import snapshot_src  # (benchmarks/snapshot.py: this script's folder is on sys.path)

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
L, D = 50_000, 64


def make_model(folder: Path, n_rows: list[int]) -> None:
    import torch

    from spmlkit.practitioner.saved import SavedModel, save_model

    rng = np.random.default_rng(0)
    W = (rng.normal(size=(D, L)) / np.sqrt(D)).astype(np.float32)
    b = (rng.normal(size=(1, L)) - 2).astype(np.float32)
    m = SavedModel(label_names=[f"label{j:05d}" for j in range(L)], head="linear", hidden=8, n_features=D,
                   state={"weight": torch.from_numpy(W), "bias": torch.from_numpy(b)},
                   label_sets={"rule": "expected_k", "k": 2.0, "k_estimate": 2.0})
    save_model(m, folder / "model")
    for n in n_rows:
        np.save(folder / f"X{n}.npy", rng.normal(size=(n, D)).astype(np.float32))


def run(src: Path, args: list, cwd: Path) -> tuple[float, float, str]:
    env = {**os.environ, "PYTHONPATH": str(src), "SPML_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryFile("w+") as log:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "spmlkit", "predict", *map(str, args)], cwd=cwd, env=env,
                             stdout=log, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        log.seek(0)
        text = log.read().strip().splitlines()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"spml predict {' '.join(map(str, args))} failed: {text[-3:]}")
    print(f"{wall:7.1f} s {usage.ru_maxrss / 1024:7.0f} MiB  {src}: predict {' '.join(map(str, args))}", flush=True)
    return wall, usage.ru_maxrss / 1024, text[-1] if text else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="75e1ce7", help="git revision of the code before streaming")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "predict_stream.md"))
    ap.add_argument("--small", type=int, default=1000, help="rows of the cases the old code can run")
    ap.add_argument("--large", type=int, default=20_000, help="rows of the large cases")
    args = ap.parse_args()
    from spmlkit.experiments.machine import machine_info

    start = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        w = Path(tmp)
        snapshot_src(args.before, w)  # (w / "before" / "src": the code before the change)
        before, after = w / "before" / "src", ROOT / "src"
        make_model(w, [args.small, args.large])
        s, g = args.small, args.large
        cases = [
            (f"probabilities, CSV, {s:,} x {L:,}", s, ["--proba", "-o", "p.csv"], ["--proba", "-o", "p.csv"]),
            (f"label sets (expected-k, k = 2), {s:,} x {L:,}", s, ["--labels", "-o", "s.csv"],
             ["--labels", "-o", "s.csv"]),
            (f"probabilities, {g:,} x {L:,}", g, None, ["--proba", "-o", "p.npy"]),
            (f"label sets (expected-k, k = 2), {g:,} x {L:,}", g, None, ["--labels", "-o", "s.csv"]),
            (f"top 5 labels, {g:,} x {L:,}", g, None, ["--top-k", "5", "-o", "t.csv"]),
        ]
        for name, n, old, new in cases:
            X = w / f"X{n}.npy"
            b = run(before, [w / "model", X, *old], w) if old else None
            if b is not None:
                (w / "before_out").mkdir(exist_ok=True)
                os.replace(w / old[-1], w / "before_out" / old[-1])
            a = run(after, [w / "model", X, *new], w)
            same = ""
            if b is not None:
                same = "yes" if (w / "before_out" / old[-1]).read_bytes() == (w / new[-1]).read_bytes() else "NO"
            size = (w / new[-1]).stat().st_size
            rows.append((name, " ".join(old) if old else "—", b, " ".join(new), a, same, size))
            for f in w.glob("[pst].*"):
                f.unlink()
    wall = time.perf_counter() - start
    lines = ["# `spml predict` on wide outputs: before and after streaming (issue 32, item 4)", "",
             f"- command: `python benchmarks/predict_stream.py {' '.join(sys.argv[1:])}`".rstrip("` ") + "`",
             f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC}",
             f"- machine: {machine_info()} (shared by several jobs: times are noisy)",
             "- device: cpu, one thread (OMP_NUM_THREADS=1)",
             f"- wall time: {wall:.0f} s", "",
             f"Synthetic linear model, D = {D}, L = {L:,} labels; random features. Each cell: the wall time of the "
             "whole `spml predict` process (start-up, loading, scoring, writing) and its peak RSS. 'Same output': "
             "the two files are byte-identical.", "",
             "| case | before (" + args.before + ") | time | peak RSS | after (this code) | time | peak RSS | "
             "same output | output size |", "|---|---|---:|---:|---|---:|---:|:---:|---:|"]
    for name, old, b, new, a, same, size in rows:
        bt = f"{b[0]:.1f} s" if b else "not run"
        bm = f"{b[1]:.0f} MiB" if b else f"≥ {g * L * 12 / 2**30:.1f} GiB"
        shown = f"{size / 2**20:.0f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"
        lines.append(f"| {name} | `{old}` | {bt} | {bm} | `{new}` | {a[0]:.1f} s | {a[1]:.0f} MiB | {same} | "
                     f"{shown} |")
    lines += ["", f"Before, a prediction holds all N x L probabilities in float64 and the logits in float32 (12 bytes "
              f"per entry: {g * L * 12 / 2**30:.1f} GiB at {g:,} x {L:,}, 11.2 GiB at 20,000 x 50,000) before writing "
              "anything, and its label sets sort every row; the old code's large cases are not run here (the "
              "lower bound of their memory is shown). A CSV of 20,000 x 50,000 probabilities would be a billion "
              "values (~9 GB of text): the streaming code refuses it with a message naming `.npy`. Label sets "
              "apply the model's rule (practitioner/labelsets.py) chunk by chunk: their time is that rule's "
              "(a full sort of each row for expected-k today)."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
