"""Running a bench: :class:`BenchRunner` owns the results folder and trains groups.

**Resuming.**  A finished group is written atomically to ``groups/<hash>.json`` at
once; an unfinished one checkpoints every epoch under ``work/<hash>/`` (the training
loop's atomic, checksummed checkpoint).  A rerun skips finished groups, resumes the
unfinished one from its last epoch and rebuilds the tables, so a bench killed at any
point (even SIGKILL) ends with the same tables as an uninterrupted one; only the
``<!-- run -->`` block of the headers (date, wall time) differs.

Who trains the pending groups is an executor (:mod:`.executors`): the runner's
:meth:`BenchRunner.run` hands itself to one, and the executors that write tables go
through :meth:`BenchRunner.run_groups` (claim the folder, prepare the datasets, plan,
train what is pending, write the tables and figures).
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ... import ownership
from ...device import resolve_device
from ...errors import ConfigError, CorruptFileError, SpmlError
from ...features import DEFAULT_BACKBONE, ensure_features
from ...io import FolderLock, dumps_json, read_json, read_json_record, read_jsonl
from ...methods import build_method
from ...ownership import append_jsonl, write_json
from ...progress import progress
from ...training.callbacks import Callback
from ...training.prepare import observations_for
from ...training.run import SETTINGS, train
from ..figures import make_figures
from ..tables import write_outputs
from .data import TrainSubset, resolve_datasets, subsample_rows
from .plan import Group, plan_groups
from .spec import BenchSpec, validate_spec

HIST_BINS = 20


def histogram_of(probs, mask) -> list[list[float]]:
    """Per member, the normalised histogram (``HIST_BINS`` equal bins on [0, 1], the last
    one closed) of the probabilities ``probs`` ``(G, N, L)`` at the entries of ``mask``
    (``(N, L)`` bool, or the flat indices of its True entries)."""
    idx = torch.as_tensor(mask, device=probs.device)  # probabilities on a GPU: counted there
    if idx.dtype == torch.bool:
        idx = idx.reshape(-1).nonzero().squeeze(1)
    G = probs.shape[0]
    v = probs.reshape(G, -1).index_select(1, idx)  # (G, M)
    b = (v * HIST_BINS).long().clamp_(0, HIST_BINS - 1)
    counts = torch.zeros(G, HIST_BINS, dtype=torch.float64, device=probs.device).scatter_add_(
        1, b, torch.ones_like(b, dtype=torch.float64))
    counts /= max(idx.numel(), 1)
    return [[round(float(x), 6) for x in row] for row in counts.cpu()]


def trainer(setting: str):
    """The bench's trainer: :func:`spmlkit.training.run.train` in ``setting`` (the groups'
    configs leave the setting out of their identity: it is the bench's)."""
    if setting not in SETTINGS:
        raise ConfigError(f"--setting must be one of {', '.join(SETTINGS)}, got {setting!r}")

    def train_in_setting(bundle, config, **kw):
        return train(bundle, config.replace(setting=setting), **kw)

    return train_in_setting


class GroupEpochs(Callback):
    """A group's epochs: the bench's bar moves by the group's steps per epoch, and with
    histograms (Cole et al. Fig. 2) each epoch appends the stack's histograms of the
    probabilities at the unobserved true positives (``mask``) to ``hist_file``."""

    def __init__(self, g: Group, bar, mask, hist_file: Path):
        self.g, self.bar, self.mask, self.hist_file = g, bar, mask, hist_file
        self.counted = 0

    def on_epoch_end(self, fit, info: dict) -> None:
        step = max(0, min(self.g.steps_per_epoch, self.g.steps - self.counted))  # (a recipe's longer tries:
        self.counted += step                                                     # never past the group's share)
        if self.bar is not None and step:
            self.bar.update(step)
        if self.mask is not None and "predict_train" in info:
            # the stack's members at this epoch (early-stopped ones leave it with --patience)
            members = [int(r["member"]) for r in info["rows"]]
            append_jsonl(self.hist_file, {"epoch": int(info["epoch"]), "members": members,
                                          "hist": histogram_of(info["predict_train"](), self.mask)})


class BenchRunner:
    """Runs a :class:`~.spec.BenchSpec` into ``out`` (see the module docstring).

    ``jobs`` / ``threads``: the worker processes and torch threads the bench uses (its
    tables' machine line); ``on_group(group, record)`` hears every group this invocation
    trains (e.g. ``--log-to``)."""

    def __init__(self, spec: BenchSpec, out: str | Path, *, command: str | None = None,
                 log: Callable[[str], None] | None = None, progress: bool | None = None,
                 figures: bool = True, jobs: int = 1, threads: int | None = None,
                 on_group: Callable[[Group, dict], None] | None = None):
        self.spec = validate_spec(spec)
        self.on_group = on_group
        if jobs < 1:
            raise ConfigError(f"jobs must be >= 1, got {jobs}")
        self.jobs = int(jobs)
        self.threads = threads
        self.out = Path(out)
        self.command = command
        self.log = log or (lambda m: print(m, file=sys.stderr))
        self.progress = progress
        self.figures = figures
        self.records: dict[str, dict] = {}  # group hash -> persisted group record
        self.n_trained = 0  # groups trained (or resumed) by this invocation

    # ---------------------------------------------------------------- persistence
    def group_path(self, g: Group) -> Path:
        return self.out / "groups" / f"{g.hash}.json"

    def load_finished(self, g: Group) -> dict | None:
        p = self.group_path(g)
        if not p.exists():
            return None
        try:
            rec = read_json(p)
        except Exception:  # an unreadable file is treated as unfinished (writes are atomic; this is paranoia)
            rec = None
        problem = group_record_problem(rec, g.n_members)
        if problem is not None:  # damaged or edited: the group is trained again and the record rewritten
            self.log(f"{p}: {problem}; training this group again")
            return None
        if rec["key"] != g.key:
            return None
        return rec

    def group_done(self, g: Group, record: dict, ctx: dict) -> None:
        """A group trained by this invocation (here or by a worker): kept, told to
        ``on_group``, and the tables rewritten with it."""
        self.records[g.hash] = record
        self.n_trained += 1
        if self.on_group is not None:
            self.on_group(g, record)
        write_outputs(self, ctx["groups"], ctx)

    # ------------------------------------------------------------------- training
    def _observations(self, bundle, g: Group):
        return observations_for(bundle, build_method(g.config.method, **g.params), g.config)

    def run_group(self, g: Group, bundle, bar) -> dict:
        """Train group ``g`` on ``bundle`` (resuming its checkpoint under ``work/``), write
        its record ``groups/<hash>.json`` and return it; ``bar`` (or None) moves by the
        group's steps."""
        train = trainer(self.spec.setting)
        ownership.folder(self.out, "bench")  # (in a worker process too: the bench's folder, checked)
        work = ownership.mkdir(self.out / "work" / g.hash)
        write_json(work / "key.json", g.key)
        Z = self._observations(bundle, g)
        n_observed = int((Z != 0).sum())
        mask = None
        if g.histograms:
            Y = bundle.labels("train")
            if Y is not None:
                flat = np.flatnonzero(np.asarray(Y, dtype=bool) & (Z == 0))  # unobserved true positives
                mask = torch.from_numpy(flat) if flat.size else None
        hist_file = work / "hist.jsonl"
        epochs = GroupEpochs(g, bar, mask, hist_file)
        t0 = time.perf_counter()
        results = train(bundle, g.config, lrs=[m[0] for m in g.members], seeds=[m[1] for m in g.members],
                        run_dir=work, resume=True, callbacks=[epochs])
        seconds = time.perf_counter() - t0
        if bar is not None:
            rest = g.steps - epochs.counted
            if rest > 0:
                bar.update(rest)
        hists = _read_histograms(hist_file, work)
        runs = []
        for i, r in enumerate(results):
            rec = r.to_record()
            rec.update(dataset=g.dataset, method=g.method, regime=g.regime, hide_prob=g.hide_prob,
                       train_fraction=g.fraction, setting=self.spec.setting, n_train=int(bundle.size("train")),
                       n_observed=n_observed, group=g.hash, group_seconds=seconds,
                       seconds=seconds / len(results))
            if g.draw is not None:
                rec["prepare_seed"] = g.draw
            if hists:  # the epochs the member trained (fewer for one stopped early)
                rec["hist_unobserved_positives"] = [hists[e][i] for e in sorted(hists) if i in hists[e]]
            runs.append(rec)
        record = {"key": g.key, "runs": runs, "seconds": seconds, "hist_bins": HIST_BINS if hists else None}
        record["device"] = _device_name(g.config.device)  # where it trained (not part of what it is)
        record = json.loads(dumps_json(record))  # exactly what a later run will read back
        write_json(self.group_path(g), record)
        ownership.remove(work)  # what spmlkit wrote there (a file of anyone else's is left, and its folder)
        return record

    def _cache_image_features(self, datasets: list) -> None:
        """Linear setting on image bundles: compute (or reuse) the backbone feature cache of
        every dataset (``spml features`` with the bench's backbone / weights / image size)
        and train on it."""
        if self.spec.setting != "linear" or "feature_set" in self.spec.config:
            return
        every = [b for d in datasets for b in d.bundles()]  # with --vary-draw: one bundle per draw
        images = [b for b in every if b.kind == "images"]
        if not images:
            return
        if len(images) != len(every):
            raise ConfigError("this bench mixes image and feature datasets; run them separately (the image ones "
                              "train on a cached backbone feature set)")

        cfg = self.spec.config
        names = set()
        for b in images:  # under the bundle's lock, as 'spml features' (one writer of a feature cache)
            with FolderLock(b.path, what="bundle"):
                names.add(ensure_features(b, backbone=cfg.get("backbone", DEFAULT_BACKBONE),
                                          weights=cfg.get("weights"), image_size=cfg.get("image_size", 448),
                                          log=self.log))
        self.spec = dataclasses.replace(self.spec, config={**cfg, "feature_set": names.pop()})

    @staticmethod
    def draw_bundle(g: Group, by_label: dict):
        """The bundle group ``g`` trains on (its draw's, with ``--vary-draw``)."""
        ds = by_label[g.dataset]
        return ds.draws[g.draw][0] if g.draw is not None else ds.bundle

    def bundle_for(self, g: Group, by_label: dict, subsets: dict):
        """:meth:`draw_bundle`, restricted to the group's training fraction (``subsets``
        keeps one :class:`~.data.TrainSubset` per dataset, fraction and draw)."""
        bundle = self.draw_bundle(g, by_label)
        if g.fraction >= 1.0:
            return bundle
        k = (g.dataset, g.fraction, g.draw)
        if k not in subsets:
            subsets[k] = TrainSubset(bundle, subsample_rows(bundle.size("train"), g.fraction,
                                                            self.spec.subsample_seed))
        return subsets[k]

    # ------------------------------------------------------------------------ run
    def run(self, executor) -> dict:
        """Run (or resume) the bench with ``executor`` (:mod:`.executors`), which connects
        before anything is written and is closed after; returns its summary."""
        executor.connect()
        try:
            return executor.run(self)
        finally:
            executor.close()

    def run_groups(self, train: Callable) -> dict:
        """The bench that writes its tables: claim the folder (a folder of the user's is
        refused before anything is written; one bench writes it at a time), prepare the
        datasets, plan the groups, ``train(runner, pending, ctx, bar)`` the unfinished ones,
        write the tables and figures.  A bench that fails before finishing a group leaves no
        folder behind."""
        t_start = time.perf_counter()
        # a folder of the user's (not empty, not a bench), a link or an input: refused before anything is written
        ownership.claim(self.out, "bench", inputs=bench_inputs(self.spec))
        created = ownership.created(self.out)
        try:
            lock = FolderLock(self.out, what="bench folder").acquire()
        except BaseException:
            if created:
                remove_failed_bench(self.out)
            raise
        try:
            # a killed bench leaves atomic-write temporaries behind: never read, removed here
            ownership.remove_stale_temporaries(self.out / "groups")
            ownership.remove_stale_temporaries(self.out)
            try:
                datasets = resolve_datasets(self.spec, self.out, self.log)
                return self._run_groups(datasets, t_start, train)
            except (SpmlError, KeyboardInterrupt, OSError):
                if created and self.n_trained == 0:  # a bench that failed before finishing anything leaves
                    lock.release()                    # no folder behind
                    remove_failed_bench(self.out)
                raise
        finally:
            lock.release()

    def _run_groups(self, datasets: list, t_start: float, train: Callable) -> dict:
        self._cache_image_features(datasets)
        groups = plan_groups(self.spec, datasets)
        pending = []
        for g in groups:
            rec = self.load_finished(g)
            if rec is None:
                pending.append(g)
            else:
                self.records[g.hash] = rec
                ownership.remove(self.out / "work" / g.hash)
        self.log(f"bench: {len(groups)} training group(s), {len(groups) - len(pending)} already finished, "
                 f"{len(pending)} to run -> {self.out}")

        # a bar on a terminal, a line every few seconds (elapsed, time left) in a log file
        bar = progress(sum(g.steps for g in pending), "bench", unit="step",
                       disable=None if self.progress is None else not self.progress)
        ctx = {"t_start": t_start, "command": self.command, "datasets": datasets, "groups": groups,
               "by_label": {d.label: d for d in datasets}}
        try:
            train(self, pending, ctx, bar)
        finally:
            bar.close()
        ownership.remove(self.out / "work", only_if_empty=True)  # unfinished groups keep their checkpoints
        summary = write_outputs(self, groups, ctx)
        if self.figures:
            summary["written"]["figures"] = make_figures(self.out)
        return summary


def _read_histograms(hist_file: Path, work: Path) -> dict[int, dict[int, list]]:
    """``epoch -> member -> histogram`` from a group's ``hist.jsonl`` (a resumed run may
    repeat an epoch: the last record wins)."""
    hists: dict[int, dict[int, list]] = {}
    for row in read_jsonl(hist_file):
        if not (isinstance(row.get("epoch"), int) and isinstance(row.get("hist"), list)
                and isinstance(row.get("members", []), list)):
            raise CorruptFileError(f"{hist_file}: line of histograms without 'epoch' and 'hist'; delete "
                                   f"{work} to train this group again")
        members = row.get("members", range(len(row["hist"])))
        hists[int(row["epoch"])] = dict(zip((int(m) for m in members), row["hist"]))
    return hists


#: fields every run of a group record has (RunResult.to_record() plus the bench's own)
_RUN_FIELDS = {"method": str, "lr": (int, float), "batch_size": int, "seed": int, "val_score": (int, float, type(None)),
               "dataset": str}


def group_record_problem(rec, n_members: int) -> str | None:
    """What is wrong with a ``groups/HASH.json`` record read back (None when it is sound):
    a JSON object with ``key`` (an object) and ``runs``, a list of ``n_members`` run
    objects with their fields of the right types."""
    if not isinstance(rec, dict):
        return f"expected a JSON object, found {type(rec).__name__}"
    if not isinstance(rec.get("key"), dict):
        return "'key' is missing or not an object"
    runs = rec.get("runs")
    if not isinstance(runs, list) or len(runs) != n_members:
        return f"'runs' is not a list of {n_members} run(s)"
    for i, r in enumerate(runs):
        if not isinstance(r, dict):
            return f"run {i} is not an object"
        for k, t in _RUN_FIELDS.items():
            if not isinstance(r.get(k), t) or isinstance(r.get(k), bool):
                return f"run {i}: {k!r} is missing or of the wrong type"
    return None


def bench_inputs(spec) -> list:
    """What a bench reads: the datasets given as paths (bundles, data files) and the
    files named by its hyper-parameters (``pseudo_scores``)."""
    found = [d for d in spec.datasets if Path(d).exists()]
    for params in spec.params.values():
        if params.get("pseudo_scores"):
            found.append(str(params["pseudo_scores"]))
    return found


def is_bench_folder(path: Path) -> bool:
    """True when ``path`` holds results of ``spml bench`` written before the output
    marker existed (its ``groups/`` records or a ``runs.json`` / ``runs.json.gz`` with runs)."""
    path = Path(path)
    if (path / "groups").is_dir() and all(p.suffix in (".json", ".tmp") for p in (path / "groups").iterdir()):
        return True
    try:
        runs = read_json_record(path / "runs.json")
    except (OSError, SpmlError):
        return False
    return isinstance(runs, dict) and isinstance(runs.get("runs"), list)


def remove_failed_bench(folder: Path) -> None:
    """Undo a bench that created ``folder`` and failed before finishing a group: its work
    folders without a checkpoint, the bundles it prepared, then the folder when nothing
    else is in it — only what spmlkit wrote (:mod:`spmlkit.ownership`): a file of anyone
    else's is kept, and so is the folder."""
    work = folder / "work"
    if work.is_dir() and not work.is_symlink():
        for w in sorted(work.iterdir()):
            if w.is_dir() and not w.is_symlink() and not (w / "last.pt").exists():
                ownership.remove(w)
    ownership.remove(folder / "bundles")
    remove_empty_tree(folder)


def remove_empty_tree(folder: Path) -> None:
    """Remove ``folder`` if it holds nothing but empty folders spmlkit made and its own
    bookkeeping (marker, manifest, lock)."""
    ownership.prune(folder)
    ownership.discard(folder, only_if_empty=True)


def _device_name(device) -> str:
    try:
        return str(resolve_device(device))
    except ConfigError:
        return str(device)


ownership.register_kind("bench", "a bench results folder", is_ours=is_bench_folder,
                        layout=("groups", "work", "bundles", "*.json", "*.json.gz", "*.csv", "*.md", "*.png", "figures",
                                "tensorboard",
                                ".spml-shards.lock"))
