"""ROLE: regularised online label estimation (Cole et al. 2021, §5.4 and §6.1).

The method = the ``role`` loss (:mod:`spmlkit.losses.role`) + a :class:`LabelEstimator`
component holding ``g``: one row of logits per training example (``φ ∈ R^{N×L}``, per
grid member ``(G, N, L)``), with ``ŷ_n = σ(φ_n)`` ("g is a look-up", §6.1).

* initialisation (§6.1; the authors' code, elijahcole/single-positive-multi-label): unobserved entries uniform in
  logit space on ``[σ⁻¹(0.4), σ⁻¹(0.6)]``, observed positives ``σ⁻¹(0.995)``, observed
  negatives ``σ⁻¹(0.005)``; drawn from the member's own seed (a grid member starts where
  a separate run with that seed starts);
* each batch, :meth:`LabelEstimator.batch_inputs` hands the loss the batch rows as a
  float32 leaf tensor ``estimator_logits`` ``(G, B, L)``; after the backward pass
  :meth:`LabelEstimator.after_optimizer_step` (after the model's optimizer step) updates **only those rows** with Adam at
  ``lr_mult × lr`` of the member (``lr_mult = 10``, §6.1).  By default (``adam="dense"``)
  this reproduces the optimiser of the paper's experiments — Adam on φ as one dense
  parameter, where every row keeps moving on its momentum between visits (about 32·lr
  per visit late in training) — computed lazily, so each step still reads and writes
  only the batch rows.  The "10× learning rate" of §6.1 was chosen under that optimiser;
  ``adam="rowwise"`` (each row's Adam counts only its own updates, ~lr per visit) is an
  estimator about 30× slower to move and scored 0.35–3 mAP lower on four Mulan sets
  (docs/cole2021.md).  Details: :mod:`.label_store`;
* storages ``float32`` (default), ``float16``, ``memmap``, ``factorised`` (rank ``rank``):
  :mod:`.label_store`.

``k`` comes from the factory argument, else from the training context (the full
training labels, or ``TrainConfig.expected_positives``); without either the method
raises :class:`~spmlkit.errors.ConfigError` at setup.

Starting from a given table (LinearInit, Cole §6.1: the fine-tuning phase starts from
the ``φ`` found during linear training)::

    est = LabelEstimator(init_logits=table)        # (N, L) or (G, N, L) logits
    # or, from a finished linear run kept with keep_state=True:
    table = LabelEstimator.logits_from_state(result.state["method"][LabelEstimator.state_key])
"""
from __future__ import annotations

from typing import Callable

from pathlib import Path

import numpy as np
import torch

from ..errors import ConfigError
from ..io import load_numpy
from ..params import Interval, Options, check_params
from .base import Batch, Component, Method, TrainContext, register_method, resolve_k
from .label_store import ADAM_MODES, STORAGE, _chunks_from_state, make_store, storage_bytes


class LabelEstimator(Component):
    """ROLE's label estimator ``g`` (Cole §5.4, §6.1) as a training component.

    Parameters
    ----------
    lr_mult : its learning rate is ``lr_mult ×`` the member's learning rate (paper: 10).
    storage : ``float32`` | ``float16`` | ``memmap`` | ``factorised`` (see :mod:`.label_store`).
    rank : rank of the ``factorised`` storage (default 64).
    directory : folder for the ``memmap`` storage (default: a temporary folder; give one
        to make a memmap run resumable from a checkpoint).
    adam : ``dense`` (default: the authors' dense-Adam trajectory, computed lazily on the
        batch rows) or ``rowwise`` (each row's Adam counts its own updates); see
        :mod:`.label_store`.
    init_logits : optional ``(N, L)`` or ``(G, N, L)`` table of logits to start from
        instead of the §6.1 initialisation (LinearInit).
    betas, eps : Adam's (PyTorch defaults, as in the authors' code).
    """

    supports_members = True
    #: what the estimator's options may be (spmlkit.params); ``role``'s registration declares them too
    _parameter_constraints = {"lr_mult": [Interval(float, 0, None, closed="neither")], "storage": STORAGE,
                              "rank": [Interval(int, 1)], "adam": [Options(*ADAM_MODES)]}

    def __init__(self, *, lr_mult: float = 10.0, storage: str = "float32", rank: int = 64, directory=None,
                 adam: str = "dense", init_logits=None, betas=(0.9, 0.999), eps: float = 1e-8):
        check_params(dict(lr_mult=lr_mult, storage=storage, rank=rank, adam=adam), self._parameter_constraints,
                     owner="ROLE's label estimator")
        self.lr_mult = float(lr_mult)
        self.storage = storage
        self.rank = int(rank)
        self.directory = directory
        self.adam = adam
        self.init_logits = init_logits
        self.betas = tuple(betas)
        self.eps = float(eps)
        self.store = None
        self._pending = None

    state_alternative = ("ROLE: --param storage=factorised keeps a rank-64 estimator, O((N + L) x rank), or "
                         "storage=memmap keeps the table on disk")

    def state_bytes(self, ctx: TrainContext) -> int:
        """The estimator's table and Adam moments (:func:`~.label_store.storage_bytes`) and
        the best-epoch snapshot of the table (a third more: 16 bytes an entry in float32);
        a ``memmap`` table lives on disk (resident: a batch's rows)."""
        if self.storage == "memmap":
            return 0
        return storage_bytes(self.storage, ctx.n_train, ctx.n_labels, rank=self.rank, n_members=ctx.n_members) * 4 // 3

    # ------------------------------------------------------------------ hooks
    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        G, N, L = ctx.n_members, ctx.n_train, ctx.n_labels
        seeds = tuple(ctx.seeds) if ctx.seeds else (0,) * G
        if len(seeds) != G or len(ctx.base_lrs) != G:
            raise ConfigError(f"training context has {G} members but {len(seeds)} seeds / {len(ctx.base_lrs)} lrs")
        self.lrs = torch.tensor([self.lr_mult * float(lr) for lr in ctx.base_lrs], dtype=torch.float32, device="cpu")
        directory = self.directory
        if directory is None and self.storage == "memmap" and getattr(ctx, "scratch_dir", None):
            directory = str(Path(ctx.scratch_dir) / "role-estimator")  # inside the run folder, resumable
        self.store = make_store(self.storage, G, N, L, lrs=self.lrs, seeds=seeds, rank=self.rank,
                                directory=directory, adam=self.adam, betas=self.betas, eps=self.eps,
                                device=getattr(ctx, "device", "cpu"))
        if self.init_logits is None:
            self.store.initialise(ctx.observed, seeds)  # read in row blocks
        else:
            table = self.init_logits
            if tuple(table.shape) == (N, L):
                tables = [table] * G
            elif tuple(table.shape) == (G, N, L):
                tables = [table[g] for g in range(G)]
            else:
                raise ConfigError(f"init_logits has shape {tuple(table.shape)}; expected ({N}, {L}) or ({G}, {N}, {L}) "
                                  "(training examples x labels)")
            for g, t in enumerate(tables):
                self.store.load_member_state(g, {"logits": t})

    def init_from(self, table) -> None:
        """Start from ``table`` (logits ``(N, L)`` or ``(G, N, L)``): before setup, it replaces
        the §6.1 initialisation; after setup, it is loaded at once (optimizer state reset)."""
        self.init_logits = table
        if self.store is not None:
            self.setup(self.ctx)

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        index = batch.index.to(self.store.device)  # (the memmap storage reads on the host)
        rows = self.store.read(index, distinct=batch.distinct).to(logits.device).requires_grad_(True)
        self._pending = (index, rows)
        return {"estimator_logits": rows}

    def after_optimizer_step(self, batch: Batch) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        index, rows = pending
        if rows.grad is None:
            return
        with torch.no_grad():  # on the store's device: no host copy per step unless the store is on the host
            grad = rows.grad.detach()
            scale = getattr(batch, "grad_scale", None)
            if scale is not None:  # float16 training: the loss was scaled before backward
                grad = grad / scale
            self.store.update(index, grad.to(self.store.device))

    def on_epoch_end(self, epoch: int, predict_train: Callable[[], torch.Tensor]) -> dict:
        """Logs the estimator's mean number of positives per example (Σ_i ŷ_ni averaged
        over the training set), per member — what EPR constrains towards k.  A diagnostic
        computed from the rows as stored (with ``adam="dense"``, without the momentum tails
        of rows not visited since their last update)."""
        G = self.store.G
        sums = []
        for g in range(G):  # summed on the store's device (no copy of the table to the host)
            s = None
            for _, block in self.store.member_blocks(g, as_stored=True):
                part = torch.sigmoid(block).sum(dtype=torch.float64)
                s = part if s is None else s + part
            sums.append(s)
        totals = torch.stack(sums).tolist()  # one read for all members
        return {"estimator_mean_positives": [t / self.store.N for t in totals]}

    def state_dict(self) -> dict:
        return {"store": self.store.state_dict()} if self.store is not None else {}

    def load_state_dict(self, state: dict) -> None:
        if state:
            self.store.load_state_dict(state["store"])

    def member_state(self, g: int) -> dict:
        return self.store.member_state(g)

    def load_member_state(self, g: int, state: dict) -> None:
        self.store.load_member_state(g, state)

    # ---------------------------------------------------------------- access
    def table(self, g: int = 0) -> np.ndarray:
        """Member ``g``'s estimator logits as a float32 ``(N, L)`` array (materialised)."""
        return self.store.member_table(g)

    def probabilities(self, g: int = 0) -> np.ndarray:
        """Member ``g``'s label estimates ``ŷ = σ(φ)`` ``(N, L)``."""
        return 1.0 / (1.0 + np.exp(-self.table(g)))

    def nbytes(self) -> dict:
        """Bytes of each array of the storage (table/factors, Adam moments, step counts)."""
        return self.store.nbytes()

    @staticmethod
    def logits_from_state(state: dict, shape: tuple[int, int] | None = None) -> np.ndarray:
        """A member state of any storage (``{"logits"}``, ``{"path"}`` or ``{"U","V","b"}``)
        as a float32 ``(N, L)`` table of logits."""
        if shape is None:
            if "logits" in state:
                shape = tuple(state["logits"].shape)
            elif "path" in state:
                shape = tuple(load_numpy(state["path"], mmap=True).shape)
            else:
                shape = (state["U"].shape[0], state["V"].shape[1])
        out = np.empty(shape, dtype=np.float32)
        for start, block in _chunks_from_state(state, *shape):
            out[start:start + len(block)] = block
        return out


@register_method("role", regime="single_positive", reference="Cole et al. 2021, §5.4, Eq. 11; §6.1",
                 family="cole2021", constraints={**LabelEstimator._parameter_constraints,
                                                 "k": [Interval(float, 0, None, closed="neither"), None]})
def build_role(k: float | None = None, lam: float = 1.0, lr_mult: float = 10.0, storage: str = "float32",
               rank: int = 64, directory: str | None = None, adam: str = "dense") -> Method:
    """Regularised online label estimation (Cole §5.4): classifier and per-example label estimator trained jointly.

    ``k=None`` takes k from the training data; ``lam`` is EPR's weight in the code's
    scaling (1, as the authors); ``lr_mult`` the estimator's learning-rate multiplier
    (10, §6.1); ``storage``/``rank``/``directory`` choose how the estimator is stored;
    ``adam`` how its rows are optimised (``dense`` = the paper's Adam trajectory, computed lazily
    on batch rows; ``rowwise`` = each row's own Adam)."""
    est = LabelEstimator(lr_mult=lr_mult, storage=storage, rank=rank, directory=directory, adam=adam)
    return Method("role", "role", loss_params={"k": k, "lam": lam}, components=[est], resolve=resolve_k("role"))
