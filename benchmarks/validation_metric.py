"""The streamed validation metric, before and after its counting pass was inverted (issue 43, item 1).

``stream_rank_counts`` (``spmlkit.metrics``) is the metric every epoch's validation runs when
the validation scores are too large to hold.  Before (``--before``, default 4055305), its
second pass searched **all** positives' thresholds into every row chunk: O(nnz × chunks),
quadratic in N.  After (this checkout), the thresholds are sorted once per member and each
chunk's entries are searched into them: O(N × L × log nnz).

Synthetic validation split: N rows, L labels, one positive per row (a uniform label), scores
of a random linear model (D = 64 features, float32 logits) computed chunk by chunk in rows of
``2**21 / L`` (209 rows at L = 10,000) exactly as a :class:`ScoreView` does; the chunk
producer runs in both passes and its time is included in both columns (and shown alone).
Each cell runs in its own process (``PYTHONPATH`` = the old or the new ``src``), one thread;
a cell past ``--cap`` seconds of CPU time is stopped and reported as such.  'Same' compares the integer
counts (a hash of ``ge``/``gt``) and the mean AP of the two codes.

    OMP_NUM_THREADS=1 python benchmarks/validation_metric.py   # writes benchmarks/results/validation_metric.md
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from snapshot import snapshot_src  # (benchmarks/snapshot.py: this script's folder is on sys.path)

ROOT = Path(__file__).resolve().parents[1]

CELL = r'''
import hashlib, json, sys, time
import numpy as np
n, L, D, what = int(sys.argv[1]), int(sys.argv[2]), 64, sys.argv[3]
rng = np.random.default_rng(0)
W = (rng.normal(size=(D, L)) / 8).astype(np.float32)
X = rng.normal(size=(n, D)).astype(np.float32)
labels = rng.integers(0, L, n)
rows = max(1, 2 ** 21 // L)
def chunks():
    for s in range(0, n, rows):
        yield s, X[s:s + rows] @ W
from spmlkit.metrics import average_precision_from_counts, stream_rank_counts
from spmlkit.sparse_labels import SparseLabels
t0, c0 = time.perf_counter(), time.process_time()
if what == "produce":
    for _ in range(2):
        for _s, _b in chunks():
            pass
    print(json.dumps({"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
    raise SystemExit(0)
Y = SparseLabels.single(labels, L)
rc = stream_rank_counts(Y, chunks)
sec, cpu = time.perf_counter() - t0, time.process_time() - c0
ap = average_precision_from_counts(rc)[0]
h = hashlib.sha256(rc.ge.tobytes() + rc.gt.tobytes() + rc.label.tobytes()).hexdigest()[:16]
print(json.dumps({"seconds": sec, "cpu": cpu, "hash": h, "map": float(np.nanmean(ap) * 100)}))
'''


def cell(src: Path | None, n: int, L: int, what: str, cap: float) -> dict:
    """One measurement in its own process, stopped after ``cap`` seconds of CPU time
    (``RLIMIT_CPU``: on a shared machine wall time depends on the other jobs), or of
    10 x ``cap`` wall time."""
    import resource

    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if src is not None:
        env["PYTHONPATH"] = str(src)

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (int(cap), int(cap) + 5))

    try:
        p = subprocess.run([sys.executable, "-c", CELL, str(n), str(L), what], env=env, capture_output=True,
                           text=True, timeout=10 * cap, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        p = None
    if p is None or p.returncode in (-24, -9, 152, 137):  # SIGXCPU / SIGKILL: the CPU cap
        print(f"  {what} {n:,} x {L:,}: stopped at the {cap:.0f} s cap", flush=True)
        return {"capped": cap}
    if p.returncode != 0:
        raise SystemExit(f"cell {what} {n} x {L} failed: {p.stderr.strip()[-500:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"  {what} {n:,} x {L:,}: {out}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="4055305", help="git revision of the code before the change")
    ap.add_argument("--rows", default="20000,200000", help="validation rows N, comma-separated")
    ap.add_argument("--labels", type=int, default=10_000, help="labels L")
    ap.add_argument("--cap", type=float, default=300.0, help="CPU seconds after which a cell is stopped")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "validation_metric.md"))
    args = ap.parse_args()
    from spmlkit.experiments.machine import machine_info

    Ns, L = [int(v) for v in args.rows.split(",")], args.labels
    start, load0 = time.perf_counter(), os.getloadavg()
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        w = Path(tmp)
        snapshot_src(args.before, w)  # (w / "before" / "src": the code before the change)
        for n in Ns:
            res[n] = {"produce": cell(None, n, L, "produce", args.cap),
                      "before": cell(w / "before" / "src", n, L, "metric", args.cap),
                      "after": cell(ROOT / "src", n, L, "metric", args.cap)}
    wall, load1 = time.perf_counter() - start, os.getloadavg()

    def sec(d):
        if "capped" in d:
            return f"> {d['capped']:.0f} s CPU (stopped)"
        return f"{d['cpu']:.1f} s ({d['seconds']:.1f} s wall)"

    lines = ["# Streamed validation metric: before and after inverting its search (issue 43, item 1)", "",
             f"- command: `python benchmarks/validation_metric.py {' '.join(sys.argv[1:])}`".rstrip("` ") + "`",
             f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC}",
             f"- machine: {machine_info()} (shared by several jobs: times are noisy)",
             f"- load average (1, 5, 15 min): {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} at the start, "
             f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} at the end",
             "- device: cpu, one thread (OMP_NUM_THREADS=1)",
             f"- wall time: {wall:.0f} s", "",
             f"`stream_rank_counts` on N synthetic validation rows x L = {L:,} labels, one positive per row, "
             f"scores of a random linear model in chunks of {max(1, 2 ** 21 // L)} rows. Each time includes the "
             "chunk producer's two passes ('scores alone'). Cells: CPU time of the process (wall time in brackets; the "
             "machine is shared, so wall times carry other jobs' load). 'Same': identical integer counts and mAP.", "",
             "Both codes count by direct comparison (rows x positives) while the positives are at most 8 x L, and "
             "by sorting otherwise (before: every positive searched into every chunk's sorted keys; after: every "
             "entry searched into the positives sorted once); 'pass' names it.", "",
             f"| N | pass | scores alone | before ({args.before}) | after (this code) | same | mAP |",
             "|---:|---|---:|---:|---:|:---:|---:|"]
    for n in Ns:
        r = res[n]
        same = "—" if "capped" in r["before"] or "capped" in r["after"] else (
            "yes" if (r["before"]["hash"], r["before"]["map"]) == (r["after"]["hash"], r["after"]["map"]) else "NO")
        m = r["after"].get("map")
        lines.append(f"| {n:,} | {'direct counting' if n <= 8 * L else 'sort'} | {sec(r['produce'])} | {sec(r['before'])} | {sec(r['after'])} | {same} | "
                     f"{'—' if m is None else f'{m:.4f}'} |")
    if len(Ns) >= 2:
        a, b = Ns[0], Ns[-1]
        for name in ("before", "after"):
            x, y = res[a][name], res[b][name]
            if "capped" not in x and "capped" not in y:
                lines.append(f"\n{name}: CPU time grows {y['cpu'] / max(x['cpu'], 1e-9):.1f}x (wall "
                             f"{y['seconds'] / max(x['seconds'], 1e-9):.1f}x) when N grows {b / a:.0f}x "
                             f"({a:,} -> {b:,}).")
            elif "capped" not in x:
                lines.append(f"\n{name}: CPU time grows more than {y['capped'] / max(x['cpu'], 1e-9):.1f}x when N grows "
                             f"{b / a:.0f}x ({a:,} -> {b:,}; the larger cell was stopped at the cap).")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
