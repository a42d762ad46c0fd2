"""Speed of the linear protocol against a bare PyTorch loop (issue 7).

    PYTHONPATH=src python benchmarks/linear_speed.py            # the full table (~32 min on a quiet 2-core machine)
    PYTHONPATH=src python benchmarks/linear_speed.py --quick    # a few minutes: fewer steps, one repetition

Prints Markdown tables and writes ``benchmarks/results/linear_speed.md`` (with the
command, date, machine and load average):

1. **one epoch of the linear setting per method** (every method the registry knows
   that runs in the linear setting; stateful ones through their components) at
   batch 8, 16 and 1024 on VOC-sized (5,717 × 2,048, 20 labels) and COCO-sized
   (82,081 × 2,048, 80 labels) synthetic features.  Training rows are the protocol's
   80% training share: 4,574 (VOC) and 65,665 (COCO).  "ours" is
   :func:`spmlkit.training.loop.train_epoch` — exactly the per-epoch training loop of
   ``fit()`` (batch gather, hooks, loss, backward, fused Adam) for one member, timed
   from the second epoch on (the first, untimed, brings stateful methods to a later
   epoch's state: :class:`MethodRun`); "bare" is ``nn.Linear`` + ``BCEWithLogitsLoss`` + ``torch.optim.Adam`` over in-memory
   tensors, the same matrix products on the same shapes (the floor).  Both are
   measured interleaved, in the same process and repetition, so the *ratio* is
   meaningful on a loaded machine even when the absolute times are not.
   ``--max-steps`` caps the steps per measurement; times are then extrapolated to the
   full epoch (column ``steps``).
2. **the full AN grid** on COCO-sized features: 4 learning rates × 3 seeds stacked as one
   model per batch size (8 and 16), one epoch (training + validation scoring + mAP)
   measured per batch size and extrapolated to 25 epochs + the final test/train scoring.
3. **mAP time** for 40,137 × 80 predictions (vectorised, and scikit-learn per class).
4. **method state memory** per scale (the bytes of tensors a method's components hold
   after set-up, e.g. ROLE's estimator table).
5. **peak process memory of ROLE** per storage and scale, each in a fresh process.
"""
from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from spmlkit.io import write_text
from spmlkit.labels import REGIMES, expected_positives, observe
from spmlkit.methods.base import METHODS, get_method_spec
from spmlkit.metrics import average_precision, mean_average_precision
from spmlkit.training.linear import FeatureStore, LinearLearner, num_threads
from spmlkit.training.loop import train_epoch

SCALES = {  # name: (rows in the dataset, features, labels, mean positives per example)
    "voc": (5717, 2048, 20, 1.4),
    "coco": (82081, 2048, 80, 2.9),
}
TRAIN_SHARE = 0.8
GRID_LRS = (1e-2, 1e-3, 1e-4, 1e-5)
GRID_SEEDS = (0, 1, 2)


# ------------------------------------------------------------------------- data
def synthetic(scale: str, seed: int = 0, with_test: bool = False) -> dict:
    n_all, d, L, card = SCALES[scale]
    n_train = int(round(n_all * TRAIN_SHARE))
    n_val = n_all - n_train
    rng = np.random.default_rng(seed)
    out = {"name": scale, "d": d, "L": L}
    sizes = {"train": n_train, "val": n_val}
    if with_test:
        sizes["test"] = 40137 if scale == "coco" else 5823
    freq = rng.dirichlet(np.ones(L)) * card  # label frequencies summing to the cardinality
    for split, n in sizes.items():
        X = rng.standard_normal((n, d), dtype=np.float32)
        Y = rng.random((n, L)) < np.minimum(freq, 0.9)
        Y[~Y.any(1), rng.integers(0, L)] = True
        out[split] = (X, Y)
    return out


def linear_methods() -> list[str]:
    METHODS.discover()  # registers every method

    return sorted(n for n, s in METHODS.items() if s.setting in ("any", "linear"))


# -------------------------------------------------------------------- timings
def bare_epoch(X: torch.Tensor, T: torch.Tensor, batch: int, max_steps: int | None,
               seed: int = 0) -> tuple[float, float]:
    """The floor: nn.Linear + BCE-with-logits + torch.optim.Adam over in-memory tensors."""
    torch.manual_seed(seed)
    n, d = X.shape
    lin = nn.Linear(d, T.shape[1])
    opt = torch.optim.Adam(lin.parameters(), lr=1e-3)
    lossf = nn.BCEWithLogitsLoss()
    w0, c0 = time.perf_counter(), time.process_time()
    perm = torch.randperm(n)
    starts = range(0, n, batch)
    for s in itertools.islice(starts, max_steps):
        idx = perm[s:s + batch]
        loss = lossf(lin(X[idx]), T[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return time.perf_counter() - w0, time.process_time() - c0


def _limit(learner: LinearLearner, max_steps: int | None) -> None:
    if max_steps is not None:
        full = learner.batches
        learner.batches = lambda epoch: itertools.islice(full(epoch), max_steps)


def make_run(method_name: str, data: dict, batch: int, lrs, seeds, params: dict | None = None):
    """A learner + set-up method on the synthetic data, assembled as every run is
    (:func:`spmlkit.training.prepare.prepare_run`: the method, its observations, k, the
    context); the feature stores are built once per data set and shared (read-only) by
    every run on it, so a run costs no copy of the features."""
    from spmlkit.config import TrainConfig
    from spmlkit.data.memory import ArrayBundle
    from spmlkit.training.prepare import prepare_run

    X, Y = data["train"]
    spec = get_method_spec(method_name)
    Z = observe(Y, spec.regime if spec.regime in REGIMES else "single_positive", seed=0)
    if "stores" not in data:
        data["stores"] = {split: FeatureStore(data[split][0]) for split in ("train", "val", "test") if split in data}
    bundle = ArrayBundle(X, Z, **{f"{part}_{split}": data[split][i] for split in ("val", "test") if split in data
                                  for part, i in (("X", 0), ("Y", 1))})
    config = TrainConfig(method=method_name, params=params or {}, batch_size=batch, epochs=25, device="cpu",
                         expected_positives=expected_positives(Y))
    parts = prepare_run(bundle, config)
    learner = LinearLearner(data["stores"], parts.observed, lrs=list(lrs), seeds=list(seeds), batch_size=batch,
                            n_labels=data["L"])
    parts.setup_method(learner.observed, lrs=list(lrs), seeds=list(seeds), epochs=25)
    return learner, parts.method


class MethodRun:
    """One member of a method on the synthetic data, timed epoch by epoch.

    Epoch 1 is a warm-up, not timed: a whole epoch at batch 1024 followed by the method's
    epoch-end hook, so that every stateful method is in the state of a later epoch when
    timing starts — every ROLE estimator row has been updated once (its lazy dense Adam
    then pays the momentum catch-up on every read, which a first epoch never does),
    Large-Loss rejects, per-epoch AP/pseudo-labels exist.  Each :meth:`epoch` then times
    the next epoch's training loop (:func:`spmlkit.training.loop.train_epoch`, exactly
    what ``fit()`` runs per epoch; the epoch-end hooks are not timed, like evaluation)."""

    def __init__(self, method_name: str, data: dict, batch: int):
        self.learner, self.method = make_run(method_name, data, batch, [1e-3], [0])
        self.batch = batch
        self.n_epochs = 0
        self._full = self.learner.batches
        self.learner.batch_size = 1024
        self._run(None)
        self.method.on_epoch_end(self.n_epochs, lambda: self.learner.scores("train"))
        self.learner.batch_size = batch

    def _run(self, max_steps: int | None) -> None:
        self.n_epochs += 1
        self.learner.batches = lambda epoch: itertools.islice(self._full(epoch), max_steps)
        self.method.on_epoch_start(self.n_epochs)
        self.learner.model.train()
        loss_sum, _ = train_epoch(self.learner, self.method, self.n_epochs)
        loss_sum.tolist()  # the epoch-end synchronisation

    def epoch(self, max_steps: int | None) -> tuple[float, float]:
        w0, c0 = time.perf_counter(), time.process_time()
        self._run(max_steps)
        return time.perf_counter() - w0, time.process_time() - c0


def state_bytes(obj) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, dict):
        return sum(state_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(state_bytes(v) for v in obj)
    return 0


# -------------------------------------------------------------------- sections
def section_epochs(args, methods, log) -> list[str]:
    lines = ["## 1. One epoch of the linear setting, per method (one member)", "",
             "Each method's epochs 2, 3, … (epoch 1, untimed, is a warm-up at batch 1024 + the epoch-end hooks, so "
             "stateful methods are timed in a later epoch's state: e.g. every ROLE estimator row has been updated "
             "once, and its lazy dense Adam pays the momentum catch-up a first epoch never does).  "
             "Wall and CPU seconds per epoch (medians over repetitions; extrapolated from `steps` when below the "
             "epoch's steps), samples/s (wall), and the ratio ours / bare loop (median of per-repetition ratios, "
             "each from measurements taken back to back; by wall time, and by CPU time, which a loaded machine "
             "distorts less).", "",
             "| scale | threads | batch | steps | method | wall s/epoch | CPU s/epoch | samples/s | ratio (wall) | "
             "ratio (CPU) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for scale in args.scales:
        data = synthetic(scale)
        X, Y = data["train"]
        Xt, Tt = torch.from_numpy(X), torch.from_numpy(observe(Y, "single_positive", seed=0) == 1).float()
        n = len(X)
        for threads, batch in itertools.product(args.threads, args.batches):
            steps_epoch = -(-n // batch)
            steps = steps_epoch if args.max_steps is None else min(steps_epoch, args.max_steps)
            k = steps_epoch / steps
            times = {m: [] for m in ["bare", *methods]}
            ratios = {m: [] for m in methods}
            runs: dict = {}
            with num_threads(threads):
                bare_epoch(Xt, Tt, batch, min(steps, 50))  # warm-up
                for rep in range(args.reps):
                    order = methods[rep % len(methods):] + methods[:rep % len(methods)]
                    for m in order:
                        tb = [t * k for t in bare_epoch(Xt, Tt, batch, steps)]
                        try:
                            if m not in runs:
                                runs[m] = MethodRun(m, data, batch)
                            to = [t * k for t in runs[m].epoch(steps)]
                        except Exception as exc:  # noqa: BLE001  (report, keep benchmarking the others)
                            log(f"  {m}: skipped ({type(exc).__name__}: {exc})")
                            continue
                        times["bare"].append(tb)
                        times[m].append(to)
                        ratios[m].append((to[0] / tb[0], to[1] / tb[1]))
                        log(f"  {scale} t{threads} b{batch} rep{rep} {m}: {to[0]:.2f}s (cpu {to[1]:.2f}s) vs bare "
                            f"{tb[0]:.2f}s (cpu {tb[1]:.2f}s)")
            for m in ["bare", *methods]:
                if not times[m]:
                    lines.append(f"| {scale} | {threads} | {batch} | | {m} | skipped | | | | |")
                    continue
                wall = statistics.median(t[0] for t in times[m])
                cpu = statistics.median(t[1] for t in times[m])
                if m == "bare":
                    rw = rc = "1.00"
                else:
                    rw = f"{statistics.median(r[0] for r in ratios[m]):.2f}"
                    rc = f"{statistics.median(r[1] for r in ratios[m]):.2f}"
                lines.append(f"| {scale} ({n:,} rows) | {threads} | {batch} | {steps:,}/{steps_epoch:,} | {m} | "
                             f"{wall:.2f} | {cpu:.2f} | {n / wall:,.0f} | {rw} | {rc} |")
    return lines


def grid_train_epoch(data: dict, batch: int, lrs, seeds, steps: int | None) -> tuple[float, float]:
    """(wall, cpu) seconds of one training epoch of a stack, extrapolated from ``steps``."""
    learner, method = make_run("an", data, batch, lrs, seeds)
    steps_epoch = -(-len(data["train"][0]) // batch)
    steps = steps_epoch if steps is None else min(steps_epoch, steps)
    _limit(learner, steps)
    learner.model.train()
    w0, c0 = time.perf_counter(), time.process_time()
    loss_sum, _ = train_epoch(learner, method, 1)
    loss_sum.tolist()
    k = steps_epoch / steps
    return (time.perf_counter() - w0) * k, (time.process_time() - c0) * k


def _parallel_worker(batch, steps, barrier, queue):  # one of the --jobs processes
    torch.set_num_threads(1)
    data = synthetic("coco")
    barrier.wait()
    queue.put(grid_train_epoch(data, batch, [1e-3], [0], steps))


def parallel_train_epoch(jobs: int, batch: int, steps: int | None) -> tuple[float, float]:
    """Wall seconds for ``jobs`` single-member epochs run at the same time in ``jobs``
    processes (1 thread each), and their mean CPU seconds."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(jobs), ctx.Queue()
    procs = [ctx.Process(target=_parallel_worker, args=(batch, steps, barrier, queue)) for _ in range(jobs)]
    for p in procs:
        p.start()
    res = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    return max(r[0] for r in res), statistics.mean(r[1] for r in res)


def section_grid(args, log) -> list[str]:
    data = synthetic("coco", with_test=True)
    X, Y = data["train"]
    Yv = data["val"][1]
    lrs = [lr for lr in GRID_LRS for _ in GRID_SEEDS]
    seeds = [s for _ in GRID_LRS for s in GRID_SEEDS]
    G = len(lrs)
    lines = ["## 2. The full AN grid on COCO-sized features", "",
             f"{len(GRID_LRS)} learning rates × {len(GRID_SEEDS)} seeds = {G} members per batch size (8 and 16), "
             f"{len(X):,} training, {len(Yv):,} validation, {len(data['test'][0]):,} test rows, 25 epochs.  "
             "Ways to train the members (`spmlkit.training.grid.train_members`): one stack of 12 "
             "(`stack=None`), one member at a time (`stack=1`), or `jobs` worker processes of one thread each "
             "training single members at the same time.  One training epoch is measured per batch size "
             "(extrapolated from `steps`); validation (scores + mAP of all 12 members) and the final test and "
             "training-set scoring are measured once on the stack and charged to every way (divided by `jobs` "
             "for the parallel one).  Totals are extrapolated to 25 epochs.", "",
             "| way | threads | batch | steps measured | train wall s/epoch (all 12) | train CPU s/epoch | "
             "val s/epoch | 25 epochs |", "|---|---|---|---|---|---|---|---|"]
    # validation and final scoring, once, on the stack
    learner, _ = make_run("an", data, 8, lrs, seeds)
    learner.model.eval()
    t0 = time.perf_counter()
    [mean_average_precision(Yv, s.numpy()).map for s in learner.scores("val")]
    t_val = time.perf_counter() - t0
    t0 = time.perf_counter()
    for split, Ys in (("test", data["test"][1]), ("train", Y)):
        [mean_average_precision(Ys, s.numpy()).map for s in learner.scores(split)]
    t_final = time.perf_counter() - t0
    del learner
    log(f"  grid: val {t_val:.1f}s per epoch, final scoring {t_final:.1f}s per batch size")
    ways = [("stack of 12", t, 1) for t in args.threads] + [("one member at a time", 1, 1)]
    ways += [(f"{j} processes, one member each", 1, j) for j in args.jobs if j > 1]
    summary = []
    for way, threads, jobs in ways:
        total = 0.0
        for batch in (8, 16):
            steps_epoch = -(-len(X) // batch)
            steps = steps_epoch if args.grid_steps is None else min(steps_epoch, args.grid_steps)
            with num_threads(threads):
                if way.startswith("stack"):
                    wall, cpu = grid_train_epoch(data, batch, lrs, seeds, steps)
                elif jobs == 1:
                    wall, cpu = grid_train_epoch(data, batch, [1e-3], [0], steps)
                    wall, cpu = wall * G, cpu * G
                else:
                    wall, cpu = parallel_train_epoch(jobs, batch, steps)
                    wall, cpu = wall * G / jobs, cpu * G
            val = t_val / jobs
            total += 25 * (wall + val) + t_final / jobs
            log(f"  grid {way} t{threads} b{batch}: train {wall:.1f}s (cpu {cpu:.1f}s) per epoch")
            lines.append(f"| {way} | {threads} | {batch} | {steps:,}/{steps_epoch:,} | {wall:.1f} | {cpu:.1f} | "
                         f"{val:.1f} | {25 * (wall + val) / 60:.1f} min |")
        summary.append(f"| {way} | {threads} | **{total / 60:.1f} min** |")
    lines += ["", f"Whole grid ({len(GRID_LRS) * 2} configurations × {len(GRID_SEEDS)} seeds × 25 epochs, incl. "
              f"validation every epoch and the final scoring, {t_final:.0f} s per batch size):", "",
              "| way | threads | total |", "|---|---|---|", *summary]
    return lines


def section_map(args, log) -> list[str]:
    from sklearn.metrics import average_precision_score

    rng = np.random.default_rng(0)
    n, L = 40137, 80
    Y = rng.random((n, L)) < 0.036
    S = rng.random((n, L)).astype(np.float32)
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        ap = average_precision(Y, S)
        ts.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    sk = np.array([average_precision_score(Y[:, c], S[:, c]) for c in range(L)])
    t_sk = time.perf_counter() - t0
    diff = float(np.max(np.abs(ap - sk)))
    log(f"  mAP: {min(ts) * 1e3:.1f} ms (sklearn {t_sk:.2f} s, max |diff| {diff:.1e})")
    return ["## 3. mAP time, 40,137 × 80 predictions", "",
            "| implementation | seconds | max abs difference of the per-class AP |", "|---|---|---|",
            f"| spmlkit.metrics.average_precision (best of 5; median {statistics.median(ts):.3f}) | "
            f"{min(ts):.3f} | {diff:.1e} |",
            f"| scikit-learn average_precision_score per class | {t_sk:.2f} | 0 |"]


def section_memory(args, methods, log) -> list[str]:
    lines = ["## 4. Method state memory (one member)", "",
             "Bytes of the tensors a method's components hold after set-up (its `state_dict()`), e.g. ROLE's "
             "label estimator.  Peak process memory of ROLE per scale: section 5.", "",
             "| scale | method | state MB |", "|---|---|---|"]
    for scale in args.scales:
        data = synthetic(scale)
        for m in methods:
            try:
                _, method = make_run(m, data, 8, [1e-3], [0])
                mb = state_bytes(method.state_dict()) / 2 ** 20
            except Exception as exc:  # noqa: BLE001
                log(f"  {m}: skipped ({exc})")
                continue
            lines.append(f"| {scale} | {m} | {mb:.1f} |")
    return lines


ROLE_STORAGES = (("float32", {}), ("float16", {"storage": "float16"}), ("memmap", {"storage": "memmap"}),
                 ("factorised r=64", {"storage": "factorised", "rank": 64}),
                 ("factorised r=8", {"storage": "factorised", "rank": 8}))


def _peak_child(spec: str) -> int:
    """Child process of the ROLE peak-memory section: set up ``method[:params-json]`` on a
    synthetic scale, train some steps, print the peak resident memory (VmHWM) and the
    bytes the method's components allocate."""
    method, params, scale, steps = json.loads(spec)
    data = synthetic(scale)
    learner, m = make_run(method, data, 8, [1e-3], [0], params)
    _limit(learner, steps)
    m.on_epoch_start(1)
    learner.model.train()
    loss_sum, _ = train_epoch(learner, m, 1)
    loss_sum.tolist()
    est = next((c for c in m.components if hasattr(c, "nbytes")), None)
    hwm = next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
               if line.startswith("VmHWM"))
    print(json.dumps({"vmhwm_kb": hwm, "estimator_bytes": sum(est.nbytes().values()) if est else 0}))
    return 0


def section_role_memory(args, log) -> list[str]:
    """Peak process memory of ROLE per scale and storage, against AN in the same set-up."""
    lines = ["## 5. Peak memory of ROLE per scale (one member, batch 8, 500 training steps)", "",
             "Each row is a fresh process (peak resident set size, VmHWM): the synthetic features (kept in memory) "
             "plus the model; 'over AN' subtracts the same run with `an`, i.e. what the label estimator costs. "
             "'estimator' is the bytes its storage allocates (table or factors, both Adam moments, step counts; "
             "memmap: on disk, only batch rows in memory).", "",
             "| scale | storage | peak RSS MB | over AN MB | estimator MB (allocated) |", "|---|---|---|---|---|"]
    import subprocess

    for scale in args.scales:
        base = None
        for label, method, params in [("an (baseline)", "an", {})] + [(n, "role", p) for n, p in ROLE_STORAGES]:
            spec = json.dumps([method, params, scale, 500])
            r = subprocess.run([sys.executable, __file__, "--_peak", spec], capture_output=True, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
            if r.returncode != 0:
                log(f"  peak {scale} {label}: failed: {r.stderr.strip().splitlines()[-1:]}")
                continue
            res = json.loads(r.stdout.strip().splitlines()[-1])
            mb = res["vmhwm_kb"] / 1024
            if base is None:
                base = mb
            lines.append(f"| {scale} | {label} | {mb:.0f} | {mb - base:+.0f} | {res['estimator_bytes'] / 2 ** 20:.1f} |")
            log(f"  peak {scale} {label}: {mb:.0f} MB")
    return lines


# ------------------------------------------------------------------------- main
def machine() -> str:
    cpu = platform.processor() or ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    env = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS") if k in os.environ}
    return (f"{platform.node()}: {cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}, torch {torch.__version__} (default threads "
            f"{torch.get_num_threads()}), numpy {np.__version__}; env {env or '{}'}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scales", default="voc,coco")
    p.add_argument("--batches", default="8,16,1024")
    p.add_argument("--methods", default="all", help="comma-separated, or 'all' registered linear methods")
    p.add_argument("--threads", default="1,2", help="torch thread counts to measure (comma-separated)")
    p.add_argument("--jobs", default="2", help="worker-process counts for the grid section (comma-separated)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--max-steps", type=int, default=3000, help="steps per measurement (0: whole epochs)")
    p.add_argument("--grid-steps", type=int, default=2000, help="steps of the grid epoch measured (0: whole)")
    p.add_argument("--sections", default="epochs,grid,map,memory,role_memory")
    p.add_argument("--_peak", help=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true", help="1 repetition, 1 thread, 600 steps")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "linear_speed.md"))
    args = p.parse_args(argv)
    if args._peak:
        return _peak_child(args._peak)
    if args.quick:
        args.reps, args.threads, args.max_steps, args.grid_steps = 1, "1", 600, 400
    args.scales = args.scales.split(",")
    args.batches = [int(b) for b in args.batches.split(",")]
    args.threads = [int(t) for t in args.threads.split(",")]
    args.jobs = [int(j) for j in args.jobs.split(",")]
    args.max_steps = args.max_steps or None
    args.grid_steps = args.grid_steps or None
    methods = linear_methods() if args.methods == "all" else args.methods.split(",")
    sections = args.sections.split(",")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    started = dt.datetime.now(dt.timezone.utc)
    load0 = os.getloadavg()
    out = ["# Linear protocol speed (issue 7)", "",
           f"Command: `PYTHONPATH=src python benchmarks/linear_speed.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
           f"Date: {started.isoformat(timespec='seconds')}", f"Machine: {machine()}",
           "Device: cpu (the synthetic stacks and the bare loop run on the CPU, whatever GPU the machine has)",
           f"Methods (registered, linear setting): {', '.join(methods)}", ""]
    body = []
    if "epochs" in sections:
        body += section_epochs(args, methods, log) + [""]
    if "grid" in sections:
        body += section_grid(args, log) + [""]
    if "map" in sections:
        body += section_map(args, log) + [""]
    if "memory" in sections:
        body += section_memory(args, methods, log) + [""]
    if "role_memory" in sections:
        body += section_role_memory(args, log) + [""]
    load1 = os.getloadavg()
    elapsed = (dt.datetime.now(dt.timezone.utc) - started).total_seconds()
    out.append(f"Load average (1/5/15 min) at start {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}, at end "
               f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f}; the benchmark took {elapsed / 60:.1f} min.  With a load "
               f"above the number of cores, absolute times are inflated; compare the ratios.")
    out.append("")
    text = "\n".join(out + body)
    print(text)
    write_text(args.out, text)
    print(f"\nwritten to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
