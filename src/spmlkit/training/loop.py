"""The training loop shared by every setting (linear probe, fine-tuning).

:func:`fit` knows no method by name: it calls the method's hooks (see
:mod:`spmlkit.methods.base`), a *learner* that owns the model, its optimizer and the
data order, and *callbacks* (:mod:`spmlkit.training.callbacks`) for everything that is
not training: the metrics file, checkpoints, early-stop compaction, progress, loggers.
It reads as the list of those calls.  A checkpoint (atomic, checksummed) holds the
learner, the method's state, the best-epoch tracker, the random generators and the
callbacks' states, so a run killed at any point resumes from its last completed epoch
and ends exactly where an uninterrupted run would.

Speed: the per-member loss sums stay tensors during the epoch (no ``.item()`` /
``.tolist()`` per step, so no host synchronisation on an accelerator); they are read
once at the end of the epoch.

Distributed runs (``torchrun``, :mod:`spmlkit.training.distributed`): every rank runs
this same loop on its share of each global batch; the loss is computed on the
all-gathered logits of the whole global batch and the gradients are routed back and
summed over ranks (:func:`spmlkit.training.distributed.global_batch_step`), the
validation score is computed on rank 0 and broadcast, and only rank 0 writes files.
"""
from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import Callable, Iterable, Protocol

import numpy as np
import torch

from ..methods.base import Batch, Method
from . import distributed
from .callbacks import (Callback, Checkpoint, EarlyStopCompaction, EpochFunction, MetricsFile, overrides,
                        stateful)
from .tracking import BestTracker


class Learner(Protocol):
    """What :func:`fit` drives.  ``g`` in the member methods is a position in the current
    member stack.  Optional: ``select_members(keep)`` (positions to keep, for
    compaction).  In distributed runs ``batches`` yields the rank's share of each global
    batch (every rank the same number of batches; optionally with ``shard`` and
    ``global_batch`` set, see :class:`~spmlkit.methods.base.Batch`) and ``scores``
    returns the full split on every rank; :func:`fit` sums the gradients of
    ``model.parameters()`` over ranks itself, so the model must not be wrapped in DDP."""

    n_members: int
    model: torch.nn.Module

    def batches(self, epoch: int) -> Iterable[Batch]: ...

    def zero_grad(self) -> None: ...

    def step(self) -> None: ...

    def scores(self, split: str) -> torch.Tensor: ...  # (G, N, L) logits

    def member_state(self, g: int) -> dict: ...

    def load_member_state(self, g: int, state: dict) -> None: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


# ------------------------------------------------------------------------ one epoch
def train_epoch(learner: Learner, method: Method, epoch: int, ctx: distributed.DistContext | None = None,
                on_step: Callable[[int, int], None] | None = None) -> tuple[torch.Tensor, int]:
    """One pass over ``learner.batches(epoch)``: forward, loss, backward, step, hooks.
    ``on_step(epoch, step)`` hears each finished step (``step`` from 1).

    Returns the per-member sum of the batch losses (a tensor, never synchronised during
    the epoch) and the number of steps."""
    ctx = ctx or distributed.context()
    loss_sum = None
    n_steps = 0
    for batch in learner.batches(epoch):
        if ctx.enabled:
            loss, batch = distributed.global_batch_step(learner, method, batch, ctx,
                                                        backward=lambda total: _backward(learner, total))
        else:
            logits = method.forward(learner.model, batch)
            loss = method.compute_loss(logits, batch, learner.model)
            learner.zero_grad()
            _backward(learner, loss.sum())
        batch.grad_scale = _grad_scale(learner)
        learner.step()
        method.after_optimizer_step(batch)
        d = loss.detach()
        loss_sum = d.clone() if loss_sum is None else loss_sum.add_(d)
        n_steps += 1
        if on_step is not None:
            on_step(epoch, n_steps)
    if loss_sum is None:
        loss_sum = torch.zeros(learner.n_members, device=getattr(learner, "device", "cpu"))
    return loss_sum, n_steps


def _backward(learner, total: torch.Tensor) -> None:
    """``total.backward()``, scaled when the learner has a gradient scaler (float16)."""
    scale = getattr(learner, "backward_scale", None)
    (total if scale is None else scale(total)).backward()


def _grad_scale(learner):
    """The factor in this step's gradients (``None``: 1), for components that read a
    gradient themselves (ROLE's estimator rows)."""
    fn = getattr(learner, "grad_scale", None)
    return None if fn is None else fn()


# ------------------------------------------------------------------------- fit
class FitState:
    """What one :func:`fit` has at hand, for its callbacks (Lightning's ``Trainer``): the
    ``learner``, the ``method``, the best-epoch ``tracker``, ``active`` (the original
    member number of each row of the learner's stack: members that stopped early leave
    it), ``epochs``, ``start`` (the first epoch to train: after a resume, the one after
    the checkpoint's), ``member_info`` (each member's ``lr``/``seed`` for the rows) and
    the distributed context ``ctx``."""

    def __init__(self, learner: Learner, method: Method, *, epochs: int, patience: int | None,
                 member_info: list[dict] | None, compact: bool, callbacks: list[Callback]):
        self.ctx = distributed.context()
        self.learner, self.method, self.epochs = learner, method, int(epochs)
        G = learner.n_members
        self.tracker = BestTracker(G, patience)
        self.active = list(range(G))
        self.member_info = member_info or [{} for _ in range(G)]
        self.start = 1
        self.can_compact = (compact and patience is not None and G > 1 and hasattr(learner, "select_members")
                            and method.supports_compaction)
        self.callbacks = list(callbacks)
        self._stateful = stateful(self.callbacks)

    # ---------------------------------------------------------------- members
    def select(self, new_active: list[int]) -> None:
        """Keep the members ``new_active`` (original numbers) in the learner and the method."""
        keep = [self.active.index(g) for g in new_active]
        self.learner.select_members(keep)
        self.method.select_members(keep)
        self.active = list(new_active)

    def member_snapshot(self, g: int) -> dict:
        """Member ``g``'s state (model and method), kept with its best epoch."""
        pos = self.active.index(g)
        return {"learner": self.learner.member_state(pos), "method": self.method.member_state(pos)}

    # ---------------------------------------------------------------- one epoch
    def train(self, epoch: int) -> float:
        """Train one epoch (the method's ``on_epoch_start``, the steps, the callbacks'
        ``on_train_step_end``); returns its seconds and keeps the mean loss per member."""
        t0 = time.perf_counter()
        self.method.on_epoch_start(epoch)
        self.learner.model.train()
        steppers = [cb for cb in self.callbacks if overrides(cb, "on_train_step_end")]
        on_step = None if not steppers else (
            lambda e, s: [cb.on_train_step_end(self, e, s) for cb in steppers])
        loss_sum, n_steps = train_epoch(self.learner, self.method, epoch, self.ctx, on_step=on_step)
        self._loss = loss_sum / max(n_steps, 1)
        return time.perf_counter() - t0

    def predictor(self) -> Callable[[], torch.Tensor]:
        """``predict_train()``: the ``(G, N, L)`` training-set probabilities, computed once
        when first asked for (by the method's ``on_epoch_end`` or a callback)."""
        cache: dict = {}

        def predict_train() -> torch.Tensor:
            if "train" not in cache:
                with torch.no_grad():
                    cache["train"] = torch.sigmoid(self.learner.scores("train"))
            return cache["train"]

        return predict_train

    def validate(self, evaluate: Callable[[torch.Tensor], list[float]]) -> list[float]:
        """The validation score of every original member (NaN for one no longer in the
        stack): computed on the main rank, the same on every rank."""
        with torch.no_grad():  # whole logits, or row chunks computed on demand when too large
            view = getattr(self.learner, "score_view", None)
            val_logits = view("val") if view is not None else self.learner.scores("val")
        own = evaluate(val_logits) if self.ctx.is_main else None
        own = distributed.broadcast_object(own)  # every rank takes the same decisions
        scores = [math.nan] * len(self.tracker.members)
        for pos, g in enumerate(self.active):
            scores[g] = own[pos]
        return scores

    def rows(self, epoch: int, scores: list[float], improved: list[bool], logs: dict, train_time: float,
             elapsed: float) -> list[dict]:
        """The epoch's metrics rows, one per member of the stack."""
        losses = self._loss.tolist()  # the epoch's one host synchronisation
        n_active = len(self.active)
        rows = []
        for pos, g in enumerate(self.active):
            row = {"epoch": epoch, "member": g, **self.member_info[g], "train_loss": losses[pos],
                   "val_score": scores[g], "improved": improved[g], "train_seconds": train_time,
                   "epoch_seconds": elapsed}
            row.update({k: (v[pos] if isinstance(v, (list, tuple)) and len(v) == n_active else v)
                        for k, v in logs.items()})
            rows.append(row)
        return rows

    # ---------------------------------------------------------------- checkpoints
    def state_dict(self, epoch: int) -> dict:
        """What a checkpoint of ``epoch`` holds (:class:`~spmlkit.training.callbacks.Checkpoint`)."""
        state = {"epoch": epoch, "learner": self.learner.state_dict(), "method": self.method.state_dict(),
                 "tracker": self.tracker.state_dict(), "active": list(self.active), "rng": _global_rng()}
        if self._stateful:
            state["callbacks"] = {key: cb.state_dict() for key, cb in self._stateful.items()}
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue from a checkpoint: the stack, every state, the generators, ``start``."""
        saved_active = list(state.get("active", range(len(self.tracker.members))))
        if saved_active != self.active:
            self.select(saved_active)
        self.learner.load_state_dict(state["learner"])
        self.method.load_state_dict(state["method"])
        self.tracker.load_state_dict(state["tracker"])
        _set_global_rng(state.get("rng"))
        saved = state.get("callbacks") or {}
        for key, cb in self._stateful.items():
            if key in saved:
                cb.load_state_dict(saved[key])
        self.start = int(state["epoch"]) + 1


def fitted_epochs(model, epochs: int) -> int:
    """The epochs worth training ``model`` for: 1 for a head **fitted** before the first
    epoch (``fitted`` True: its weights are written by ``fit_inputs`` and no step moves them,
    e.g. :class:`spmlkit.models.maxent_head.MaxEntHead`), whose every epoch would predict
    and score what the first did (the best epoch is the first: a later one never scores
    strictly higher); otherwise ``epochs``.

    >>> class Fitted: fitted = True
    >>> fitted_epochs(Fitted(), 25), fitted_epochs(object(), 25), fitted_epochs(Fitted(), 0)
    (1, 25, 0)
    """
    inner = getattr(model, "module", model)  # (a wrapped model: DistributedDataParallel)
    return min(int(epochs), 1) if getattr(inner, "fitted", False) is True else int(epochs)


def fit(learner: Learner, method: Method, *, epochs: int, evaluate: Callable[[torch.Tensor], list[float]],
        patience: int | None = None, run_dir: str | Path | None = None, resume: bool = True,
        on_epoch: Callable[[dict], None] | None = None, member_info: list[dict] | None = None,
        checkpoint_every: int = 1, compact: bool = True, callbacks: Iterable[Callback] = ()) -> BestTracker:
    """Train ``learner`` with ``method`` for up to ``epochs`` epochs (one for a fitted head:
    :func:`fitted_epochs`).

    ``evaluate(val_logits)`` returns one validation score per member (higher is better).
    With ``run_dir``, per-epoch metrics go to ``metrics.jsonl`` and a resumable
    checkpoint to ``last.pt``; with ``resume`` an existing checkpoint is continued.
    ``callbacks`` (:mod:`spmlkit.training.callbacks`) hear the fit's moments; ``on_epoch(info)``
    is a plain function called as each epoch ends (an
    :class:`~spmlkit.training.callbacks.EpochFunction`), after the metrics file and
    *before* the checkpoint (so a killed run repeats the call rather than skipping it).
    The returned tracker has ``active``: the original member numbers of the learner's
    stack at the end (all of them unless stopped members were compacted away).
    """
    callbacks = [*callbacks, *([EpochFunction(on_epoch)] if on_epoch is not None else [])]
    if run_dir is not None:
        callbacks = [MetricsFile(run_dir), *callbacks, EarlyStopCompaction(),
                     Checkpoint(run_dir, resume=resume, every=checkpoint_every)]
    else:
        callbacks = [*callbacks, EarlyStopCompaction()]
    state = FitState(learner, method, epochs=epochs, patience=patience, member_info=member_info, compact=compact,
                     callbacks=callbacks)
    for cb in callbacks:
        cb.setup(state)  # the checkpoint resumes here
    for cb in callbacks:
        cb.on_fit_start(state)
    for epoch in range(state.start, fitted_epochs(learner.model, epochs) + 1):
        if state.tracker.all_stopped:
            break
        t0 = time.perf_counter()
        train_time = state.train(epoch)
        learner.model.eval()
        predict_train = state.predictor()
        logs = method.on_epoch_end(epoch, predict_train) or {}
        scores = state.validate(evaluate)
        improved = state.tracker.update(epoch, scores, state.member_snapshot)
        elapsed = time.perf_counter() - t0
        info = {"epoch": epoch, "rows": state.rows(epoch, scores, improved, logs, train_time, elapsed),
                "seconds": elapsed, "predict_train": predict_train, "rank": state.ctx.rank, "is_main": state.ctx.is_main}
        for cb in callbacks:
            cb.on_epoch_end(state, info)  # metrics file, the caller's, compaction, checkpoint
    for cb in callbacks:
        cb.on_fit_end(state)
    state.tracker.active = list(state.active)
    return state.tracker


def _global_rng() -> dict:
    """The global generators (torch, numpy, random): a component that draws from them
    continues, after a resume, exactly where the uninterrupted run would."""
    # numpy's state holds an array: save_checkpoint stores it as a tensor (weights_only loads)
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "random": random.getstate()}


def _set_global_rng(state: dict | None) -> None:
    if not state:
        return

    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["random"])
