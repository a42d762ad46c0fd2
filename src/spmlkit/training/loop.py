"""The training loop shared by every setting (linear probe, fine-tuning).

:func:`fit` knows no method by name: it calls the method's hooks (see
:mod:`spmlkit.methods.base`) and a *learner* that owns the model, its optimizer and the
data order.  Each epoch ends with a checkpoint (atomic, checksummed) holding the
learner, the method's state, the best-epoch tracker and the random generators, so a
run killed at any point resumes from its last completed epoch and ends exactly where
an uninterrupted run would.

Speed: the per-member loss sums stay tensors during the epoch (no ``.item()`` /
``.tolist()`` per step, so no host synchronisation on an accelerator); they are read
once at the end of the epoch.

Distributed runs (``torchrun``, :mod:`spmlkit.training.distributed`): every rank runs
this same loop on its share of each global batch; the loss is computed on the
all-gathered logits of the whole global batch, gradients are summed over ranks, the
validation score is computed on rank 0 and broadcast, and only rank 0 writes files.

Early-stopped members leave the stack (``compact``): with ``patience`` set, a member
that stops is removed from the model and the optimizer (and from the method's
components, when they support it) instead of training on unseen, so a grid whose
high-learning-rate members stop early gets cheaper as it goes.  Results are unchanged:
a stopped member's outputs were never used after it stopped.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Callable, Iterable, Protocol

import torch

from ..io import append_jsonl, read_jsonl, write_text
from ..methods.base import Batch, Method
from .. import progress as _progress
from . import distributed
from ..errors import CorruptFileError
from .checkpoint import RESTART_ADVICE, load_run_checkpoint, save_checkpoint
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
def train_epoch(learner: Learner, method: Method, epoch: int,
                ctx: distributed.DistContext | None = None) -> tuple[torch.Tensor, int]:
    """One pass over ``learner.batches(epoch)``: forward, loss, backward, step, hooks.

    Returns the per-member sum of the batch losses (a tensor, never synchronised during
    the epoch) and the number of steps."""
    ctx = ctx or distributed.context()
    loss_sum = None
    n_steps = 0
    for batch in learner.batches(epoch):
        if ctx.enabled:
            loss, batch = _global_batch_step(learner, method, batch, ctx)
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
        if _progress._STEP_LISTENERS:  # progress inside long epochs (spmlkit.progress.on_steps)
            _progress.step_done(learner, epoch, n_steps)
    if loss_sum is None:
        loss_sum = torch.zeros(learner.n_members, device=getattr(learner, "device", "cpu"))
    return loss_sum, n_steps


def _global_batch_step(learner: Learner, method: Method, batch: Batch,
                       ctx: distributed.DistContext) -> tuple[torch.Tensor, Batch]:
    """One distributed step with the single-process loss of the whole global batch
    (see :mod:`spmlkit.training.distributed`)."""
    model = learner.model
    local_logits = method.forward(model, batch)  # (G, b_r, L)
    b_r = local_logits.shape[-2]
    whole = batch.global_batch
    if whole is not None and batch.shard is not None:
        n = whole.index.shape[-1]
        sizes = distributed.shard_sizes(n, ctx.world_size)
        start, stop = batch.shard
        if (start, stop) != distributed.shard_bounds(n, ctx.world_size, ctx.rank):
            raise RuntimeError(f"rank {ctx.rank}: batch shard {batch.shard} is not shard_bounds({n}, "
                               f"{ctx.world_size}, {ctx.rank})")
    else:  # a learner that does not know the global batch: gather it
        gathered = distributed.all_gather_cat(torch.tensor([b_r], device="cpu"), dim=0)
        sizes = [int(s) for s in gathered.tolist()]
        start = sum(sizes[:ctx.rank])
        stop = start + b_r
        whole = Batch(inputs=None, index=distributed.all_gather_cat(batch.index, dim=-1, sizes=sizes),
                      observed=distributed.all_gather_cat(batch.observed, dim=-2, sizes=sizes))
    gbatch = dataclasses.replace(whole, inputs=None, local=batch, shard=(start, stop), global_batch=None,
                                 extras={})
    full = distributed.all_gather_cat(local_logits.detach(), dim=-2, sizes=sizes).requires_grad_()
    # the method's other differentiable outputs of the batch (e.g. LAC's), gathered the same way
    pairs = [(local_logits, full, -2)]
    for name, dim in method.global_extras.items():
        if name in batch.extras:
            mine = batch.extras[name]
            gbatch.extras[name] = distributed.all_gather_cat(mine.detach(), dim=dim, sizes=sizes).requires_grad_()
            pairs.append((mine, gbatch.extras[name], dim))
    loss = method.compute_loss(full, gbatch, model)
    learner.zero_grad()
    _backward(learner, loss.sum())
    params = [p for p in model.parameters() if p.requires_grad]
    direct = [p.grad for p in params]  # straight from the loss to the weights: identical on every rank
    for p in params:
        p.grad = None
    outs, grads = [], []
    for mine, gathered, dim in pairs:  # back-propagate this rank's slice into its own graph
        if gathered.grad is not None and mine.requires_grad:
            outs.append(mine)
            grads.append(gathered.grad.narrow(dim, start, stop - start))
    if outs:
        torch.autograd.backward(outs, grads)
    distributed.all_reduce_gradients(params, ctx)
    for p, d in zip(params, direct):
        if d is not None:  # (a parameter no rank's model output reached keeps grad None there)
            p.grad = d if p.grad is None else p.grad.add_(d)
    return loss, gbatch


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
def fit(learner: Learner, method: Method, *, epochs: int, evaluate: Callable[[torch.Tensor], list[float]],
        patience: int | None = None, run_dir: str | Path | None = None, resume: bool = True,
        on_epoch: Callable[[dict], None] | None = None, member_info: list[dict] | None = None,
        checkpoint_every: int = 1, compact: bool = True) -> BestTracker:
    """Train ``learner`` with ``method`` for up to ``epochs`` epochs.

    ``evaluate(val_logits)`` returns one validation score per member (higher is better).
    With ``run_dir``, per-epoch metrics go to ``metrics.jsonl`` and a resumable
    checkpoint to ``last.pt``; with ``resume`` an existing checkpoint is continued.
    ``on_epoch(info)`` runs after each epoch and *before* its checkpoint (so a killed run
    repeats the call rather than skipping it) with ``epoch``, ``rows`` (one metrics row
    per member), ``seconds`` and ``predict_train`` (the lazily computed ``(G, N, L)``
    training-set probabilities, shared with the method's ``on_epoch_end``).  In a
    distributed run it is called on every rank (``predict_train`` is a collective
    operation there) with ``is_main``: only rank 0 should write or print.
    The returned tracker has ``active``: the original member numbers of the learner's
    stack at the end (all of them unless stopped members were compacted away).
    """
    ctx = distributed.context()
    G = learner.n_members
    tracker = BestTracker(G, patience)
    active = list(range(G))  # original member number of each row of the stack
    can_compact = (compact and patience is not None and G > 1 and hasattr(learner, "select_members")
                   and method.supports_compaction)

    def select(new_active: list[int]) -> None:
        nonlocal active
        keep = [active.index(g) for g in new_active]
        learner.select_members(keep)
        method.select_members(keep)
        active = list(new_active)

    start = 1
    ckpt = metrics = None
    if run_dir is not None:
        run_dir = Path(run_dir)
        if ctx.is_main:
            run_dir.mkdir(parents=True, exist_ok=True)
        ckpt, metrics = run_dir / "last.pt", run_dir / "metrics.jsonl"
        found = distributed.broadcast_object(bool(resume and ckpt.exists()))
        if found:
            # every rank loads it (shared filesystem); a schema-checked dict (one-line error otherwise)
            state = load_run_checkpoint(ckpt, epochs=epochs)
            try:
                saved_active = list(state.get("active", range(G)))
                if saved_active != active:
                    select(saved_active)
                learner.load_state_dict(state["learner"])
                method.load_state_dict(state["method"])
                tracker.load_state_dict(state["tracker"])
                _set_global_rng(state.get("rng"))
            except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as exc:
                first = " ".join(" ".join(str(exc).split()).split(" ")[:30]) or type(exc).__name__
                raise CorruptFileError(f"{ckpt}: does not fit this run ({type(exc).__name__}: {first}); "
                                       f"{RESTART_ADVICE}") from None
            start = int(state["epoch"]) + 1
            if ctx.is_main:
                rows = [r for r in read_jsonl(metrics) if r.get("epoch", 0) < start]
                write_text(metrics, "".join(json.dumps(r) + "\n" for r in rows))
        elif ctx.is_main and metrics.exists():
            metrics.unlink()
        distributed.barrier()
    info = member_info or [{} for _ in range(G)]

    for epoch in range(start, epochs + 1):
        if tracker.all_stopped:
            break
        t0 = time.perf_counter()
        method.on_epoch_start(epoch)
        learner.model.train()
        loss_sum, n_steps = train_epoch(learner, method, epoch, ctx)
        train_time = time.perf_counter() - t0
        learner.model.eval()
        cache: dict = {}

        def predict_train() -> torch.Tensor:
            if "train" not in cache:
                with torch.no_grad():
                    cache["train"] = torch.sigmoid(learner.scores("train"))
            return cache["train"]

        logs = method.on_epoch_end(epoch, predict_train) or {}
        with torch.no_grad():
            val_logits = learner.scores("val")
        own = evaluate(val_logits) if ctx.is_main else None
        own = distributed.broadcast_object(own)  # every rank takes the same decisions
        scores = [math.nan] * G
        for pos, g in enumerate(active):
            scores[g] = own[pos]
        improved = tracker.update(epoch, scores, lambda g: {"learner": learner.member_state(active.index(g)),
                                                             "method": method.member_state(active.index(g))})
        losses = (loss_sum / max(n_steps, 1)).tolist()  # the epoch's one host synchronisation
        elapsed = time.perf_counter() - t0
        rows = []
        n_active = len(active)
        for pos, g in enumerate(active):
            row = {"epoch": epoch, "member": g, **info[g], "train_loss": losses[pos], "val_score": scores[g],
                   "improved": improved[g], "train_seconds": train_time, "epoch_seconds": elapsed}
            row.update({k: (v[pos] if isinstance(v, (list, tuple)) and len(v) == n_active else v)
                        for k, v in logs.items()})
            rows.append(row)
        if ctx.is_main and metrics is not None:
            for row in rows:
                append_jsonl(metrics, row)
        if on_epoch is not None:  # before the checkpoint: a resumed run repeats it rather than skip it
            on_epoch({"epoch": epoch, "rows": rows, "seconds": elapsed, "predict_train": predict_train,
                      "rank": ctx.rank, "is_main": ctx.is_main})
        if can_compact:  # after everything that refers to this epoch's members
            stopped = [g for g in active if tracker.members[g].stopped]
            if stopped and len(stopped) < len(active):
                for g in stopped:  # a member that never had a valid score keeps its final state
                    if tracker.members[g].snapshot is None:
                        tracker.members[g].snapshot = {"learner": learner.member_state(active.index(g)),
                                                       "method": method.member_state(active.index(g))}
                select([g for g in active if not tracker.members[g].stopped])
        if ctx.is_main and ckpt is not None and (epoch % checkpoint_every == 0 or epoch == epochs):
            # save_checkpoint writes CPU tensors: a run resumes on any machine (issue 13)
            save_checkpoint({"epoch": epoch, "learner": learner.state_dict(), "method": method.state_dict(),
                             "tracker": tracker.state_dict(), "active": list(active), "rng": _global_rng()}, ckpt)
    tracker.active = list(active)
    return tracker


def _global_rng() -> dict:
    """The global generators (torch, numpy, random): a component that draws from them
    continues, after a resume, exactly where the uninterrupted run would."""
    import random

    import numpy as np

    # numpy's state holds an array: save_checkpoint stores it as a tensor (weights_only loads)
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "random": random.getstate()}


def _set_global_rng(state: dict | None) -> None:
    if not state:
        return
    import random

    import numpy as np

    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["random"])
