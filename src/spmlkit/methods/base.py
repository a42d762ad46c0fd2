"""Methods: a loss plus the training-time machinery that has state.

A **method** is what a user names (``an``, ``role``, ``em-apl``, ``ll-r``, ...): a loss
from :mod:`spmlkit.losses`, the observation regime it trains on, optional batch-level
regularisers, and optional **components** — objects with state that lives across
batches and epochs (ROLE's label estimator, APL's pseudo-labels, Large-Loss
corrections, OPML's label correction, LAC's queue).  The trainer calls the
components' hooks; it knows no method by name.

Hooks (all optional; called in this order)
------------------------------------------
``setup(ctx)``                      once, before training, with a :class:`TrainContext`
``on_epoch_start(epoch)``           epochs are 1-based
``batch_inputs(batch, logits)``     -> dict of extra keyword inputs for the loss, and/or
                                    a replacement ``observed`` tensor (key ``"observed"``)
``modify_loss(loss, batch, logits, observed)``  -> post-processed per-entry loss
``after_optimizer_step(batch)``     after the model's optimizer step, e.g. ROLE's estimator
                                    step (the hook was called ``after_backward`` before: that
                                    name still works, with a :class:`DeprecationWarning`)
``on_epoch_end(epoch, predict_train)``  ``predict_train()`` returns (G, N, L) probabilities
                                    of the model on the whole training set (computed on demand)
``state_dict()`` / ``load_state_dict(state)``  everything needed to resume
``state_bytes(ctx)``                the memory of its per-entry state (declared, checked
                                    against a budget before anything is allocated)
``member_state(g)`` / ``load_member_state(g, s)``  one member's state kept with its best epoch
``select_members(keep)``            only if ``supports_compaction``: keep the members at
                                    positions ``keep`` of the member axis (early-stopped
                                    members leave the stack)

Every tensor carries a leading member axis ``G`` (models trained together; 1 for a
single run), so state such as the ROLE table is ``(G, N, L)``.

A component's state is saved under its :attr:`Component.state_key` (a class attribute,
the class name unless the class declares one, as Lightning's ``Callback.state_key``),
never under its position: reordering a method's components keeps its checkpoints
readable.  Checkpoints written before state keys (``"0:LabelEstimator"``: position and
class name) are read by :meth:`Method.load_state_dict` as the component at that position
with that class name; a key that names no component of the method is refused.

Hyper-parameters: a factory's keyword arguments, with the constraints their types say
and those the registration declares (:func:`register_method`'s ``constraints``, checked
by :func:`spmlkit.params.check_params` before the factory runs).  A value that depends
on the data (WAN's γ = 1/(L−1), EPR's and ROLE's k) is completed when the method is set
up: ``Method(..., resolve=...)`` (:func:`resolve_k`).

Distributed runs (:mod:`spmlkit.training.distributed`): the loss and every hook see the
**global** batch (all ranks' rows, aligned with the all-gathered logits;
``batch.inputs`` is ``None`` and ``batch.local`` is the rank's own batch), computed
identically on every rank, so a component whose state depends only on what the hooks
give it stays identical on every rank without communication.

The one place that maps a name to parts is :func:`build_method`.
"""
from __future__ import annotations

import inspect
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from ..device import free_memory_bytes
from ..errors import ConfigError
from ..losses import LossSpec, get_loss, reduce_mean
from ..params import check_params, constraints_from_signature
from ..reading import env_megabytes
from ..registry import Registry
from ..sparse_labels import SparseLabels, as_sparse
from .order import ORDER


#: name of the components' scratch folder inside a run folder (removed when the run finishes;
#: a name of spmlkit's own, so nothing of the user's is ever taken for it)
SCRATCH_DIR = ".spml-scratch"


@dataclass
class TrainContext:
    """What components may know about the training data (never the full labels)."""

    n_train: int
    n_labels: int
    #: (N, L) training observations, sparse (:class:`~spmlkit.sparse_labels.SparseLabels`,
    #: int8 in {-1, 0, +1}); a dense tensor or array given here is converted.  Components
    #: read rows with ``observed.dense(rows)``; :meth:`observed_tensor` is the whole
    #: matrix, for components whose state is per entry anyway (they declare it).
    observed: "SparseLabels"
    n_members: int = 1
    expected_positives: float | None = None  # k (Cole §5.3); None when unknown
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    base_lrs: tuple[float, ...] = (1e-3,)  # learning rate of each member's model
    seeds: tuple[int, ...] = ()  # seed of each member (components seed their own streams from it); () = all 0
    epochs: int = 25
    world_size: int = 1  # torch.distributed processes (spmlkit.training.distributed)
    rank: int = 0
    #: a folder inside the run folder (``RUN/.spml-scratch``, :data:`SCRATCH_DIR`) when there
    #: is a run folder: components keep on-disk scratch there (e.g. ROLE's
    #: memory-mapped estimator) inside it, not in the system temp folder
    scratch_dir: "str | None" = None

    def __post_init__(self):
        if not isinstance(self.observed, SparseLabels):
            obs = self.observed.detach().cpu().numpy() if torch.is_tensor(self.observed) else self.observed
            self.observed = as_sparse(obs, dtype="int8")

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def observed_tensor(self, device=None) -> torch.Tensor:
        """The whole ``(N, L)`` int8 observation matrix as a dense tensor on ``device``
        (default: the context's) — O(N × L) memory, for per-entry state only."""
        return torch.from_numpy(self.observed.dense()).to(self.device if device is None else device)


@dataclass
class Batch:
    """One training step's data. ``index`` are training-set row numbers, ``(G, B)``."""

    inputs: Any  # (G, B, D) features, or images (B, C, H, W) for a single image model
    index: torch.Tensor  # (G, B) long
    observed: torch.Tensor  # (G, B, L) int8
    extras: dict = field(default_factory=dict)  # e.g. a second augmented view
    #: every member's row numbers are distinct (a slice of a permutation): index-addressed
    #: state (ROLE's estimator rows) then needs no de-duplication.  False = may repeat.
    distinct: bool = False
    # distributed runs only (spmlkit.training.distributed):
    shard: tuple[int, int] | None = None  # this rank's rows [start, stop) of the global batch
    local: "Batch | None" = None  # on the global batch: this rank's own batch (with inputs)
    global_batch: "Batch | None" = None  # on a local batch: index/observed of the whole global
    #                                      batch (inputs None), when the learner knows them
    #: set by the loop after backward: the factor in this step's gradients (float16 training
    #: with a gradient scaler; a device tensor) or None (1).  Components that read a
    #: gradient themselves (ROLE's estimator rows) divide by it.
    grad_scale: Any = None
    #: background rows drawn for this step (presence-only data): inputs ``(G, B, D)`` of training rows
    #: with **no observed label** (an ecologist's random background sites), one paired with
    #: each example; supplied by the trainer only to a method that consumes background
    #: (:attr:`Method.uses_background`), else None.
    background: Any = None


class Component:
    """Base class of training-time machinery with state.  Every hook is a no-op.

    **Per-entry state**: state with one entry per training example and label
    (ROLE's estimator, APL's pseudo-labels, Large-Loss corrections: ``(G, N, L)``) is where
    a component will declare its size and storage, so that a run can plan or refuse it
    before it allocates anything.  The declaration belongs here, on the component class,
    beside :attr:`supports_members` and :attr:`state_key`; none is made yet.
    """

    #: The key of this component's state in checkpoints and results
    #: (``result.state["method"][state_key]``): stable, never a position.  The class name
    #: unless the class declares its own; two components of one method need two keys.
    state_key: str = "Component"
    #: True when the component handles G > 1 members (grid training in one model).
    supports_members: bool = True
    #: True when :meth:`select_members` shrinks every member-axis state (so early-stopped
    #: members can leave the stack).  Off by default: a component with per-member state
    #: must implement it before it can be compacted.
    supports_compaction: bool = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "state_key" not in cls.__dict__:
            cls.state_key = cls.__name__
        if "after_backward" in cls.__dict__ and "after_optimizer_step" not in cls.__dict__:
            warnings.warn(f"{cls.__qualname__}.after_backward: the hook is called after_optimizer_step now (it runs "
                          "after the optimizer step); the old name still works for now", DeprecationWarning,
                          stacklevel=2)
            cls.after_optimizer_step = cls.__dict__["after_backward"]

    #: Per-entry state.  Observations are stored sparse, O(N + L); state that a
    #: component keeps for every (member, example, label) entry — ROLE's label table,
    #: APL's pseudo-labels, Large-Loss's permanent corrections — is O(G·N·L) and declared:
    #: :meth:`state_bytes` gives its resident size for a context, :attr:`state_alternative`
    #: what to do instead when it is too large, and :attr:`reads_train_predictions` says that
    #: :meth:`on_epoch_end` reads ``predict_train()`` (the whole ``(G, N, L)`` training-set
    #: probabilities, 4 bytes an entry).  :func:`check_state_budget` refuses a run whose
    #: declared state exceeds the budget, in one line, before anything is allocated.
    state_alternative: str = ""
    reads_train_predictions: bool = False

    def state_bytes(self, ctx: TrainContext) -> int:
        """Resident bytes of this component's per-entry state on ``ctx`` (0: none)."""
        return 0

    def setup(self, ctx: TrainContext) -> None:
        self.ctx = ctx

    def on_epoch_start(self, epoch: int) -> None:
        pass

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        return {}

    def modify_loss(self, loss: torch.Tensor, batch: Batch, logits: torch.Tensor,
                    observed: torch.Tensor) -> torch.Tensor:
        return loss

    def after_optimizer_step(self, batch: Batch) -> None:
        """After the model's optimizer step of ``batch`` (e.g. ROLE's estimator step)."""

    def after_backward(self, batch: Batch) -> None:
        """Deprecated name of :meth:`after_optimizer_step` (which it calls)."""
        warnings.warn("Component.after_backward is called after_optimizer_step now", DeprecationWarning, stacklevel=2)
        self.after_optimizer_step(batch)

    def on_epoch_end(self, epoch: int, predict_train: Callable[[], torch.Tensor]) -> dict:
        return {}

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def member_state(self, g: int) -> dict:
        """State of member ``g`` worth keeping with its best epoch (e.g. ROLE's estimator
        rows, carried into LinearInit fine-tuning).  Default: nothing."""
        return {}

    def load_member_state(self, g: int, state: dict) -> None:
        pass

    def select_members(self, keep: list[int]) -> None:
        """Keep only the members at positions ``keep`` (in that order) of every state with a
        member axis, e.g. ``self.table = self.table[keep]``.  Called between epochs."""


Regularizer = Callable[..., torch.Tensor]  # (logits, batch, model) -> (G,) penalty


class MemberStreams:
    """Per-member random streams: ``self.generators``, one CPU ``torch.Generator`` per
    member, that follow early-stopping compaction (:meth:`select_members`) and
    checkpoints (:meth:`state_dict` / :meth:`load_state_dict`).  Used by the components
    and samplers that draw per member (AN-SLDS's other label, background rows), so a
    member's draws do not depend on which other members train beside it."""

    generators: list

    def select_members(self, keep: list[int]) -> None:
        self.generators = [self.generators[i] for i in keep]

    def state_dict(self) -> dict:
        return {"generators": [g.get_state() for g in self.generators]}

    def load_state_dict(self, state: dict) -> None:
        for g, s in zip(self.generators, state.get("generators", [])):
            g.set_state(s.cpu())


@dataclass(frozen=True)
class FinetuneNeeds:
    """What a method needs from the fine-tuning trainer (:mod:`spmlkit.training.finetune`),
    declared in one object (:attr:`Method.finetune`).

    ``views``: the image views the trainer supplies: ``("train",)`` one augmented view as
    ``batch.inputs``; ``("weak", "strong")`` (LAC) the weak view as inputs and the strong
    one in ``batch.extras["strong"]``.  ``embeddings``: :meth:`Method.forward` needs the
    label-wise embeddings of the decoder head.  ``defaults``: TrainConfig fields this
    method's paper uses when fine-tuning (e.g. LAC: decoder head, AdamW one-cycle, EMA
    0.9997); the user's explicit options override them."""

    views: tuple = ("train",)
    embeddings: bool = False
    defaults: Mapping = field(default_factory=dict)


class Method:
    """A named training recipe: loss + regime + regularisers + components.

    ``compute_loss(logits, batch, model)`` returns the per-member loss ``(G,)``; the
    trainer sums it (members are independent) and back-propagates.

    ``resolve(ctx, loss_params) -> dict``: loss parameters completed from the training
    context when the method is set up (a value that depends on the data, e.g. k from
    ``ctx.expected_positives``, :func:`resolve_k`); they replace ``loss_params`` and are
    recorded in ``params`` for reports.
    """

    #: Differentiable outputs that :meth:`forward` leaves in ``batch.extras`` and the loss
    #: reads besides the logits, with their batch dimension (e.g. LAC's strong-view logits
    #: and embeddings).  A distributed step gathers them over ranks like the logits, so
    #: the loss sees the whole global batch.
    global_extras: dict = {}
    #: what the fine-tuning trainer must supply (views, embeddings) and the paper's recipe
    finetune: FinetuneNeeds = FinetuneNeeds()

    def __init__(self, name: str, loss: str | LossSpec, *, loss_params: dict | None = None,
                 regime: str = "single_positive", components: list[Component] | tuple = (),
                 regularizers: list[Regularizer] | tuple = (), reduction: Callable = reduce_mean,
                 params: dict | None = None, setting: str = "any",
                 resolve: Callable[[TrainContext, dict], dict] | None = None):
        self.name = name
        self.loss = get_loss(loss) if isinstance(loss, str) else loss
        self.loss_params = self.loss.check_params(dict(loss_params or {}))
        self.regime = regime
        self.components = list(components)
        keys = [c.state_key for c in self.components]
        if len(set(keys)) != len(keys):
            raise ConfigError(f"method {name!r}: two components share the state_key "
                              f"{next(k for k in keys if keys.count(k) > 1)!r}; give each its own")
        self.regularizers = list(regularizers)
        self.reduction = reduction
        self.params = dict(params or {})  # the resolved hyper-parameters, for reports
        self.setting = setting  # "any" | "linear" | "finetune"
        self._resolve = resolve
        self._given = dict(self.loss_params)  # as constructed: setup may run again on other data

    # ----------------------------------------------------------------- hooks
    @property
    def supports_members(self) -> bool:
        return all(c.supports_members for c in self.components)

    @property
    def supports_compaction(self) -> bool:
        return all(c.supports_compaction for c in self.components)

    def select_members(self, keep: list[int]) -> None:
        for c in self.components:
            c.select_members(keep)
        ctx = getattr(self, "ctx", None)
        if ctx is not None:
            if len(ctx.base_lrs) == ctx.n_members:
                ctx.base_lrs = tuple(ctx.base_lrs[i] for i in keep)
            if len(ctx.seeds) == ctx.n_members:
                ctx.seeds = tuple(ctx.seeds[i] for i in keep)
            ctx.n_members = len(keep)

    def state_bytes(self, ctx: TrainContext) -> int:
        """The declared per-entry state of every component on ``ctx`` (bytes), with the
        training-set probabilities ``predict_train()`` builds when a component reads them."""
        total = sum(int(c.state_bytes(ctx)) for c in self.components)
        if any(c.reads_train_predictions for c in self.components):
            total += 4 * ctx.n_members * ctx.n_train * ctx.n_labels
        return total

    def setup(self, ctx: TrainContext) -> None:
        if self._resolve is not None:  # data-dependent loss parameters (WAN's gamma, k)
            resolved = self._resolve(ctx, dict(self._given))
            self.loss_params = self.loss.check_params(resolved)
            for key, value in resolved.items():
                if key in self.params:
                    self.params[key] = value

        check_state_budget(self, ctx)
        self.ctx = ctx
        for c in self.components:
            c.setup(ctx)

    def on_epoch_start(self, epoch: int) -> None:
        for c in self.components:
            c.on_epoch_start(epoch)

    def forward(self, model, batch: Batch) -> torch.Tensor:
        """Model outputs for a batch; methods needing several views override this."""
        return model(batch.inputs)

    @property
    def uses_background(self) -> bool:
        """True when the loss consumes **background rows** (training examples with no
        observed label, presence-only data): its ``background_logits`` input.  The trainer then
        draws one background row per example each step (``batch.background``), and the
        epoch runs over the labelled rows only; a method without it sees background rows,
        if the data has any, as ordinary examples with an all-unobserved row of Z."""
        return "background_logits" in self.loss.inputs

    def loss_matrix(self, logits: torch.Tensor, batch: Batch,
                    background_logits: torch.Tensor | None = None) -> torch.Tensor:
        """Unreduced loss after the components' inputs and modifications."""
        observed = batch.observed
        inputs: dict = {} if background_logits is None else {"background_logits": background_logits}
        for c in self.components:
            extra = c.batch_inputs(batch, logits)
            if "observed" in extra:
                observed = extra.pop("observed")
            inputs.update(extra)
        loss = self.loss.fn(logits, observed, **self.loss_params, **inputs)
        for c in self.components:
            loss = c.modify_loss(loss, batch, logits, observed)
        return loss

    def compute_loss(self, logits: torch.Tensor, batch: Batch, model=None) -> torch.Tensor:
        background_logits = None
        if self.uses_background:
            if batch.background is None or model is None:
                raise ConfigError(f"method {self.name!r} needs background rows (training examples with no observed "
                                  "label, e.g. random background sites); this data or trainer gives none")
            background_logits = model(batch.background)
        total = self.reduction(self.loss_matrix(logits, batch, background_logits))
        for reg in self.regularizers:
            total = total + reg(logits, batch, model)
        return total

    def after_optimizer_step(self, batch: Batch) -> None:
        for c in self.components:
            c.after_optimizer_step(batch)

    def after_backward(self, batch: Batch) -> None:
        """Deprecated name of :meth:`after_optimizer_step` (which it calls)."""
        warnings.warn("Method.after_backward is called after_optimizer_step now", DeprecationWarning, stacklevel=2)
        self.after_optimizer_step(batch)

    def on_epoch_end(self, epoch: int, predict_train: Callable[[], torch.Tensor]) -> dict:
        logs: dict = {}
        for c in self.components:
            logs.update(c.on_epoch_end(epoch, predict_train) or {})
        return logs

    # ----------------------------------------------------------------- state
    def state_dict(self) -> dict:
        return {c.state_key: c.state_dict() for c in self.components}

    def load_state_dict(self, state: dict) -> None:
        for key, value in self._by_component(state).items():
            self._component_of(key).load_state_dict(value)

    def member_state(self, g: int) -> dict:
        return {c.state_key: c.member_state(g) for c in self.components}

    def load_member_state(self, g: int, state: dict) -> None:
        for key, value in self._by_component(state).items():
            if value:
                self._component_of(key).load_member_state(g, value)

    def _component_of(self, key: str) -> Component:
        return next(c for c in self.components if c.state_key == key)

    def _by_component(self, state: dict) -> dict:
        """``state`` keyed by the components' :attr:`~Component.state_key`: a key written
        before state keys existed (``"0:LabelEstimator"``, position and class name) is read
        as the component at that position when it has that class name.  A key that names
        no component of this method raises :class:`ValueError` (the trainer reports the
        checkpoint as not fitting the run, in one line)."""
        out = {}
        keys = {c.state_key for c in self.components}
        for key, value in state.items():
            old = re.fullmatch(r"(\d+):(\w+)", key)
            if old is not None and key not in keys:
                i, cls = int(old[1]), old[2]
                if i < len(self.components) and type(self.components[i]).__name__ == cls:
                    key = self.components[i].state_key
            if key not in keys:
                raise ValueError(f"method {self.name!r} has no component with state key {key!r} "
                                 f"(its components: {sorted(keys) or 'none'})")
            out[key] = value
        return out

    def component(self, cls: type) -> Component | None:
        return next((c for c in self.components if isinstance(c, cls)), None)

    def __repr__(self) -> str:
        return f"Method({self.name!r}, loss={self.loss.name!r}, regime={self.regime!r}, params={self.params})"


def resolve_k(method_name: str) -> Callable[[TrainContext, dict], dict]:
    """A ``resolve`` for :class:`Method`: k (Cole et al. §5.3) from the factory argument,
    else ``ctx.expected_positives`` (the full training labels, Cole Eq. A1, or
    ``TrainConfig.expected_positives``), else a one-line error saying how to give it."""

    def resolve(ctx: TrainContext, params: dict) -> dict:
        k = params.get("k")
        if k is None:
            k = ctx.expected_positives
        if k is None:
            raise ConfigError(
                f"method {method_name!r} needs k, the expected number of positives per example (Cole et al. §5.3); "
                "this training set has no full labels to compute it from. Give it as TrainConfig(expected_positives=...) "
                "or SPMLClassifier(expected_positives=...) in Python, or --k on the command line; an estimate from a "
                "few fully labelled examples: spmlkit.practitioner.estimate_k / spml estimate-k")
        k = float(k)
        if not 0.0 < k <= ctx.n_labels:
            raise ConfigError(f"method {method_name!r}: k must be in (0, L={ctx.n_labels}], got {k}")
        return {**params, "k": k}

    return resolve


def available_memory_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """The host memory a new allocation can take without swapping: ``MemAvailable`` of
    ``meminfo`` (Linux: free memory plus the page cache and slabs the kernel can reclaim),
    else the free pages ``os.sysconf`` reports (``SC_AVPHYS_PAGES``), else None (unknown).
    On a shared machine this is what is left, not what is installed."""
    try:
        for line in Path(meminfo).read_text(encoding="utf-8").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # (the kernel writes kB)
    except (OSError, ValueError, IndexError, UnicodeDecodeError):  # not Linux, or an unreadable line: the portable reading
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def state_budget_bytes(device: torch.device | str = "cpu") -> int:
    """The memory per-entry method state may take: ``SPML_STATE_BUDGET_MB`` when set, else
    half of the device's free memory (CUDA) or of the host memory available now
    (:func:`available_memory_bytes`, not the installed total: other processes' memory is
    not this run's) — the other half is left to the features, the model, the evaluation
    chunks and the system."""
    env = env_megabytes("SPML_STATE_BUDGET_MB")
    if env is not None:
        return env
    device = torch.device(device)
    if device.type == "cuda":
        free = free_memory_bytes(device)
        if free is not None:
            return free // 2
    available = available_memory_bytes()
    return available // 2 if available is not None else 8 * 2 ** 30


def check_state_budget(method: "Method", ctx: TrainContext) -> None:
    """Refuse (one-line :class:`ConfigError`) a run whose declared per-entry state
    (:meth:`Method.state_bytes`) exceeds :func:`state_budget_bytes`, naming the size, the
    budget and the alternatives the components declare."""
    need = method.state_bytes(ctx)
    budget = state_budget_bytes(ctx.device)
    if need <= budget:
        return
    alt = "; ".join(c.state_alternative for c in method.components if c.state_alternative and c.state_bytes(ctx))
    gib = 2 ** 30
    raise ConfigError(
        f"method {method.name!r} keeps per-entry state of {need / gib:.1f} GiB for {ctx.n_members} member(s) x "
        f"{ctx.n_train:,} examples x {ctx.n_labels:,} labels, over the {budget / gib:.1f} GiB budget "
        f"(SPML_STATE_BUDGET_MB); {alt + '; or ' if alt else ''}use a method without per-entry state "
        "(an, an-ls, wan, epr, l1r, gr, splc, ...) or fewer members")


# --------------------------------------------------------------------- registry
@dataclass(frozen=True)
class MethodSpec:
    name: str
    factory: Callable[..., Method]
    hyperparameters: dict  # keyword arguments of the factory and their defaults
    regime: str
    reference: str
    summary: str
    setting: str  # "any" | "linear" | "finetune"
    family: str
    #: in ``spml bench``'s default method list (False: benchmarked only when named with
    #: --methods, so that default tables stay as committed when methods are added)
    in_default_bench: bool = True
    #: hyper-parameter -> constraints (:mod:`spmlkit.params`): the factory's types, with the
    #: ranges and choices the registration declares
    constraints: dict = field(default_factory=dict)
    #: an epoch of this method on the linear head against an epoch of ``an`` on the same
    #: data, at wide L (where the loss's elementwise passes over the ``(B, L)`` logits, not
    #: the head, set the cost): what ``auto``'s cost budget plans a member with
    #: (:mod:`spmlkit.training.budget`), measured by ``benchmarks/method_cost.py``
    epoch_cost: float = 1.0

    def check_params(self, params: dict) -> dict:
        """``params`` checked against :attr:`constraints` (unknown names and bad values
        are one-line :class:`ConfigError` errors, :func:`spmlkit.params.check_params`)."""
        return check_params(params, self.constraints, owner=f"method {self.name!r}")


#: every registered method, listed in the pinned order of :data:`.order.ORDER`
METHODS: Registry = Registry("method", package=__package__, order=ORDER)


def register_method(name: str, *, regime: str = "single_positive", reference: str = "", setting: str = "any",
                    family: str = "", in_default_bench: bool = True, constraints: dict | None = None,
                    epoch_cost: float = 1.0):
    """Register a factory ``f(**hyperparameters) -> Method`` under ``name``.

    The factory's keyword arguments (with the papers' defaults) are the method's
    hyper-parameters; a default of ``None`` may mean "derive from the data" (e.g. WAN's
    γ = 1/(L−1)), which the factory documents.  Their annotations say their types;
    ``constraints`` adds what a type cannot say, as scikit-learn's
    ``_parameter_constraints``: ``{"storage": [Options("float32", "float16")], "k":
    [Interval(float, 0, None, closed="neither"), None]}`` (:mod:`spmlkit.params`).
    :func:`build_method` checks the values before the factory runs.  ``epoch_cost``: an epoch
    against an epoch of ``an`` at wide L (:attr:`MethodSpec.epoch_cost`; 1 unless measured
    otherwise by ``benchmarks/method_cost.py``)."""
    if not (math.isfinite(epoch_cost) and epoch_cost > 0):
        raise ValueError(f"method {name!r}: epoch_cost must be a positive number, got {epoch_cost!r}")

    def deco(factory):
        sig = inspect.signature(factory)
        hp = {p.name: p.default for p in sig.parameters.values()
              if p.default is not inspect.Parameter.empty and not p.name.startswith("_")}
        summary = (inspect.getdoc(factory) or "").split("\n", 1)[0]
        checks = constraints_from_signature(factory, hp, constraints)
        METHODS.add(name, MethodSpec(name, factory, hp, regime, reference, summary, setting,
                                     family or factory.__module__, in_default_bench, checks, float(epoch_cost)),
                    owner=factory)
        return factory

    return deco


def get_method_spec(name: str) -> MethodSpec:
    return METHODS.lookup(name)


def build_method(name: str, **params) -> Method:
    """The one place that maps a method name to its parts.

    Args:
        name: a registered method (``spml methods`` lists them).
        **params: its hyper-parameters (the factory's keyword arguments); unknown names and
            values outside the declared constraints are refused by :func:`spmlkit.params.check_params`.

    Returns:
        A fresh :class:`Method` (not set up: :meth:`Method.setup` gives it the run's
        context) with its ``name``, ``regime``, ``setting`` and ``params`` (defaults
        completed) filled in.

    Raises:
        UnknownNameError: ``name`` is not registered (the message lists the known names).
        ConfigError: a hyper-parameter is unknown or out of range (one line, naming it).

    Example:
        >>> m = build_method("an")
        >>> m.loss.name, m.regime
        ('an', 'single_positive')
        >>> build_method("an-ls", epsilon=0.2).params
        {'epsilon': 0.2}
    """
    spec = get_method_spec(name)
    spec.check_params(params)
    method = spec.factory(**params)
    method.name = name
    method.regime = spec.regime
    method.setting = spec.setting
    method.params = {**spec.hyperparameters, **params}
    return method


def describe_methods() -> list[dict]:
    """Every registered method as a dict (name, regime, setting, family, reference, summary,
    hyper-parameters with defaults), sorted by family then name."""
    METHODS.discover()
    return [{"name": s.name, "regime": s.regime, "setting": s.setting, "family": s.family, "reference": s.reference,
             "summary": s.summary, "hyperparameters": dict(s.hyperparameters)}
            for s in sorted(METHODS.values(), key=lambda s: (s.family, s.name))]
