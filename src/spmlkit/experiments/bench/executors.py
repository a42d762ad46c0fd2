"""Who trains a bench's groups: every way is an executor behind one interface.

``spml bench`` splits a grid into *groups* (:mod:`.plan`): each group is deterministic
on its own and is finished the moment ``groups/<hash>.json`` is written, so who trains a
group and where never changes the table.  An :class:`Executor` has ``connect()``
(before anything is written: a one-line error if it cannot run), ``run(runner)`` (the
bench, returning its summary) and ``close()``.  Those that write the tables share the
runner's lifecycle (:meth:`.runner.BenchRunner.run_groups`) and differ only in
``train(runner, pending, ctx, bar)``:

:class:`Sequential`
    one group after another in this process (the bar moves per epoch);
:class:`LocalPool` (``--jobs N``)
    ``N`` spawned worker processes (:mod:`.workers`), ``threads`` torch threads each, one
    GPU per worker on CUDA; identical results (each group is deterministic on its own);
``--shard K/N`` (:class:`Shard`)
    scheduler arrays without any engine (a Slurm job array, ``N`` separate commands):
    process ``K`` trains only the groups at positions ``K-1, K-1+N, ...`` of the
    bench's fixed group order into a shared results folder and writes no table; a
    final ``spml bench`` with the same options (or ``--table-only``) assembles the
    tables.  Concurrent shards share the folder (a *shared* lock on it, so a full
    bench, which takes it exclusively, is refused while shards run and the other way
    round), prepare datasets one at a time (an exclusive lock around preparation) and
    take an exclusive lock per group (``work/<hash>/.spml.lock``), so two processes
    given the same shard never train one group twice.  The first shard records the
    grid in ``shard-plan.json``; a shard whose options differ is refused before it
    writes anything (its ``K/N`` would split another grid).  Its ``run`` is its own
    lifecycle (a shared lock, no tables) and returns the shard's summary.
``--executor ray`` (:class:`RayExecutor`)
    every pending group is one Ray task with its resource request (CPUs = torch
    threads, one GPU with ``--device cuda``, memory estimated from the bundle), on a
    local cluster (``ray.init``) or an existing one (``--address``).  Finished groups
    stream back to the driver, which writes them into the results folder and
    refreshes the tables, exactly as the local bench does; a killed driver resumes
    the same way (finished groups are skipped).  A task whose worker dies (killed,
    node lost) is retried by Ray (``max_retries``); where the worker sees the results
    folder (one machine, or a shared filesystem: the session token written under
    ``work/`` tells) it checkpoints every epoch under ``work/<hash>/`` as the local
    bench does, so a retried group resumes from its last epoch.  Ray is imported only
    here and only when asked for.
``--table-only`` (:class:`TableOnly`)
    trains nothing: the tables from the groups already finished (e.g. by shards).

Ray: Moritz et al., "Ray: A Distributed Framework for Emerging AI Applications",
OSDI 2018 (tasks, resource requests, lineage-based re-execution of failed tasks).
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import json
import multiprocessing as mp
import os
import socket
import sys
import tempfile
import uuid
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ...errors import ConfigError, SpmlError
from ... import ownership
from ...io import FolderLock, dumps_json, read_json
from ...ownership import write_json
from .data import resolve_datasets
from .plan import canonical, plan_groups
from .runner import BenchRunner, bench_inputs, remove_empty_tree
from .workers import RAY_SESSION, init_worker, run_group_in_ray, run_group_in_worker, worker_gpus

SHARD_PLAN = "shard-plan.json"
SHARD_PREPARE_LOCK = ".spml-shards.lock"


# ------------------------------------------------------------------------ the interface
class Executor:
    """How a bench's pending groups are trained (see the module docstring).  The default
    ``run`` is the bench that writes its tables (:meth:`.runner.BenchRunner.run_groups`)
    with this executor's :meth:`train`."""

    def connect(self) -> None:
        """Reach what it trains on; a one-line :class:`ConfigError` before anything is written."""

    def close(self) -> None:
        pass

    def run(self, runner: BenchRunner) -> dict:
        return runner.run_groups(self.train)

    def train(self, runner: BenchRunner, pending: list, ctx: dict, bar) -> None:
        """Train ``pending`` groups, telling ``runner.group_done(g, record, ctx)`` of each as it finishes."""
        raise NotImplementedError


class Sequential(Executor):
    """One group after another in this process."""

    def train(self, runner, pending, ctx, bar) -> None:
        subsets: dict = {}
        for i, g in enumerate(pending):
            bundle = runner.bundle_for(g, ctx["by_label"], subsets)
            extra = f" frac {g.fraction:g}" if g.fraction < 1 else (
                f" hide {g.hide_prob:g}" if g.hide_prob is not None else "")
            bar.set_postfix_str(f"group {i + 1}/{len(pending)} {g.dataset} {g.method}{extra} bs {g.batch_size}")
            runner.group_done(g, runner.run_group(g, bundle, bar), ctx)


class LocalPool(Executor):
    """``jobs`` worker processes (spawned, ``threads`` torch threads each; on CUDA one GPU
    per worker, taken for the worker's life, ``share_gpus``: more workers than GPUs,
    round-robin); results identical to a sequential bench.  The bar advances as groups
    finish.  One pending group (or ``jobs`` 1) trains in this process."""

    def __init__(self, jobs: int, *, threads: int | None = None, share_gpus: bool = False):
        self.jobs, self.threads, self.share_gpus = int(jobs), threads, bool(share_gpus)

    def train(self, runner, pending, ctx, bar) -> None:
        if self.jobs <= 1 or len(pending) <= 1:
            return Sequential().train(runner, pending, ctx, bar)
        paths = {g.hash: str(runner.draw_bundle(g, ctx["by_label"]).path) for g in pending}
        mp_ctx = mp.get_context("spawn")
        gpus = worker_gpus(runner.spec.config.get("device"), self.jobs, share=self.share_gpus)
        devices = None
        if gpus is not None:  # one GPU per worker, taken for the worker's life
            devices = mp_ctx.Queue()
            for d in gpus:
                devices.put(d)
        with cf.ProcessPoolExecutor(max_workers=self.jobs, mp_context=mp_ctx, initializer=init_worker,
                                    initargs=(self.threads or 1, os.getpid(), devices)) as pool:
            futures = {pool.submit(run_group_in_worker, runner.spec, str(runner.out), g, paths[g.hash]): g
                       for g in pending}
            for done, fut in enumerate(cf.as_completed(futures), 1):
                g = futures[fut]
                record = fut.result()
                bar.set_postfix_str(f"{done}/{len(pending)} groups done, last {g.dataset} {g.method} "
                                    f"bs {g.batch_size}")
                bar.update(g.steps)
                runner.group_done(g, record, ctx)


# ----------------------------------------------------------------------- table only
class TableOnly(Executor):
    """An executor that trains nothing: ``spml bench --table-only`` writes the tables
    from the groups already finished (a grid trained by shards, or the part of one
    finished so far)."""

    def train(self, runner, pending, ctx, bar) -> None:
        if pending:
            runner.log(f"bench --table-only: {len(pending)} of {len(ctx['groups'])} group(s) not finished; their "
                       "cells are left out of the tables")


# ------------------------------------------------------------------------------ ray
def _ray():
    try:
        import ray  # lazy: optional dependency
    except ImportError:
        raise ConfigError("--executor ray needs Ray, which is not installed: pip install 'spmlkit[ray]'") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """``host:port`` (also ``ray://host:port``) -> ``(host, port)``; None for ``auto``."""
    a = address.strip()
    if a in ("auto", "local"):
        return None
    if "://" in a:
        a = a.split("://", 1)[1]
    host, sep, port = a.rpartition(":")
    try:
        if not sep or not host:
            raise ValueError
        return host.strip("[]"), int(port)
    except ValueError:
        raise ConfigError(f"--address {address}: expected HOST:PORT (the head node's GCS address, e.g. "
                          "10.0.0.1:6379), ray://HOST:PORT or auto") from None


def group_resources(spec, g, bundle, threads: int) -> dict:
    """The Ray resource request of one group: ``threads`` CPUs, one GPU when the bench's
    device is CUDA, and memory estimated as the bundle's feature files (train, val, test)
    plus the method's per-member state (16 bytes per member × training example × label,
    an upper bound of the stacked weights' and losses' bookkeeping) plus 256 MiB."""
    device = str((spec.config or {}).get("device") or "")
    feats = 0
    root = Path(getattr(bundle, "path", "."))
    fs = (spec.config or {}).get("feature_set")
    for split in ("train", "val", "test"):
        f = root / "features" / fs / f"{split}.npy" if fs else root / split / "X.npy"
        if f.exists():
            feats += f.stat().st_size
    n_labels = len(getattr(bundle, "meta", {}).get("label_names", []) or []) or 1
    memory = feats + 16 * g.n_members * max(g.n_train, 1) * n_labels + (256 << 20)
    return {"num_cpus": int(threads), "num_gpus": 1 if device.startswith("cuda") else 0, "memory": int(memory)}


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 goes to a discarded temporary file (C++ libraries write there
    directly, past ``sys.stderr``)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


class RayExecutor(Executor):
    """Trains a bench's pending groups as Ray tasks (see the module docstring).

    ``address``: an existing cluster (``HOST:PORT``, ``ray://HOST:PORT`` or ``auto``);
    None: the Ray instance this process already initialised, else a new local one with
    ``num_cpus`` CPUs (default: every core), no dashboard.  ``threads``: torch threads
    (= CPUs requested) per group.  ``max_retries``: re-executions of a group whose
    worker died."""

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None, threads: int | None = None,
                 max_retries: int = 3, connect_timeout: float = 5.0):
        self.address = address
        self.num_cpus = num_cpus
        self.threads = max(1, int(threads or 1))
        self.max_retries = int(max_retries)
        self.connect_timeout = float(connect_timeout)
        self._started = False
        self.ray = None

    def connect(self) -> None:
        """Import Ray and reach the cluster: every failure is a one-line
        :class:`ConfigError`, raised before the bench writes anything."""
        ray = _ray()
        self.ray = ray
        if ray.is_initialized() and self.address is None:
            return
        if self.address is not None:
            hp = _host_port(self.address)
            if hp is not None:
                try:
                    socket.create_connection(hp, timeout=self.connect_timeout).close()
                except OSError as exc:
                    raise ConfigError(f"--address {self.address}: no Ray cluster reachable there ({exc}); start one "
                                      "with 'ray start --head' or check the address") from None
        kw = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if self.address is None:
            kw["num_cpus"] = int(self.num_cpus or os.cpu_count() or 1)
        try:
            # connecting to an address, Ray's C++ client logs every retry on stderr; starting a local
            # cluster, Ray 2.5x says "Token authentication is enabled for this Ray cluster ..." on every
            # bench: the outcome is one line either way (an exception below)
            with _quiet_stderr():
                ray.init(address=self.address, **kw)
        except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ... : one line
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            where = f"reach a Ray cluster at {self.address}" if self.address else "start a local Ray cluster"
            raise ConfigError(f"--executor ray: could not {where} ({msg})") from None
        self._started = True

    def close(self) -> None:
        if self._started and self.ray is not None:
            self.ray.shutdown()
            self._started = False

    def train(self, runner, pending, ctx, bar) -> None:
        if not pending:
            return
        ray = self.ray
        session = uuid.uuid4().hex
        available = ray.cluster_resources()
        task = ray.remote(run_group_in_ray)
        requests = []
        for g in pending:  # every request checked against the cluster before any task is submitted
            bundle = runner.draw_bundle(g, ctx["by_label"])
            res = group_resources(runner.spec, g, bundle, self.threads)
            for name, key in (("num_cpus", "CPU"), ("num_gpus", "GPU"), ("memory", "memory")):
                if res[name] and res[name] > available.get(key, 0):
                    raise ConfigError(f"group {g.dataset} {g.method} bs {g.batch_size} needs {name}={res[name]} but "
                                      f"the Ray cluster has {available.get(key, 0):g} {key}")
            requests.append((g, bundle, res))
        ownership.folder(runner.out, "bench")  # (the bench's folder: claimed by its run, checked here)
        write_json(runner.out / "work" / RAY_SESSION, {"id": session, "driver_pid": os.getpid()})
        refs = {}
        for g, bundle, res in requests:
            ref = task.options(**res, max_retries=self.max_retries, retry_exceptions=False,
                               name=f"spml {g.dataset} {g.method} bs {g.batch_size}").remote(
                runner.spec, str(runner.out), g, str(bundle.path), session, self.threads)
            refs[ref] = g
        try:
            remaining = list(refs)
            while remaining:
                done, remaining = ray.wait(remaining, num_returns=1)
                g = refs[done[0]]
                try:
                    rec = ray.get(done[0])
                except ray.exceptions.RayTaskError as exc:  # the group's own error, as the local bench raises it
                    cause = getattr(exc, "cause", None)
                    raise (cause if isinstance(cause, BaseException) else exc) from None
                except ray.exceptions.RayError as exc:  # its worker died more than max_retries times, node lost...
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    raise SpmlError(f"group {g.dataset} {g.method} bs {g.batch_size} failed on the Ray cluster after "
                                    f"{self.max_retries} retries ({type(exc).__name__}: {first}); the finished groups "
                                    f"are kept in {runner.out}: rerun the command to resume") from None
                # (the record keeps where it ran under "worker"; its runs are what a local bench writes)
                rec = json.loads(dumps_json(rec))
                path = runner.group_path(g)
                if not path.exists() or read_json(path) != rec:
                    write_json(path, rec)
                with contextlib.suppress(OSError):
                    ownership.remove(runner.out / "work" / g.hash)
                bar.update(g.steps)
                bar.set_postfix_str(f"done {g.dataset} {g.method} bs {g.batch_size}")
                runner.group_done(g, rec, ctx)
        finally:
            for ref in refs:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            ownership.remove(runner.out / "work" / RAY_SESSION)


# --------------------------------------------------------------------------- shards
def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``1 <= K <= N`` (one-line :class:`ConfigError` otherwise)."""
    k, sep, n = str(text).partition("/")
    try:
        if not sep:
            raise ValueError
        k_i, n_i = int(k), int(n)
    except ValueError:
        raise ConfigError(f"--shard {text}: expected K/N, e.g. --shard 1/4 (shard K of N, K from 1 to N)") from None
    if n_i < 1 or not 1 <= k_i <= n_i:
        raise ConfigError(f"--shard {text}: K must be between 1 and N (N >= 1), got K={k_i}, N={n_i}")
    return k_i, n_i


def shard_groups(groups: list, k: int, n: int) -> list:
    """Shard ``k`` of ``n``'s groups: positions ``k-1, k-1+n, ...`` of the bench's fixed
    group order (every group in exactly one shard; neighbouring groups, which tend to
    cost the same, go to different shards)."""
    return [g for i, g in enumerate(groups) if i % n == k - 1]


def spec_identity(spec) -> dict:
    """What a shard's grid is, as JSON: the validated spec without presentation-only
    fields (``decimals``)."""
    d = dataclasses.asdict(spec)
    d.pop("decimals", None)
    return json.loads(canonical(d))


def SharedFolderLock(folder: str | Path) -> FolderLock:
    """A *shared* ``fcntl.flock`` on ``folder/.spml.lock``, the file :class:`FolderLock`
    locks exclusively: any number of shards hold it together, while a full bench (or
    ``--table-only``), which needs it exclusively, is refused — and a shard is refused
    while a full bench runs.  The kernel drops it when the process dies."""
    return FolderLock(folder, shared=True, busy="{folder} is in use by a full spml bench ({holder}); shards can only "
                                               "share a folder with other shards: wait for it to finish")


@contextlib.contextmanager
def _exclusive(path: Path):
    """Block until this process holds an exclusive flock on ``path`` (an empty lock file
    spmlkit lists in the owned folder it lies in)."""
    ownership.touch(path)
    lock = FolderLock(path.parent, lock_file=path, block=True).acquire()
    try:
        yield
    finally:
        lock.release()


def _check_plan(path: Path, ident: dict) -> bool:
    """True when ``path`` records ``ident``; False when it is missing; a one-line
    :class:`ConfigError` when it records another grid or shard count."""
    if not path.exists():
        return False
    try:
        have = read_json(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable plan is refused, never overwritten
        raise ConfigError(f"{path}: unreadable shard plan ({exc}); expected the JSON written by spml bench --shard") \
            from None
    if have == ident:
        return True
    if have.get("shards") != ident["shards"]:
        raise ConfigError(f"{path}: this folder's grid is split into {have.get('shards')} shards, not "
                          f"{ident['shards']}; use --shard K/{have.get('shards')} or another -o")
    a, b = have.get("spec", {}), ident["spec"]
    diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    raise ConfigError(f"{path}: the shards of this folder run another configuration (differs in "
                      f"{', '.join(diff) or 'the spec'}); give every shard the same options, or use another -o")


class Shard(Executor):
    """Shard ``k`` of ``n`` of a bench (see the module docstring): trains its groups into
    the shared folder and writes no table.  ``run`` returns ``{"shard", "groups_total",
    "groups_in_shard", "trained", "finished"}`` (``finished``: groups of the whole grid
    finished in the folder now)."""

    def __init__(self, k: int, n: int):
        self.k, self.n = int(k), int(n)

    def run(self, runner: BenchRunner) -> dict:
        k, n, log = self.k, self.n, runner.log
        out = ownership.check_output_folder(runner.out)
        ident = {"shards": n, "spec": spec_identity(runner.spec)}
        plan = out / SHARD_PLAN
        _check_plan(plan, ident)  # before anything is written
        if runner.threads:
            torch.set_num_threads(int(runner.threads))
        # a folder of the user's, a link or an input: refused before anything is written
        ownership.claim(out, "bench", inputs=bench_inputs(runner.spec))
        created = ownership.created(out)
        lock = SharedFolderLock(out).acquire()
        try:
            try:
                with _exclusive(out / SHARD_PREPARE_LOCK):  # one shard prepares datasets / features at a time
                    _check_plan(plan, ident)  # (again: another shard may have written it meanwhile)
                    datasets = resolve_datasets(runner.spec, out, log)
                    runner._cache_image_features(datasets)
                    if not plan.exists():
                        write_json(plan, ident)
            except BaseException:
                if created:  # a shard that failed before doing anything leaves no folder behind
                    lock.release()
                    ownership.remove(out / SHARD_PREPARE_LOCK)
                    remove_empty_tree(out)
                raise
            groups = plan_groups(runner.spec, datasets)
            mine = shard_groups(groups, k, n)
            pending = [g for g in mine if runner.load_finished(g) is None]
            log(f"bench shard {k}/{n}: {len(mine)} of {len(groups)} training group(s), "
                f"{len(mine) - len(pending)} already finished, {len(pending)} to run -> {out}")
            self._train(runner, pending, {d.label: d for d in datasets})
            finished = sum(1 for g in groups if runner.load_finished(g) is not None)
        finally:
            lock.release()
        log(f"bench shard {k}/{n}: trained {runner.n_trained} group(s); {finished} of {len(groups)} finished in "
            f"{out}" + ("; run the same command without --shard (or with --table-only) to write the tables"
                        if finished == len(groups) else ""))
        return {"shard": [k, n], "groups_total": len(groups), "groups_in_shard": len(mine),
                "trained": runner.n_trained, "finished": finished}

    def _train(self, runner: BenchRunner, pending: list, by_label: dict) -> None:
        """Each pending group under its own lock (a shard started twice never trains one
        group twice)."""
        progress = runner.progress
        disable = (not progress) if progress is not None else (os.environ.get("SPML_NO_PROGRESS") == "1" or None)
        bar = tqdm(total=sum(g.steps for g in pending), desc=f"shard {self.k}/{self.n}", unit="step",
                   file=sys.stderr, dynamic_ncols=True, disable=disable, smoothing=0.05)
        subsets: dict = {}
        try:
            for g in pending:
                work = ownership.mkdir(runner.out / "work" / g.hash)
                try:
                    glock = FolderLock(work, what="bench group").acquire()
                except ConfigError:  # another process (the same shard started twice) trains it
                    runner.log(f"bench shard {self.k}/{self.n}: group {g.hash} is being trained by another process; "
                               "skipped")
                    continue
                try:
                    if runner.load_finished(g) is not None:  # finished while this shard waited
                        continue
                    bar.set_postfix_str(f"{g.dataset} {g.method} bs {g.batch_size}")
                    runner.records[g.hash] = runner.run_group(g, runner.bundle_for(g, by_label, subsets), bar)
                    runner.n_trained += 1
                finally:
                    glock.remove = True  # a group finished meanwhile leaves only the lock file: removed
                    glock.release()
                    with contextlib.suppress(OSError, ConfigError):
                        ownership.remove(work, only_if_empty=True)
        finally:
            bar.close()


# ------------------------------------------------------------------ choosing an engine
def check_engine_options(*, shard: str | None = None, jobs: int | None = None, executor: str = "local",
                         address: str | None = None, table_only: bool = False, device: str | None = None,
                         share_gpus: bool = False) -> None:
    """The engine options of ``spml bench`` (``--shard``, ``--jobs``, ``--executor``,
    ``--address``, ``--table-only``; ``--device`` and ``--share-gpus`` for the GPU
    rule): a combination that means nothing is a one-line :class:`ConfigError`, raised
    before anything is written.  ``--table-only`` trains nothing, so it accepts (and does
    not use) the engine options: "the same command with ``--table-only``" re-renders a
    bench that ran with ``--jobs`` or ``--executor ray``."""
    if shard is not None:
        parse_shard(shard)
        for given, opt in ((jobs is not None, "--jobs"), (executor != "local", "--executor ray"),
                           (table_only, "--table-only")):
            if given:
                raise ConfigError(f"--shard {shard} with {opt}: a shard is one process training its share of "
                                  f"the grid; run N shards side by side instead (see docs/scale.md)")
    if address is not None and executor != "ray":
        raise ConfigError("--address is the Ray cluster of --executor ray; add --executor ray")
    if table_only:  # trains nothing: the engine options of "the same command" are accepted and unused
        return
    if jobs and jobs > 1 and executor == "local":
        worker_gpus(device, jobs, share=share_gpus)  # --jobs > GPUs: refused before any write
    if executor == "ray" and address is not None and jobs is not None:
        raise ConfigError("--jobs with --executor ray sets the CPUs of the local Ray cluster it starts; with "
                          "--address the cluster's own resources decide (leave --jobs out)")


def make_executor(*, executor: str = "local", address: str | None = None, jobs: int | None = None,
                  threads: int | None = None, table_only: bool = False, shard: str | None = None,
                  share_gpus: bool = False) -> Executor:
    """The executor of ``spml bench``'s engine options: :class:`Shard` for ``shard``
    (``"K/N"``), :class:`TableOnly` for ``table_only``, :class:`RayExecutor` for
    ``executor="ray"`` (on ``address``, or a local cluster of ``jobs`` CPUs),
    :class:`LocalPool` for ``jobs`` > 1, else :class:`Sequential`."""
    if shard is not None:
        return Shard(*parse_shard(shard))
    if table_only:
        return TableOnly()
    if executor == "ray":
        return RayExecutor(address, num_cpus=jobs, threads=threads)
    if executor != "local":
        raise ConfigError(f"unknown executor {executor!r}; expected local or ray")
    if jobs and jobs > 1:
        return LocalPool(jobs, threads=threads, share_gpus=share_gpus)
    return Sequential()


def run_bench(spec, out: str | Path, *, executor: Executor | None = None, jobs: int = 1, share_gpus: bool = False,
              **kw) -> dict:
    """Run (or resume) a bench: train every group of ``spec`` not finished in ``out`` yet, then
    write its tables.  The executor connects before anything is written.

    Args:
        spec: the :class:`~spmlkit.experiments.bench.spec.BenchSpec` (datasets, methods,
            the grid of learning rates × batch sizes × seeds, epochs, setting).
        out: the results folder: new, or one a bench wrote (it resumes).
        executor: who trains the groups (default: :class:`LocalPool` for ``jobs`` > 1,
            else :class:`Sequential`; :class:`RayExecutor`, :class:`TableOnly`, :class:`Shard`).
        jobs: worker processes of the default executor.
        share_gpus: let workers share the visible GPUs.
        **kw: :class:`~spmlkit.experiments.bench.runner.BenchRunner`'s options (``log``,
            ``progress``, ``figures``, ``threads``, ``command``, ``on_group``).

    Returns:
        The summary: ``written`` (the files by kind), ``selection`` (the selected
        configuration per dataset and method), ``runs`` and the groups' counts.

    Example:
        >>> import tempfile
        >>> from spmlkit.experiments.bench import BenchSpec
        >>> spec = BenchSpec(datasets=["yeast"], methods=["an", "wan"], lrs=(1e-2,), batch_sizes=(16,),
        ...                  seeds=(0,), epochs=2)
        >>> tmp = tempfile.TemporaryDirectory()
        >>> summary = run_bench(spec, f"{tmp.name}/bench", log=lambda m: None, progress=False, figures=False)
        >>> sorted(summary["written"]), summary["groups_done"]
        (['recovery', 'runs', 'table'], 2)
        >>> tmp.cleanup()
    """
    if executor is None:
        executor = make_executor(jobs=jobs, threads=kw.get("threads"), share_gpus=share_gpus)
    return BenchRunner(spec, out, jobs=jobs, **kw).run(executor)
