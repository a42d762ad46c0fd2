"""The papers' model-selection protocol (Cole et al. §6.1, Zhou et al. §4.1).

For a method: train every (learning rate, batch size) of the grid with every seed;
pick the configuration with the best *mean* validation score over seeds; report the
test mAP (at each run's best-validation epoch) as mean ± std over the seeds of that
configuration.  Learning rates × seeds of one batch size train as one stacked model
when the method allows it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..config import DEFAULT_BATCH_SIZES, DEFAULT_LRS, TrainConfig  # the grid constants live in torch-free config
from ..data.bundle import Bundle
from ..training.grid import train_members
from ..training.result import RunResult


def run_grid(bundle: Bundle, base: TrainConfig, *, lrs=DEFAULT_LRS, batch_sizes=DEFAULT_BATCH_SIZES,
             seeds=(0, 1, 2), on_done=None) -> list[RunResult]:
    """Train the grid; ``on_done(results_of_one_stack)`` is called after each stacked group.

    One batch size at a time, its learning rates × seeds through
    :func:`spmlkit.training.grid.train_members` (one stacked model when the method
    allows it), so this protocol and ``spml bench`` train members the same way."""
    out: list[RunResult] = []
    for bs in batch_sizes:
        members = [(lr, s) for lr in lrs for s in seeds]
        out.extend(train_members(bundle, base.replace(batch_size=bs), [m[0] for m in members],
                                 [m[1] for m in members], on_done=on_done))
    return out


@dataclass
class Selection:
    lr: float
    batch_size: int
    val_mean: float
    test_mean: float
    test_std: float
    train_mean: float | None
    n_seeds: int
    runs: list
    train_std: float | None = None
    n_configs: int = 0  # configurations that competed (with at least one finite validation score)


def _finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def select_best(results: list, *, keys: tuple[str, ...] = ("lr", "batch_size")) -> Selection:
    """The configuration (lr, batch size) with the best mean validation score over seeds.

    ``results`` are :class:`RunResult` objects or dicts with the same fields.

    * A configuration's score is the mean of its runs' finite validation scores (NaN
      runs, e.g. diverged ones, are left out of the mean); a configuration without any
      finite score cannot be selected.
    * Configurations may have different numbers of seeds (an unfinished grid); each is
      judged on the seeds it has.  The number of seeds of the selected one is reported.
    * Ties (equal mean validation score) go to the configuration with more seeds, then
      to the one seen first in ``results`` — callers that need a result independent of
      the order in which runs finished sort ``results`` first (``spml bench`` does).
    * Test and label-recovery scores are mean ± std (population std over seeds,
      ddof=0) of the selected configuration's runs with a finite score.

    Raises ``ValueError`` when no configuration has a finite validation score.
    """
    get = (lambda r, k: r[k]) if results and isinstance(results[0], dict) else getattr
    groups: dict[tuple, list] = {}
    for r in results:
        groups.setdefault(tuple(get(r, k) for k in keys), []).append(r)
    best_key, best_rank = None, None
    n_configs = 0
    for key, runs in groups.items():
        vals = _finite(get(r, "val_score") for r in runs)
        if not vals:
            continue
        n_configs += 1
        rank = (float(np.mean(vals)), len(runs))
        if best_rank is None or rank > best_rank:
            best_key, best_rank = key, rank
    if best_key is None:
        raise ValueError("no results to select from" if not results else
                         "no configuration has a finite validation score")
    runs = groups[best_key]
    tests = _finite(get(r, "test_map") for r in runs)
    trains = _finite(get(r, "train_map") for r in runs)
    kv = dict(zip(keys, best_key))
    return Selection(lr=kv.get("lr"), batch_size=kv.get("batch_size"), val_mean=best_rank[0],
                     test_mean=float(np.mean(tests)) if tests else math.nan,
                     test_std=float(np.std(tests)) if tests else math.nan,
                     train_mean=float(np.mean(trains)) if trains else None,
                     train_std=float(np.std(trains)) if trains else None,
                     n_seeds=len(runs), runs=runs, n_configs=n_configs)
