"""The life of a bench worker process: it trains groups for a bench driver (the local
``--jobs`` pool's processes, a Ray task) and ends when the driver dies.

A worker trains a group exactly as the driver would (:meth:`.runner.BenchRunner.run_group`,
in the results folder, so a killed worker's group resumes from its checkpoint) and hands
the group's record back; the driver writes the tables."""
from __future__ import annotations

import ctypes
import dataclasses
import os
import signal
import socket
import threading
import time
from pathlib import Path

import torch

from ...data.bundle import Bundle
from ...errors import ConfigError
from ... import ownership
from ...io import read_json
from ...ownership import write_json
from ...training.grid import gpu_worker_devices
from .data import TrainSubset, subsample_rows
from .plan import Group
from .runner import BenchRunner
from .spec import BenchSpec

#: the session token a Ray driver writes under ``work/``: a worker that reads it sees the results folder
RAY_SESSION = "ray-session.json"


def worker_gpus(device: str | None, jobs: int, *, share: bool = False) -> list[str] | None:
    """The device of each of ``jobs`` bench worker processes (None off CUDA or in one
    process): the grid trainer's one-GPU-per-worker rule
    (:func:`spmlkit.training.grid.gpu_worker_devices`) with the bench's ``--share-gpus``."""
    return gpu_worker_devices(device, jobs, share=bool(share))


def _die_with_parent(parent: int) -> None:
    """Make a worker process end when the bench that started it dies (even by SIGKILL):
    the kernel signals it (Linux ``PR_SET_PDEATHSIG``), and, on any system, a daemon
    thread notices that the parent is gone and exits.  Without this the workers of a
    killed bench went on training every remaining group unattended, then blocked.
    ``parent`` is the bench's pid, passed in: a worker that starts after the bench died
    has already been re-parented, so its own ``getppid()`` would not tell."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux
        pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="spml-parent-watch", daemon=True).start()


#: the GPU of this bench worker process (``--jobs N --device cuda``: one per worker)
_WORKER_DEVICE: str | None = None


def init_worker(threads: int, parent: int, devices=None) -> None:
    """A local pool worker's start: it dies with the bench, prints no progress, takes its
    GPU (one per worker, for the worker's life) and trains on ``threads`` torch threads."""
    global _WORKER_DEVICE
    _die_with_parent(parent)
    os.environ["SPML_NO_PROGRESS"] = "1"
    if devices is not None:
        _WORKER_DEVICE = devices.get()

    torch.set_num_threads(max(1, int(threads)))


def _group_bundle(spec: BenchSpec, g: Group, bundle_path: str):
    bundle = Bundle(bundle_path)
    if g.fraction < 1.0:
        bundle = TrainSubset(bundle, subsample_rows(bundle.size("train"), g.fraction, spec.subsample_seed))
    return bundle


def run_group_in_worker(spec: BenchSpec, out: str, g: Group, bundle_path: str) -> dict:
    """One group in a local pool worker (:class:`.executors.LocalPool`)."""
    if _WORKER_DEVICE is not None:  # this worker's own GPU (the device is not part of a group's hash)
        spec = dataclasses.replace(spec, config={**spec.config, "device": _WORKER_DEVICE})
        g = dataclasses.replace(g, config=g.config.replace(device=_WORKER_DEVICE))
    runner = BenchRunner(spec, out, log=lambda m: None, progress=False, figures=False)
    return runner.run_group(g, _group_bundle(spec, g, bundle_path), None)


def run_group_in_ray(spec: BenchSpec, out: str, g: Group, bundle_path: str, session: str, threads: int) -> dict:
    """One group in a Ray worker (:class:`.executors.RayExecutor`): trained in the results
    folder when this worker sees it (so a retried group resumes from its checkpoint),
    otherwise in a temporary folder; returns the group's record (what
    ``groups/<hash>.json`` holds) with where it ran under ``worker``."""
    os.environ["SPML_NO_PROGRESS"] = "1"

    torch.set_num_threads(max(1, int(threads)))
    marker = Path(out) / "work" / RAY_SESSION
    try:
        shared = read_json(marker).get("id") == session
    except Exception:  # noqa: BLE001 - not visible from this node: train in a temporary folder
        shared = False
    folder = ownership.folder(out, "bench") if shared else ownership.temporary_folder("spml-ray-", "bench")
    try:
        if shared:  # who trains it, for the record (and for a test that kills this worker)
            write_json(folder / "work" / g.hash / "worker.json", {"pid": os.getpid(), "host": socket.gethostname()})
        if not Path(bundle_path, "meta.json").exists():
            raise ConfigError(f"{bundle_path}: bundle not found on Ray node {socket.gethostname()}; put the bundles "
                              "on a filesystem every node sees (the same path)")
        runner = BenchRunner(spec, folder, log=lambda m: None, progress=False, figures=False)
        rec = runner.run_group(g, _group_bundle(spec, g, bundle_path), None)
    finally:
        if not shared:
            ownership.discard(folder)
    try:
        import ray  # lazy: optional dependency

        gpus = [str(i) for i in ray.get_gpu_ids()]
    except Exception:  # noqa: BLE001
        gpus = []
    return {**rec, "worker": {"executor": "ray", "host": socket.gethostname(), "pid": os.getpid(), "gpus": gpus,
                              "device": str((spec.config or {}).get("device") or "auto")}}
