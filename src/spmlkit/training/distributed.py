"""Distributed training on ``torch.distributed`` (gloo on CPU, NCCL with CUDA).

Launch
------
One process per device, started by ``torchrun``; nothing else changes::

    torchrun --standalone --nproc_per_node 2 -m spmlkit.cli train <bundle> -m an --batch-size 16 -o runs/x

:func:`init_from_env` (called once by the CLI, idempotent) reads torchrun's ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK`` and ``MASTER_ADDR``/``MASTER_PORT`` and initialises the
default process group; without them (``WORLD_SIZE`` unset or 1) everything here is a
no-op and a run is a plain single process.  Library users who initialise the process
group themselves get the same behaviour: :func:`context` reads it.

Semantics: W processes reproduce one process
--------------------------------------------
``batch_size`` in :class:`~spmlkit.config.TrainConfig` is the **global** batch ``B``:
a run's result does not depend on how many processes train it (up to the order of
floating-point sums), and a checkpoint can be resumed with a different W.  Every epoch
each rank draws the same global permutation (same seeds on every rank); global batch
``t`` is ``perm[t·B:(t+1)·B]`` exactly as in one process; rank ``r`` takes the
contiguous slice :func:`shard_bounds` ``(B_t, W, r)`` of it (B/W rows each; the last,
partial batch is split as evenly as possible, a rank may get none).

One step (:func:`global_batch_step`, called by :func:`spmlkit.training.loop.train_epoch`):

1. each rank runs the model forward on its slice: local logits ``(G, b_r, L)``;
2. the logits are all-gathered into the global batch's logits ``(G, B_t, L)`` (a
   detached leaf); with the global batch's row indices and observations (which every
   rank knows) the **loss is computed on the whole global batch, identically on every
   rank** — the single-process loss, including losses and components that look at the
   batch as a whole (EPR's batch estimate of k, Large-Loss rejection, APL/ROLE inputs);
3. backward gives every rank the gradient of that loss w.r.t. all global logits; each
   rank back-propagates its slice through its local forward, and the partial parameter
   gradients are summed with one all-reduce (:func:`all_reduce_gradients`).  The sum
   over ranks of ``X_rᵀ ∂ℓ/∂logits_r`` is exactly the one-process ``Xᵀ ∂ℓ/∂logits`` up
   to summation order, for every global batch including the last partial one (no
   weighting to get wrong: the loss already is the global-batch mean);
4. every rank takes the same optimizer step, so the replicas stay identical.

Gradients that the loss sends directly to parameters (a regulariser on the weights, a
component's own parameters such as ROLE's estimator) are computed identically on every
rank from the global loss and are *not* all-reduced (that would count them W times).

Evaluation: each rank scores its contiguous share of the rows and the shares are
all-gathered, so every rank holds the full ``(G, N, L)`` scores (components need them
on every rank); the validation criterion is computed on rank 0 and broadcast, so all
ranks make the same best-epoch and early-stopping decisions.  Rank 0 alone writes
metrics, checkpoints and models (atomically); on resume every rank loads the
checkpoint (the run folder must be on a filesystem all ranks see).

Helpers for components (intended use)
-------------------------------------
Because step 2 hands every component the *global* batch (``batch.index``,
``batch.observed`` of all ranks' rows, aligned with the gathered logits;
``batch.inputs`` is ``None`` and the rank's own batch is ``batch.local``), most
components are correct across ranks without any communication of their own:

* **ROLE** (Cole et al. §4.5): the estimator's rows of the global batch are read and
  updated on every rank from the same global loss, so every rank's table stays
  identical with no communication.  If a component instead updates only the rows of
  its rank's examples (e.g. to save the redundant work for a large L), it must call
  :func:`sync_rows_` ``(table, index, rows)`` so every rank writes every updated row.
* **APL / OPML** (Zhou et al.; per-label AP ranking over the training set): the
  epoch-end ``predict_train()`` already returns the full ``(G, N, L)`` predictions on
  every rank (sharded scoring + :func:`all_gather_cat`); rank-specific statistics
  must be combined with :func:`all_reduce_` or :func:`all_gather_cat` before ranking.
* **Large-Loss** (Kim et al. 2022): with the global loss, the per-batch rejection of
  the largest losses is taken over the *global* batch, which is exactly the
  single-process rule for batch size B.  (Rejecting per rank over each rank's share
  would be a different rule — the top-k of a union is not the union of per-rank
  top-k — and is not what this loop does.)
* **LAC** (a queue of embeddings): enqueue the embeddings of the whole global batch:
  gather the rank's embeddings with :func:`all_gather_cat` (dim of the batch) so
  every rank's queue stays identical.

Checked (tests/training/test_distributed.py): ``role``, ``em-apl``, ``ll-r``, ``epr``,
``opml-sp`` and ``l2r`` trained as stacked grids by 2 processes with uneven shards match
one process to ~1e-7 in the weights and exactly in the validation history.

Methods that need the inputs in the loss (``batch.inputs``) — e.g. a consistency loss
between two augmented views computed inside ``compute_loss`` — should compute it in
``Method.forward`` (per rank) and pass results through the logits, or gather what
they need with :func:`all_gather_cat`.

Every function here is a no-op (or the identity) when not distributed.
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import pickle
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from ..device import _local_gpu
from ..errors import ConfigError
from ..methods.base import Batch


@dataclass(frozen=True)
class DistContext:
    """The process's place in a distributed run (``world_size == 1``: not distributed)."""

    world_size: int = 1
    rank: int = 0
    local_rank: int = 0
    backend: str | None = None
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


_CONTEXT = DistContext()


def _from_process_group() -> DistContext:
    backend = dist.get_backend()
    local = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
    device = torch.device("cuda", local) if backend == "nccl" else torch.device("cpu")
    return DistContext(world_size=dist.get_world_size(), rank=dist.get_rank(), local_rank=local, backend=backend,
                       device=device)


def init_from_env(backend: str | None = None, timeout_s: float = 1800) -> DistContext:
    """Initialise the default process group once from torchrun's environment.

    Returns the single-process context when ``WORLD_SIZE`` is unset or 1.  ``backend``
    defaults to NCCL when CUDA is available, else gloo."""
    global _CONTEXT
    if dist.is_available() and dist.is_initialized():
        _CONTEXT = _from_process_group()
        return _CONTEXT
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        _CONTEXT = DistContext()
        return _CONTEXT
    if not dist.is_available():
        raise ConfigError("WORLD_SIZE > 1 but this torch build has no torch.distributed")
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "nccl":
        torch.cuda.set_device(_local_gpu(local, "NCCL", "process group"))  # a clear error past the last GPU
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
    _CONTEXT = _from_process_group()
    return _CONTEXT


def context() -> DistContext:
    """The current context (reads an existing default process group if there is one)."""
    global _CONTEXT
    if dist.is_available() and dist.is_initialized():
        if not _CONTEXT.enabled and dist.get_world_size() > 1:
            _CONTEXT = _from_process_group()
        return _CONTEXT
    return DistContext()


def shutdown() -> None:
    """Tear the process group down on every rank together: a barrier first, so no rank
    destroys its gloo connections while another still works (e.g. rank 0 writing
    results) — that race aborted a rank at exit ("terminate called without an active
    exception")."""
    global _CONTEXT
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    _CONTEXT = DistContext()


# ------------------------------------------------------------------ sharding
def shard_bounds(n: int, world_size: int, rank: int) -> tuple[int, int]:
    """Rank ``rank``'s contiguous share ``[start, stop)`` of ``n`` rows: sizes differ by at
    most one, in rank order (``n = 8, W = 2`` → ``(0, 4), (4, 8)``; ``n = 3, W = 2`` →
    ``(0, 1), (1, 3)``).

    >>> [shard_bounds(3, 2, r) for r in range(2)]
    [(0, 1), (1, 3)]
    """
    return rank * n // world_size, (rank + 1) * n // world_size


def shard_sizes(n: int, world_size: int) -> list[int]:
    return [b - a for a, b in (shard_bounds(n, world_size, r) for r in range(world_size))]


# -------------------------------------------------------------- collectives
def _comm(t: torch.Tensor, ctx: DistContext) -> torch.Tensor:
    """A tensor the backend can communicate (NCCL needs CUDA, gloo has no bool)."""
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    if ctx.backend == "nccl" and t.device.type != "cuda":
        t = t.to(ctx.device)
    return t.contiguous()


def all_reduce_(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """In-place all-reduce (``sum``, ``max``, ``min`` or ``mean``); identity when not distributed."""
    ctx = context()
    if not ctx.enabled:
        return tensor
    t = _comm(tensor, ctx)
    dop = {"sum": dist.ReduceOp.SUM, "mean": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX,
           "min": dist.ReduceOp.MIN}[op]
    dist.all_reduce(t, op=dop)
    if op == "mean":
        t = t / ctx.world_size
    if t is not tensor:
        tensor.copy_(t.to(tensor.device, tensor.dtype))
    return tensor


#: bytes of gradients per all-reduce (DDP's default bucket size): a ResNet-50's 161
#: parameter tensors are summed in 4 collectives instead of 161
GRAD_BUCKET_BYTES = 25 * 2 ** 20


def all_reduce_gradients(params, ctx: DistContext | None = None, bucket_bytes: int = GRAD_BUCKET_BYTES) -> None:
    """Sum the parameters' gradients over ranks.  The loop's gradients are partial sums of
    one global loss, so the sum (not the mean) is the one-process gradient.

    The gradients are flattened into buckets of about ``bucket_bytes`` and each bucket is
    summed by one asynchronous all-reduce (not one collective per parameter).  A parameter
    that received no gradient on **any** rank keeps ``grad = None``, as in one process
    (filling it with zeros made AdamW decay and count steps for LAC's stage-1 projection
    head, which one process leaves untouched); one that
    received a gradient on some rank only (a rank with an empty shard) gets the sum.  Which
    parameters were used is summed with the gradients (a flag per parameter); a rank reads
    it back (a host synchronisation on a GPU) only when it lacks some gradient itself."""
    ctx = ctx or context()
    if not ctx.enabled:
        return
    params = [p for p in params if p.requires_grad]
    if not params:
        return
    have = [p.grad is not None for p in params]
    flags = torch.stack([p.new_ones((), dtype=torch.float32) if h else p.new_zeros((), dtype=torch.float32)
                         for p, h in zip(params, have)])
    f = _comm(flags, ctx)
    pending = [(None, f, dist.all_reduce(f, async_op=True))]
    groups: dict = {}
    for i, p in enumerate(params):
        groups.setdefault((p.dtype, p.device), []).append(i)
    for members in groups.values():
        bucket, size = [], 0
        for j, i in enumerate(members):
            bucket.append(i)
            size += params[i].numel() * params[i].element_size()
            if size >= bucket_bytes or j == len(members) - 1:
                flat = torch.cat([(params[k].grad if have[k] else params[k].new_zeros(params[k].shape)).reshape(-1)
                                  for k in bucket])
                t = _comm(flat, ctx)
                pending.append((bucket, t, dist.all_reduce(t, async_op=True)))
                bucket, size = [], 0
    used = have
    for bucket, t, work in pending:
        work.wait()
        if bucket is None:
            if not all(have):  # which parameters some rank used: read only by a rank that lacks one
                used = [bool(u) for u in (t > 0).tolist()]
            continue
        pos = 0
        for k in bucket:
            p = params[k]
            part = t[pos:pos + p.numel()].view(p.shape)
            pos += p.numel()
            if have[k]:
                p.grad.copy_(part)
            elif used[k]:
                p.grad = part.to(p.device, copy=True)


def broadcast_buffers_(module: torch.nn.Module, src: int = 0) -> None:
    """Copy rank ``src``'s buffers (e.g. BatchNorm running statistics, which each rank
    updates from its own shard) to every rank, as DDP's ``broadcast_buffers`` does, so
    all ranks hold one model.  Identity in one process."""
    ctx = context()
    if not ctx.enabled:
        return
    buffers = list(module.buffers())
    for dtype in dict.fromkeys(b.dtype for b in buffers):  # one broadcast per dtype, not per buffer
        same = [b for b in buffers if b.dtype == dtype]
        flat = _comm(torch.cat([b.detach().reshape(-1) for b in same]), ctx)
        dist.broadcast(flat, src)
        flat = flat.to(dtype)
        pos = 0
        for b in same:
            b.data.copy_(flat[pos:pos + b.numel()].view_as(b))
            pos += b.numel()


def all_gather_cat(tensor: torch.Tensor, dim: int = 0, sizes: list[int] | None = None) -> torch.Tensor:
    """Concatenate every rank's ``tensor`` along ``dim`` in rank order.

    Shapes may differ along ``dim`` only; pass ``sizes`` (every rank's length along
    ``dim``) when known to save one exchange.  Identity when not distributed."""
    ctx = context()
    if not ctx.enabled:
        return tensor
    dim = dim % tensor.dim()
    if sizes is None:
        n = _comm(torch.tensor([tensor.shape[dim]], dtype=torch.long, device=tensor.device), ctx)
        alln = [torch.zeros_like(n) for _ in range(ctx.world_size)]
        dist.all_gather(alln, n)
        sizes = [int(a.item()) for a in alln]
    m = max(sizes)
    t = _comm(tensor, ctx)
    if t.shape[dim] < m:
        pad = list(t.shape)
        pad[dim] = m - t.shape[dim]
        t = torch.cat([t, t.new_zeros(pad)], dim=dim)
    parts = [torch.empty_like(t) for _ in range(ctx.world_size)]
    dist.all_gather(parts, t)
    out = torch.cat([p.narrow(dim, 0, s) for p, s in zip(parts, sizes)], dim=dim)
    if tensor.dtype == torch.bool:
        out = out.to(torch.bool)
    return out.to(tensor.device)


def sync_rows_(table: torch.Tensor, index: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Index-keyed all-gather: every rank wrote ``rows`` at ``index`` of its copy of
    ``table``; afterwards every rank's table holds every rank's rows.

    Shapes: ``table (G, N, *)`` (a member axis, as component state is), ``index (G, k)``
    row numbers, ``rows (G, k, *)``; ``k`` may differ between ranks.  Rows written by
    several ranks end with the value of the highest rank.  Use for per-example state
    that each rank updates for its own examples only (e.g. a ROLE estimator updated
    per rank).  Identity when not distributed."""
    ctx = context()
    if not ctx.enabled:
        table.scatter_(1, _expand_index(index, rows), rows.to(table.dtype))
        return table
    all_index = all_gather_cat(index, dim=1)
    all_rows = all_gather_cat(rows, dim=1)
    table.scatter_(1, _expand_index(all_index, all_rows), all_rows.to(table.dtype))
    return table


def _expand_index(index: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    return index.reshape(*index.shape, *([1] * (rows.dim() - 2))).expand_as(rows).to(rows.device)


def broadcast_object(obj, src: int = 0):
    """``obj`` of rank ``src`` on every rank (pickled); identity when not distributed."""
    ctx = context()
    if not ctx.enabled:
        return obj
    box = [obj if ctx.rank == src else None]
    dist.broadcast_object_list(box, src=src, device=ctx.device if ctx.backend == "nccl" else None)
    return box[0]


def barrier() -> None:
    if context().enabled:
        dist.barrier()


def all_equal(obj) -> bool:
    """True when ``obj`` pickles to the same bytes on every rank (a cheap consistency check)."""
    ctx = context()
    if not ctx.enabled:
        return True
    blob = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8)
    ref = broadcast_object(blob if ctx.is_main else None)
    same = torch.tensor([int(torch.equal(ref, blob))], device="cpu")
    all_reduce_(same, "min")
    return bool(same.item())


# ------------------------------------------------------------------ one training step
def global_batch_step(learner, method, batch: Batch, ctx: DistContext, *, backward) -> tuple[torch.Tensor, Batch]:
    """One distributed step (steps 1-3 of the module docstring) with the single-process
    loss of the whole global batch; returns ``(loss, global batch)`` with the gradients
    of ``learner.model`` in place, summed over ranks.  ``backward(total)`` runs the
    backward pass of the loss's sum (the learner's gradient scaling, if any)."""
    model = learner.model
    local_logits = method.forward(model, batch)  # (G, b_r, L)
    b_r = local_logits.shape[-2]
    whole = batch.global_batch
    if whole is not None and batch.shard is not None:
        n = whole.index.shape[-1]
        sizes = shard_sizes(n, ctx.world_size)
        start, stop = batch.shard
        if (start, stop) != shard_bounds(n, ctx.world_size, ctx.rank):
            raise RuntimeError(f"rank {ctx.rank}: batch shard {batch.shard} is not shard_bounds({n}, "
                               f"{ctx.world_size}, {ctx.rank})")
    else:  # a learner that does not know the global batch: gather it
        gathered = all_gather_cat(torch.tensor([b_r], device="cpu"), dim=0)
        sizes = [int(s) for s in gathered.tolist()]
        start = sum(sizes[:ctx.rank])
        stop = start + b_r
        whole = Batch(inputs=None, index=all_gather_cat(batch.index, dim=-1, sizes=sizes),
                      observed=all_gather_cat(batch.observed, dim=-2, sizes=sizes))
    gbatch = dataclasses.replace(whole, inputs=None, local=batch, shard=(start, stop), global_batch=None, extras={})
    full = all_gather_cat(local_logits.detach(), dim=-2, sizes=sizes).requires_grad_()
    # the method's other differentiable outputs of the batch (e.g. LAC's), gathered the same way
    pairs = [(local_logits, full, -2)]
    for name, dim in method.global_extras.items():
        if name in batch.extras:
            mine = batch.extras[name]
            gbatch.extras[name] = all_gather_cat(mine.detach(), dim=dim, sizes=sizes).requires_grad_()
            pairs.append((mine, gbatch.extras[name], dim))
    loss = method.compute_loss(full, gbatch, model)
    learner.zero_grad()
    backward(loss.sum())
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
    all_reduce_gradients(params, ctx)
    for p, d in zip(params, direct):
        if d is not None:  # (a parameter no rank's model output reached keeps grad None there)
            p.grad = d if p.grad is None else p.grad.add_(d)
    return loss, gbatch
