"""What the training loop does besides training: callbacks, as in PyTorch Lightning.

:func:`spmlkit.training.loop.fit` trains (the method's hooks, the learner's steps, the
validation score, the best epoch per member) and hands everything else to callbacks,
called in list order at named moments:

=============================  ====================================================
``setup(fit)``                 before the first epoch; :class:`Checkpoint` (the last
                               callback) resumes in its own ``setup``
``on_fit_start(fit)``          after every callback's ``setup``: ``fit.start`` is the first
                               epoch to train (after a resume, the one after the
                               checkpoint's) and the callbacks' states are loaded
``on_train_step_end(fit,       after each optimizer step and the method's
epoch, step)``                 ``after_optimizer_step`` (``step`` from 1 in ``epoch``)
``on_epoch_end(fit, info)``    after each epoch, with the epoch's ``info`` (below)
``on_fit_end(fit)``            after the last epoch
=============================  ====================================================

and, around a run folder (:func:`spmlkit.practitioner.run_folder.run_training`, rank 0 only):
``on_run_skipped(run_dir)`` when the folder already holds this finished run (nothing
trains), and ``on_run_end(run_dir)`` once the folder is complete (its ``result.json``
written), also after a skip.  A recipe, LinearInit or several fine-tuning members run
several fits inside one run: the fit hooks are called for each.

``info`` has ``epoch``, ``rows`` (one metrics row per member in the stack: ``member``,
``train_loss``, ``val_score``, ``improved``, the member's ``lr``/``seed``, timings, the
components' logs), ``seconds``, ``predict_train`` (the lazily computed ``(G, N, L)``
training-set probabilities, shared with the method's ``on_epoch_end``), ``rank`` and
``is_main``; a recipe adds ``member`` (its member method), ``member_index`` and
``member_count`` (the members it trains).  In a distributed run every rank calls every
hook (``predict_train`` is a collective operation there): only the main rank should write
or print.

``fit`` puts its own callbacks around the caller's: :class:`MetricsFile` first (so a
caller's callback finds the epoch's rows written), then the caller's, then
:class:`EarlyStopCompaction` and :class:`Checkpoint` last (a killed run repeats the
epoch's callbacks rather than skipping them).

**State.**  A callback with state to resume returns it from ``state_dict()``; the
checkpoint keeps it under the callback's :attr:`Callback.state_key` (a class attribute,
the class name unless the class declares one, as Lightning's), and ``load_state_dict``
gets it back when the run resumes.  Two callbacks with state need two keys.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Callable

from ..errors import CorruptFileError
from .. import ownership
from ..io import read_jsonl
from ..ownership import append_jsonl, write_text
from . import distributed
from ..progress import advance_to, progress
from .checkpoint import RESTART_ADVICE, load_run_checkpoint, save_checkpoint


class Callback:
    """Base class of the loop's callbacks; every hook is a no-op (see the module docstring).
    ``fit`` is the loop's :class:`spmlkit.training.loop.FitState`."""

    #: the key of this callback's state in a checkpoint: stable, the class name unless declared
    state_key: str = "Callback"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "state_key" not in cls.__dict__:
            cls.state_key = cls.__name__

    def on_run_skipped(self, run_dir: Path) -> None:
        pass

    def setup(self, fit) -> None:
        pass

    def on_fit_start(self, fit) -> None:
        pass

    def on_train_step_end(self, fit, epoch: int, step: int) -> None:
        pass

    def on_epoch_end(self, fit, info: dict) -> None:
        pass

    def on_fit_end(self, fit) -> None:
        pass

    def on_run_end(self, run_dir: Path) -> None:
        pass

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


def overrides(cb: Callback, hook: str) -> bool:
    """Whether ``cb`` does something at ``hook`` (the loop calls per-step hooks only then)."""
    if isinstance(cb, Tagged):
        return overrides(cb.inner, hook)
    return getattr(type(cb), hook) is not getattr(Callback, hook) or hook in vars(cb)


# ------------------------------------------------------------------ the loop's own
class MetricsFile(Callback):
    """``run_dir/metrics.jsonl``: one row per member and epoch, appended as each epoch
    ends (main rank).  A resumed run keeps the rows of the epochs its checkpoint holds
    and drops later ones (a killed epoch is trained again); a new run starts the file."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / "metrics.jsonl"

    def on_fit_start(self, fit) -> None:
        if fit.ctx.is_main:
            if fit.start > 1:
                rows = [r for r in read_jsonl(self.path) if r.get("epoch", 0) < fit.start]
                write_text(self.path, "".join(json.dumps(r) + "\n" for r in rows))
            elif self.path.exists():
                ownership.remove(self.path)
        distributed.barrier()

    def on_epoch_end(self, fit, info: dict) -> None:
        if fit.ctx.is_main:
            for row in info["rows"]:
                append_jsonl(self.path, row)


class EarlyStopCompaction(Callback):
    """Members that stopped early (``patience``) leave the stack: the learner and the
    method keep only the members still training, so a grid whose high-learning-rate
    members stop early gets cheaper as it goes.  Results are unchanged: a stopped
    member's outputs were never used after it stopped.  Runs after everything that
    refers to the epoch's members; a member that never had a valid score keeps its
    final state as its snapshot."""

    def on_epoch_end(self, fit, info: dict) -> None:
        if not fit.can_compact:
            return
        tracker, active = fit.tracker, fit.active
        stopped = [g for g in active if tracker.members[g].stopped]
        if stopped and len(stopped) < len(active):
            for g in stopped:
                if tracker.members[g].snapshot is None:
                    tracker.members[g].snapshot = fit.member_snapshot(g)
            fit.select([g for g in active if not tracker.members[g].stopped])


class Checkpoint(Callback):
    """``run_dir/last.pt`` (atomic, checksummed, device-free): the learner, the method's
    state, the best-epoch tracker, the member stack, the global random generators and the
    callbacks' states, every ``every`` epochs and after the last.  With ``resume``, an
    existing checkpoint is continued (every rank loads it: the folder must be on a
    filesystem all ranks see); one that does not fit the run is a one-line error."""

    def __init__(self, run_dir: str | Path, *, resume: bool = True, every: int = 1):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / "last.pt"
        self.resume, self.every = resume, int(every)

    def setup(self, fit) -> None:
        if fit.ctx.is_main:  # a folder spmlkit made (a run's, a bench group's, a recipe member's): checked, never followed
            ownership.folder(self.run_dir, "run")
        if not distributed.broadcast_object(bool(self.resume and self.path.exists())):
            return
        state = load_run_checkpoint(self.path, epochs=fit.epochs)  # schema-checked (one-line error otherwise)
        try:
            fit.load_state_dict(state)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as exc:
            first = " ".join(" ".join(str(exc).split()).split(" ")[:30]) or type(exc).__name__
            raise CorruptFileError(f"{self.path}: does not fit this run ({type(exc).__name__}: {first}); "
                                   f"{RESTART_ADVICE}") from None

    def on_epoch_end(self, fit, info: dict) -> None:
        epoch = info["epoch"]
        if fit.ctx.is_main and (epoch % self.every == 0 or epoch == fit.epochs):
            save_checkpoint(fit.state_dict(epoch), self.path)  # CPU tensors: resumes on any machine


# ------------------------------------------------------------------ for callers
class EpochFunction(Callback):
    """A plain function ``fn(info)`` called as each epoch ends (the ``on_epoch=`` of the
    trainers; Lightning's ``LambdaCallback``)."""

    def __init__(self, fn: Callable[[dict], None]):
        self.fn = fn

    def on_epoch_end(self, fit, info: dict) -> None:
        self.fn(info)


class Tagged(Callback):
    """``inner`` seeing every epoch's ``info`` with ``info`` entries added and each row
    with ``row`` entries set (copies: the loop's rows are not changed); every other hook
    and the state are ``inner``'s.  A recipe tags its member method's epochs, fine-tuning
    its members' rows."""

    def __init__(self, inner: Callback, *, info: dict | None = None, row: dict | None = None):
        self.inner, self.info, self.row = inner, dict(info or {}), dict(row or {})
        self.state_key = inner.state_key

    def on_run_skipped(self, run_dir):
        self.inner.on_run_skipped(run_dir)

    def setup(self, fit):
        self.inner.setup(fit)

    def on_fit_start(self, fit):
        self.inner.on_fit_start(fit)

    def on_train_step_end(self, fit, epoch, step):
        self.inner.on_train_step_end(fit, epoch, step)

    def on_epoch_end(self, fit, info):
        rows = [{**r, **self.row} for r in info["rows"]] if self.row else info["rows"]
        self.inner.on_epoch_end(fit, {**info, **self.info, "rows": rows})

    def on_fit_end(self, fit):
        self.inner.on_fit_end(fit)

    def on_run_end(self, run_dir):
        self.inner.on_run_end(run_dir)

    def state_dict(self):
        return self.inner.state_dict()

    def load_state_dict(self, state):
        self.inner.load_state_dict(state)


def tagged(callbacks, *, info: dict | None = None, row: dict | None = None) -> list[Callback]:
    """Every callback of ``callbacks`` as a :class:`Tagged` one."""
    return [Tagged(cb, info=info, row=row) for cb in callbacks]


class ProgressBar(Callback):
    """A run's progress (``spml train``): a bar on a terminal, a line every few seconds in a
    log file (:func:`spmlkit.progress.progress`), on the main rank.  ``plan`` says how it
    counts (:class:`spmlkit.training.run.ProgressPlan`: ``total`` units of ``unit``,
    ``steps`` per epoch, ``per_member`` epochs per member method); in optimizer steps
    (fine-tuning) it also moves inside an epoch.  The position is set, never counted, so
    a resumed run goes on from its epoch."""

    def __init__(self, plan, desc: str, *, bar=None):
        self.plan = plan
        main = distributed.context().is_main
        self.bar = bar if bar is not None else (progress(plan.total, desc, plan.unit) if main else None)

    def on_run_skipped(self, run_dir) -> None:
        self.close()

    def on_train_step_end(self, fit, epoch: int, step: int) -> None:
        if self.bar is not None and self.plan.unit == "step":
            advance_to(self.bar, (epoch - 1) * self.plan.steps + step)

    def on_epoch_end(self, fit, info: dict) -> None:
        if self.bar is None:
            return

        r = info["rows"][0]
        extra = {"member": info["member"]} if "member" in info else {}  # a recipe's member method
        if extra or self.plan.unit != "epoch":  # (else the position is the epoch)
            extra["epoch"] = f"{info['epoch']}/{info.get('member_epochs', self.plan.per_member)}"
        self.bar.set_postfix(**extra, loss=f"{r['train_loss']:.4f}", val=f"{r['val_score']:.2f}")
        if "member_count" in info:  # (a recipe that dropped members over its budgets: the bar ends at the last kept)
            total = info["member_count"] * self.plan.per_member * self.plan.steps
            if self.bar.total != total:
                self.bar.total = total
        # (a member's longer try runs past its share of the bar: the bar waits at the share's end)
        epoch = min(info["epoch"], self.plan.per_member)
        advance_to(self.bar, (info.get("member_index", 0) * self.plan.per_member + epoch) * self.plan.steps)

    def on_run_end(self, run_dir) -> None:
        self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class PrintEpochs(Callback):
    """One line per epoch on stderr (main rank): ``<name>: epoch 3/25, training loss
    0.1234, validation <selection> 45.67 (0.12 s)`` (``SPMLClassifier(verbose=True)``)."""

    def __init__(self, name: str, epochs: int, selection: str, *, file=None):
        self.name, self.epochs, self.selection, self.file = name, int(epochs), selection, file

    def on_epoch_end(self, fit, info: dict) -> None:
        if not info.get("is_main", True):
            return

        r = info["rows"][0]
        val = r.get("val_score")
        val = "—" if val is None or math.isnan(val) else f"{val:.2f}"
        who = f"{self.name} member {info['member']}" if info.get("member") else self.name  # a recipe's member
        print(f"{who}: epoch {info['epoch']}/{self.epochs}, training loss {r['train_loss']:.4f}, validation "
              f"{self.selection} {val} ({info['seconds']:.2f} s)", file=self.file or sys.stderr, flush=True)


def has_state(cb: Callback) -> bool:
    """Whether ``cb`` keeps state in checkpoints (its class defines ``state_dict``)."""
    if isinstance(cb, Tagged):
        return has_state(cb.inner)
    return type(cb).state_dict is not Callback.state_dict


def stateful(callbacks) -> dict:
    """``{state_key: callback}`` of the callbacks with state; two under one key are refused
    (they would overwrite each other in a checkpoint)."""
    out: dict = {}
    for cb in callbacks:
        if has_state(cb):
            if cb.state_key in out:
                raise ValueError(f"two callbacks with state share the state_key {cb.state_key!r}; give each its own")
            out[cb.state_key] = cb
    return out
