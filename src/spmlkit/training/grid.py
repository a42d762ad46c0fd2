"""Train the members of a grid (learning rates × seeds of one method and batch size)
in stacks and, optionally, in parallel worker processes.

Every member's result equals a separate run with its learning rate and seed however
the members are grouped (stacking never mixes members; tested), so the grouping is a
pure speed choice:

``stack``
    members per stacked model.  ``None`` (default): all of them in one model when the
    method supports it.  A stack of ``G`` members turns G small matrix products and
    optimizer steps into one big one — the win on a GPU, where per-operation overhead
    dominates.  On a CPU the stacked parameters and Adam state (4 × G × D × L floats)
    leave the cache for large G, and the step becomes memory-bound: measured on the
    2-core reference CPU (D = 2048, L = 80), one member costs ~0.28 ms of CPU per
    step alone and ~0.33 ms inside a stack of 12 (docs/scale.md), so ``stack=1`` is
    as fast or faster there.
``jobs``
    worker processes training different stacks at the same time (spawned; each with
    ``threads`` torch threads, default ``cpu_count // jobs``).  On a CPU, one process
    per core with one thread each uses the cores without the per-operation threading
    overhead that makes small operations slow.  The features are memory-mapped from
    the bundle by every worker (the page cache holds them once).  On CUDA each worker
    takes one GPU of its own (``cuda:0``, ``cuda:1``, ... in turn, kept for the worker's
    life), so ``jobs`` may not exceed the visible GPUs (and must be 1 when one GPU is
    named, ``cuda:N``): workers sharing a GPU would each measure the same free memory,
    each hold a CUDA context and a copy of the features, and compete for it.  On one
    GPU, ``jobs=1`` with stacking is the fast choice anyway.
"""
from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import torch

from ..config import TrainConfig
from ..data.bundle import Bundle
from ..device import resolve_device
from ..errors import ConfigError
from .result import RunResult
from .prepare import build_run_method
from .run import train


def member_groups(n_members: int, stack: int | None, supports_members: bool = True) -> list[list[int]]:
    """Split member positions ``0..n-1`` into consecutive stacks of at most ``stack``.

    >>> member_groups(5, 2)
    [[0, 1], [2, 3], [4]]
    """
    if not supports_members:
        stack = 1
    stack = n_members if stack is None else max(1, int(stack))
    return [list(range(a, min(a + stack, n_members))) for a in range(0, n_members, stack)]


#: the GPU of this worker process (set once by :func:`_take_device`; None on the CPU)
_WORKER_DEVICE: str | None = None


def _take_device(devices) -> None:
    """Worker initialiser: take one GPU from the queue for the life of the process."""
    global _WORKER_DEVICE
    _WORKER_DEVICE = devices.get()


def gpu_worker_devices(device: str | None, jobs: int, *, share: bool | None = None) -> list[str] | None:
    """The GPU of each of ``jobs`` worker processes (``None`` when the run is not on CUDA or
    runs in one process): worker ``i`` takes visible GPU ``i`` (the ordinals
    ``CUDA_VISIBLE_DEVICES`` leaves, renumbered from 0 by CUDA), so no two workers share
    a GPU.  More workers than GPUs — or several when one GPU is named, ``cuda:N`` — is a
    one-line :class:`ConfigError`, unless ``share`` is True (round-robin; the bench's
    ``--share-gpus``).  ``share=None``: the caller offers no sharing option (the grid
    trainer, whose members on one GPU are stacked into one model instead)."""
    dev = resolve_device(device, option="device")
    if dev.type != "cuda" or jobs <= 1:
        return None

    named = str(device or "auto").strip().lower().startswith("cuda:")
    gpus = [str(dev)] if named else [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if jobs > len(gpus) and not share:
        n = len(gpus)
        what = f"one GPU is named ({dev})" if named else f"this machine has {n} visible GPU{'s' if n != 1 else ''}"
        way = ("or --share-gpus to put several workers on one GPU" if share is not None
               else "on one GPU, --jobs 1: the grid is trained as stacked models")
        raise ConfigError(f"--jobs {jobs} on CUDA (--device {device}): each worker process takes a GPU of its own "
                          f"and {what}; use --jobs {n} or fewer ({way})")
    return [gpus[i % len(gpus)] for i in range(jobs)]


def _run_group(bundle_path: str, config: TrainConfig, lrs, seeds, keep_state: bool) -> list[RunResult]:
    if _WORKER_DEVICE is not None:
        config = config.replace(device=_WORKER_DEVICE)
    return train(Bundle(bundle_path), config, lrs=lrs, seeds=seeds, keep_state=keep_state)


def train_members(bundle, config: TrainConfig, lrs: list[float], seeds: list[int], *, stack: int | None = None,
                  jobs: int = 1, threads: int | None = None, keep_state: bool = False,
                  on_done=None) -> list[RunResult]:
    """Train the members ``zip(lrs, seeds)`` of ``config``; results in member order.

    ``on_done(results_of_one_stack)`` is called as stacks finish (in the parent)."""
    if len(lrs) != len(seeds):
        raise ConfigError("give one seed per learning rate")
    method = build_run_method(config)
    groups = member_groups(len(lrs), stack, method.supports_members)
    jobs = max(1, min(int(jobs), len(groups)))
    if threads is None and jobs > 1:
        threads = max(1, (os.cpu_count() or 1) // jobs)
    cfg = config if threads is None else config.replace(threads=threads)
    out: list[RunResult | None] = [None] * len(lrs)

    def collect(group, res):
        for g, r in zip(group, res):
            out[g] = r
        if on_done is not None:
            on_done(res)

    if jobs == 1:
        for group in groups:
            collect(group, train(bundle, cfg, lrs=[lrs[g] for g in group], seeds=[seeds[g] for g in group],
                                        keep_state=keep_state))
        return out  # type: ignore[return-value]

    path = str(Path(bundle.path))
    gpus = gpu_worker_devices(config.device, jobs)
    ctx = mp.get_context("spawn")
    init = {}
    if gpus is not None:
        queue = ctx.Queue()
        for d in gpus:
            queue.put(d)
        init = {"initializer": _take_device, "initargs": (queue,)}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, **init) as pool:
        futures = {pool.submit(_run_group, path, cfg, [lrs[g] for g in group], [seeds[g] for g in group],
                               keep_state): tuple(group) for group in groups}

        for fut in as_completed(futures):
            collect(list(futures[fut]), fut.result())
    return out  # type: ignore[return-value]
