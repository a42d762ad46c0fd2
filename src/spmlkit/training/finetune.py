"""The fine-tuning setting: backbone + head trained end to end on images.

``train_finetune`` has the contract of :func:`spmlkit.training.linear.train_linear`
(same arguments, a list of :class:`~spmlkit.training.linear.RunResult`), so a grid runner
can call either; the members of ``lrs`` x ``seeds`` run one after another (``G = 1``).

Protocol (Cole et al. 2021 §6.1, the authors' code, elijahcole/single-positive-multi-label):

* images resized to ``image_size`` (448 in the papers), random horizontal flip (p = 0.5) at
  training time, the backbone's own normalisation; evaluation on the resized image;
* Adam, constant learning rate, no weight decay, **10 epochs**; the test score is taken at
  the epoch with the best validation score;
* **LinearInit** (Cole §6.2, ``linear_init=True``): phase 1 is the linear setting on cached
  features of the same backbone and input size (computed if missing) for ``epochs``
  epochs (25) at ``linear_init_lr``; phase 2 fine-tunes the whole network starting from the
  best-epoch head weights **and** the method's state at that epoch (e.g. ROLE's label
  estimator, Cole §6.1 "starts from the φ parameters found during linear training"),
  handed over through ``Method.load_member_state``.  The linear phase trains on **raw**
  features (``standardize=False``, as the papers' linear setting): a head fitted to
  standardised features of channels that are almost constant (EfficientNet-Lite0 has ~100
  near-dead channels) gets weights ``W / σ`` with tiny ``σ``, which turn the small
  train-mode changes of those channels (batch-norm batch statistics, stochastic depth)
  into exploding logits as soon as fine-tuning starts.  Phase 2 lasts ``finetune_epochs``,
  default **5**: the paper says the LinearInit rows "are fine-tuned for 5 epochs starting
  from the best weights found during linear training" (§6.1); the authors' script runs 10
  (the authors' code, elijahcole/single-positive-multi-label) — pass ``finetune_epochs=10`` to match it.
  (:func:`fold_standardization` converts a head trained on standardised features exactly,
  ``W' = W / σ``, ``b' = b − (μ/σ) W``, should one be handed over.)

A method may carry a training recipe (``Method.finetune.defaults``) that applies unless the
config overrides it: LAC (Xie et al. 2022) asks for the label-wise decoder head, AdamW
(weight decay 1e-2) with a one-cycle schedule (pct_start 0.2) and an EMA of the weights
(decay 0.9997, both raw and EMA models evaluated, the better kept).  A method may also ask
for extra image views (``Method.finetune.views``, e.g. LAC's weak and strong views).
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .. import ownership
from ..config import TrainConfig
from ..data.bundle import Bundle
from ..device import check_precision, cuda_numerics, grad_scaler, resolve_device, to_cpu
from ..errors import ConfigError
from ..features.backbones import build_backbone
from ..features.extract import ensure_features
from ..features.transforms import ImageSet, image_loader, iterate_loader, persistent_loader
from ..io import read_jsonl
from ..methods.base import Batch, Method
from ..models.image import ImageModel
from . import distributed
from ..sparse_labels import as_sparse
from .callbacks import Callback, EpochFunction, tagged
from .ema import ModelEMA
from .linear import split_scores, train_linear
from .loop import fit
from .prepare import build_run_method, prepare_run
from .result import RunResult

FINETUNE_EPOCHS = 10  # Cole et al. §6.1
LINEAR_INIT_FINETUNE_EPOCHS = 5  # Cole et al. §6.1, "+LinearInit" rows
ONECYCLE_PCT_START = 0.2  # Xie et al. §4.1 / authors' code
ADAMW_WEIGHT_DECAY = 1e-2  # Xie et al. §4.1


@dataclass
class FinetuneResult(RunResult):
    """A :class:`RunResult` plus what the fine-tuning run resolved (recipe, LinearInit phase)."""

    finetune: dict = field(default_factory=dict)


def resolve_recipe(config: TrainConfig, method: Method) -> dict:
    """Head, optimizer, EMA decay and epochs of a fine-tuning run (config > method recipe > Cole)."""
    needs = method.finetune  # the method's declared needs (spmlkit.methods.base.FinetuneNeeds)
    defaults = dict(needs.defaults)
    head = config.head
    want = defaults.get("head")
    if want and head != want:
        if head != "linear":  # "linear" is the config's default: the method's wish wins over it
            raise ConfigError(f"method {method.name!r} needs the {want!r} head, not {head!r}")
        head = want
    if needs.embeddings and head != "decoder":
        raise ConfigError(f"method {method.name!r} needs label-wise embeddings (head 'decoder')")
    optimizer = config.optimizer if config.optimizer != "auto" else defaults.get("optimizer", "adam")
    ema = config.ema_decay if config.ema_decay is not None else float(defaults.get("ema_decay", 0.0))
    epochs = config.finetune_epochs or (LINEAR_INIT_FINETUNE_EPOCHS if config.linear_init else FINETUNE_EPOCHS)
    if config.linear_init and head == "decoder":
        raise ConfigError("LinearInit trains a head on pooled features; it cannot initialise the 'decoder' head "
                          "(Xie et al. §4.2 make the same remark)")
    return {"head": head, "optimizer": optimizer, "ema_decay": ema, "epochs": int(epochs),
            "views": tuple(needs.views)}


def make_optimizer(name: str, params, *, lr: float, device: torch.device, steps: int):
    """``(optimizer, scheduler or None)`` of a fine-tuning run: ``adam`` (Cole et al.: Adam,
    no weight decay, no schedule) or ``adamw-onecycle`` (Xie et al.: AdamW + OneCycle,
    stepped per iteration).  On CUDA the fused implementation (one kernel for all
    parameters; under ``16-mixed`` the gradient scaler's inf check then stays on the
    device instead of an ``.item()`` per step); elsewhere the default
    one, so CPU results are unchanged."""
    fused = {"fused": True} if torch.device(device).type == "cuda" else {}
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, **fused), None
    if name == "adamw-onecycle":
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=ADAMW_WEIGHT_DECAY, **fused)
        return opt, torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(steps, 1),
                                                        pct_start=ONECYCLE_PCT_START)
    raise ConfigError(f"unknown optimizer {name!r}; expected adam or adamw-onecycle")


class ImageLearner:
    """One image model (``G = 1``) implementing the :class:`~spmlkit.training.loop.Learner` protocol.

    ``device``: the model, its optimizer and EMA live there (moved before the
    optimizer is made); batches come from a DataLoader (``num_workers`` worker
    processes, pinned memory and non-blocking copies on CUDA) and the model computes in
    ``precision`` (``32``; ``bf16`` / ``16-mixed`` autocast, float16 with a gradient
    scaler); ``channels_last`` memory format (default: on CUDA only, so CPU runs are
    unchanged); ``compile``: ``torch.compile`` the model in place."""

    n_members = 1

    def __init__(self, paths: dict[str, list[str]], observed: np.ndarray, model: ImageModel, *, lr: float,
                 seed: int, batch_size: int, image_size: int, epochs: int, views=("train",),
                 optimizer: str = "adam", ema_decay: float = 0.0, num_workers: int = 0, evaluate=None,
                 device="cpu", precision: str = "32", channels_last: bool | None = None, compile: bool = False):
        self.device = torch.device(device)
        self.precision = precision
        self.channels_last = self.device.type == "cuda" if channels_last is None else bool(channels_last)
        model.precision = precision
        model.to(self.device)
        if self.channels_last:
            model.to(memory_format=torch.channels_last)
        self.scaler = grad_scaler(self.device, precision)
        self._loader = self._sampler = None  # the persistent training loader (num_workers > 0)
        self.paths = paths
        self.model = model

        self.observed = as_sparse(observed, dtype=np.int8)  # sparse; each batch's block is built on the device
        self._observed_dev = self.observed.to(self.device)
        self.n_train = len(paths["train"])
        if len(self.observed) != self.n_train:
            raise ConfigError(f"{len(self.observed)} observation rows for {self.n_train} training images")
        self.batch_size, self.image_size, self.num_workers = int(batch_size), int(image_size), int(num_workers)
        self.views = tuple(views)
        self.generator = torch.Generator().manual_seed(int(seed))
        self.train_set = ImageSet(paths["train"], self.views, image_size, seed)
        self._eval_sets: dict = {}
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer, self.scheduler = make_optimizer(optimizer, params, lr=lr, device=self.device,
                                                        steps=epochs * math.ceil(self.n_train / self.batch_size))
        self.ema = ModelEMA(model, ema_decay) if ema_decay > 0 else None
        if compile:  # after the EMA's copy (which stays uncompiled); in place: the state dict keeps its names
            model.compile()
        self.evaluate = evaluate
        self.choice = "raw"  # which model the last validation kept ("raw" or "ema")
        self.val_log: list[dict] = []

    # ------------------------------------------------------------------ training
    def batches(self, epoch: int):
        """The epoch's batches; in a distributed run each rank loads and yields only its
        shard of every global batch (``shard``, ``global_batch`` set), as the linear
        learner does, so the loop computes the one-process loss of the whole batch."""
        perm = torch.randperm(self.n_train, generator=self.generator, device="cpu")
        rows = [perm[s:s + self.batch_size].tolist() for s in range(0, self.n_train, self.batch_size)]
        self.train_set.epoch = epoch
        ctx = distributed.context()
        shards = [distributed.shard_bounds(len(r), ctx.world_size, ctx.rank) for r in rows]  # (0, n) in one process
        local = [r[a:b] for r, (a, b) in zip(rows, shards)]
        if self.num_workers > 0:  # one loader, its worker processes kept from epoch to epoch
            if self._loader is None:
                self._loader, self._sampler = persistent_loader(
                    self.train_set, num_workers=self.num_workers, pin_memory=self.device.type == "cuda",
                    prefetch_factor=4 if self.device.type == "cuda" else None)
            self._sampler.batches = [[(epoch, i) for i in r] for r in local if r]
            loaded = iter(iterate_loader(self._loader))
        else:
            loaded = iter(image_loader(self.train_set, [r for r in local if r], num_workers=0,
                                       pin_memory=self.device.type == "cuda"))
        S, dev, obs = self.image_size, self.device, self._observed_dev
        # the epoch's row numbers reach the device in one copy (pinned, not blocking); every
        # batch's index and observations are slices of it and of the device's observations:
        # no copy from pageable memory per step
        perm_dev = perm if dev.type == "cpu" else \
            (perm.pin_memory() if dev.type == "cuda" else perm).to(dev, non_blocking=True)
        L = obs.shape[1]
        for t, (r, mine, (a, b)) in enumerate(zip(rows, local, shards)):
            views = next(loaded) if mine else tuple(torch.zeros(0, 3, S, S, device="cpu") for _ in self.views)
            views = tuple(self._to_device(v) for v in views)
            s = t * self.batch_size
            idx = perm_dev[s + a:s + b].view(1, -1)
            batch = Batch(inputs=views[0], index=idx, observed=obs.block(idx.reshape(1, -1)),
                          distinct=True, extras=dict(zip(self.views[1:], views[1:])))
            if ctx.enabled:
                whole = perm_dev[s:s + len(r)].view(1, -1)
                batch.shard = (a, b)
                batch.global_batch = Batch(inputs=None, index=whole, distinct=True,
                                           observed=obs.block(whole.reshape(1, -1)))
            yield batch

    def _to_device(self, x: torch.Tensor) -> torch.Tensor:
        """A loaded batch of images on the device (non-blocking from pinned memory), in the
        model's memory format.  On the CPU with the default format: the tensor itself."""
        x = x.to(self.device, non_blocking=True)
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x

    def backward_scale(self, loss: torch.Tensor) -> torch.Tensor:
        """The loss the loop back-propagates: scaled by the gradient scaler under ``16-mixed``."""
        return loss if self.scaler is None else self.scaler.scale(loss)

    def grad_scale(self):
        """The factor in this step's gradients (a device tensor, read without synchronising), or None."""
        if self.scaler is None:
            return None
        scale = self.scaler._get_scale_async()  # updated in place by scaler.update(): keep this step's value
        return None if scale is None else scale.clone()

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def step(self) -> None:
        if self.scaler is not None:  # unscales, skips a step with inf/nan gradients, adapts the scale
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()
        if not self.model.freeze_bn:  # BatchNorm statistics moved on each rank's shard: keep rank 0's
            distributed.broadcast_buffers_(self.model)
        if self.ema is not None:
            self.ema.update(self.model)

    # ---------------------------------------------------------------- evaluation
    @torch.no_grad()
    def _logits(self, model, split: str) -> torch.Tensor:
        ds = self._eval_sets.get(split)
        if ds is None:
            ds = self._eval_sets[split] = ImageSet(self.paths[split], ("eval",), self.image_size)
        bs = max(self.batch_size, 16)
        ctx = distributed.context()
        a, b = distributed.shard_bounds(len(ds), ctx.world_size, ctx.rank)  # all rows in one process
        rows = [list(range(s, min(s + bs, b))) for s in range(a, b, bs)]
        was = model.training
        model.eval()
        loader = image_loader(ds, rows, num_workers=self.num_workers, pin_memory=self.device.type == "cuda")
        out = [model(self._to_device(x))[0] for (x,) in loader]
        model.train(was)
        mine = torch.cat(out).unsqueeze(0) if out else torch.zeros(1, 0, self.observed.shape[1], device=self.device)
        # every rank scores its share of the rows and gets all of them (identity in one process)
        return distributed.all_gather_cat(mine, dim=1, sizes=distributed.shard_sizes(len(ds), ctx.world_size))

    def scores(self, split: str) -> torch.Tensor:
        """``(1, N, L)`` logits.  On ``val`` with an EMA, both models are scored and the
        better one is returned (and snapshotted by :meth:`member_state`)."""
        raw = self._logits(self.model, split)
        if split != "val" or self.ema is None or self.evaluate is None:
            return raw
        ema = self._logits(self.ema.model, split)
        s_raw, s_ema = self.evaluate(raw)[0], self.evaluate(ema)[0]
        self.choice = "ema" if s_ema > s_raw else "raw"
        self.val_log.append({"val_raw": s_raw, "val_ema": s_ema, "kept": self.choice})
        return ema if self.choice == "ema" else raw

    # --------------------------------------------------------------------- state
    def member_state(self, g: int) -> dict:
        src = self.ema.model if (self.ema is not None and self.choice == "ema") else self.model
        return {k: v.detach().clone() for k, v in src.state_dict().items()}

    def load_member_state(self, g: int, state: dict) -> None:
        self.model.load_state_dict(state)  # copies into the model's device

    def state_dict(self) -> dict:
        out = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
               "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
               "ema": None if self.ema is None else self.ema.state_dict(), "generator": self.generator.get_state(),
               "torch_rng": torch.get_rng_state(), "choice": self.choice, "val_log": list(self.val_log)}
        if self.scaler is not None:
            out["scaler"] = self.scaler.state_dict()
        if self.device.type == "cuda":
            out["cuda_rng"] = torch.cuda.get_rng_state(self.device)
        return out

    def load_state_dict(self, state: dict) -> None:
        """Loads a state written on any device: the model copies into its tensors, the
        optimizer casts its state to the parameters' device."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scaler is not None and state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        if self.device.type == "cuda" and state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(state["cuda_rng"].cpu(), self.device)
        if self.scheduler is not None and state.get("scheduler") is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        if self.ema is not None and state.get("ema") is not None:
            self.ema.load_state_dict(state["ema"])
        self.generator.set_state(state["generator"].cpu())
        torch.set_rng_state(state["torch_rng"].cpu())
        self.choice, self.val_log = state["choice"], list(state["val_log"])


# --------------------------------------------------------------------------- LinearInit
def fold_standardization(head_state: dict, mean, std, head: str) -> dict:
    """Head weights trained on standardised features ``(x − μ)/σ`` -> the same function of raw ``x``."""
    if mean is None:
        return {k: v.clone() for k, v in head_state.items()}
    pre = "" if head == "linear" else "hidden."
    out = {k: v.clone() for k, v in head_state.items()}
    W, b = head_state[pre + "weight"], head_state[pre + "bias"]  # (D, H), (1, H)
    mu = torch.as_tensor(mean, dtype=W.dtype, device=W.device)
    sd = torch.as_tensor(std, dtype=W.dtype, device=W.device)
    out[pre + "weight"] = W / sd[:, None]
    out[pre + "bias"] = b - (mu / sd) @ W
    return out


def linear_init_phase(bundle: Bundle, config: TrainConfig, *, seed: int, run_dir=None, resume: bool = True,
                      log=None) -> RunResult:
    """Phase 1 of LinearInit: the linear setting on cached features of the same backbone."""
    dctx = distributed.context()
    if dctx.enabled and not dctx.is_main:
        distributed.barrier()  # rank 0 extracts (or finds) the cached features first; the others then read them
    fs = ensure_features(bundle, backbone=config.backbone, weights=config.weights, image_size=config.image_size,
                         batch_size=max(config.batch_size, 16), num_workers=config.num_workers, log=log,
                         device=config.device, precision=config.precision)
    if dctx.enabled and dctx.is_main:
        distributed.barrier()
    cfg = config.replace(setting="linear", feature_set=fs, lr=config.linear_init_lr, linear_init=False,
                         standardize=False)  # raw features: see the module docstring
    (res,) = train_linear(bundle, cfg, lrs=[config.linear_init_lr], seeds=[seed], run_dir=run_dir, resume=resume,
                          keep_state=True)
    return res


def prepare_finetune(bundle: Bundle, config: TrainConfig, *, lr: float, seed: int, run_dir=None,
                     resume: bool = True, log=None, method: Method | None = None, device=None):
    """Everything before the first fine-tuning epoch: ``(learner, method, evaluate, info)``;
    ``info["parts"]`` is the run's :class:`~spmlkit.training.prepare.RunParts`.

    With ``config.linear_init`` this runs the linear phase and hands its best head and
    method state over (``info["linear_init"]`` is the phase-1 :class:`RunResult`).
    ``method`` / ``device``: the run's method (fresh, not set up) and resolved device when
    the caller has them already."""
    if device is None:
        device = resolve_device(config.device, option="device")
    check_precision(config.precision, device, option="precision")
    if bundle.kind != "images":
        raise ConfigError(f"{bundle.path} holds feature vectors; fine-tuning needs an image bundle")
    if method is None:
        method = build_run_method(config)
    recipe = resolve_recipe(config, method)
    if config.linear_init and method.setting == "finetune":
        raise ConfigError(f"method {config.method!r} trains end to end only; LinearInit needs its linear setting")
    if distributed.context().enabled:
        if len(recipe["views"]) > 1 and not method.global_extras:
            raise ConfigError(f"method {config.method!r} trains on several views of each image but does not declare "
                              "the outputs its loss needs (Method.global_extras); run it in one process")
    info: dict = {"recipe": dict(recipe, views=list(recipe["views"]))}
    init = None
    if config.linear_init:
        init = linear_init_phase(bundle, config, seed=seed, resume=resume, log=log,
                                 run_dir=None if run_dir is None else Path(run_dir) / "linear-init")
        info["linear_init"] = init
    torch.manual_seed(seed)
    with torch.device("cpu"):  # built on the CPU (the same seeded weights everywhere), moved by the learner
        backbone = build_backbone(config.backbone, weights=config.weights, image_size=config.image_size)
        model = ImageModel(backbone, bundle.n_labels, head=recipe["head"], hidden=config.hidden, seed=seed)
    model.freeze_bn = bool(config.freeze_bn)
    if init is not None:
        st = init.state
        head = fold_standardization(st["head"], st["mean"], st["std"], recipe["head"])
        model.head.load_state_dict({k: v.unsqueeze(0) for k, v in head.items()})
    if config.sync_bn and distributed.context().enabled and device.type == "cuda":
        # BatchNorm statistics over the global batch (one process: plain BatchNorm is the same)
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    # the run's parts (observations in the configured regime, validation, evaluator, k): training/prepare.py
    parts = prepare_run(bundle, config, method=method, device=device)
    evaluate = parts.evaluate
    info["selection"], info["parts"] = parts.selection, parts
    paths = {s: bundle.paths(s) for s in ("train", "val", "test")}
    learner = ImageLearner(paths, parts.observed, model, lr=lr, seed=seed, batch_size=config.batch_size,
                           image_size=config.image_size, epochs=recipe["epochs"], views=recipe["views"],
                           optimizer=recipe["optimizer"], ema_decay=recipe["ema_decay"],
                           num_workers=config.num_workers, evaluate=evaluate, device=device,
                           precision=config.precision, channels_last=config.channels_last, compile=config.compile)
    info["expected_positives"] = parts.expected_positives
    parts.setup_method(learner.observed, lrs=(lr,), seeds=(seed,), epochs=recipe["epochs"], run_dir=run_dir,
                       dist_ctx=distributed.context())
    if init is not None and init.state.get("method"):
        method.load_member_state(0, init.state["method"])
    return learner, method, evaluate, info


def train_finetune(bundle: Bundle, config: TrainConfig, *, lrs: list[float] | None = None,
                   seeds: list[int] | None = None, run_dir: str | Path | None = None, resume: bool = True,
                   on_epoch=None, keep_state: bool = False, log=None, method: Method | None = None,
                   device=None, callbacks=()) -> list[RunResult]:
    """Fine-tune ``config.method`` end to end on ``bundle``'s images; one result per (lr, seed),
    trained one after another.  With several members and a ``run_dir``, member ``g`` runs in
    ``run_dir/member<g>-lr<lr>-s<seed>/``.  ``method``: the first member's method when the
    caller has built it (fresh, not set up); every other member builds its own.  ``callbacks`` /
    ``on_epoch``: the loop's (:mod:`spmlkit.training.callbacks`), told each member's epochs
    with the member's number in the rows."""
    lrs, seeds = config.members(lrs, seeds)
    log = log or (lambda m: print(m, file=sys.stderr))
    if run_dir is not None and distributed.context().is_main:  # linear-init/ and member folders are made in it
        ownership.folder(run_dir, "run")
    dev = device if device is not None else resolve_device(config.device, option="device")
    with cuda_numerics(dev, config.precision):  # (restored after)
        callbacks = [*callbacks, *([EpochFunction(on_epoch)] if on_epoch is not None else [])]
        return _train_members(bundle, config, lrs, seeds, run_dir=run_dir, resume=resume, callbacks=callbacks,
                              keep_state=keep_state, log=log, method=method, device=device)


def _train_members(bundle, config, lrs, seeds, *, run_dir, resume, callbacks, keep_state, log, method,
                   device) -> list[RunResult]:
    results = []
    for g, (lr, seed) in enumerate(zip(lrs, seeds)):
        rd = None
        if run_dir is not None:
            rd = Path(run_dir) if len(lrs) == 1 else Path(run_dir) / f"member{g}-lr{lr:g}-s{seed}"
        results.append(_train_one(bundle, config, lr=lr, seed=seed, run_dir=rd, resume=resume,
                                  callbacks=tagged(callbacks, row={"member": g}), keep_state=keep_state, log=log,
                                  method=method if g == 0 else None, device=device))
    return results


def evaluate_initial(learner: ImageLearner, method: Method, evaluate) -> tuple[float, dict]:
    """Epoch 0: the validation score of the model as fine-tuning receives it (after
    LinearInit: the linear model, same scores as its best linear epoch) and a snapshot of it
    (model and method state), so a fine-tuning run that only gets worse keeps it.

    It leaves the global random state as it found it: iterating the validation loader draws
    a seed from torch's CPU generator, and that draw would shift every later draw of the
    run (shuffling, augmentation), so scoring epoch 0 would change the fine-tuned epochs."""
    ctx = distributed.context()
    with torch.no_grad(), torch.random.fork_rng(devices=[]):  # CPU generator saved and restored
        val_logits = learner._logits(learner.model, "val")  # the raw model (an EMA equals it now)
    own = evaluate(val_logits) if ctx.is_main else None
    score = float(distributed.broadcast_object(own)[0])
    return score, {"learner": learner.member_state(0), "method": method.member_state(0)}


def _epoch_seconds(run_dir, seen: dict[int, float]) -> list[float]:
    """Seconds of each fine-tuning epoch (training + validation), from ``metrics.jsonl``
    when the run has a folder (so epochs of an interrupted invocation count too)."""
    if run_dir is not None and (Path(run_dir) / "metrics.jsonl").exists():
        for row in read_jsonl(Path(run_dir) / "metrics.jsonl"):
            seen.setdefault(int(row["epoch"]), float(row["epoch_seconds"]))
    return [round(seen[e], 2) for e in sorted(seen)]


class _EpochSeconds(Callback):
    """The seconds of each fine-tuning epoch this invocation trains (for the result)."""

    def __init__(self):
        self.seen: dict[int, float] = {}

    def on_epoch_end(self, fit, info: dict) -> None:
        self.seen[int(info["epoch"])] = float(info["seconds"])


def _train_one(bundle, config, *, lr, seed, run_dir, resume, callbacks, keep_state, log,
               method=None, device=None) -> FinetuneResult:
    t0 = time.perf_counter()
    learner, method, evaluate, info = prepare_finetune(bundle, config, lr=lr, seed=seed, run_dir=run_dir,
                                                       resume=resume, log=log, method=method, device=device)
    epochs = info["recipe"]["epochs"]
    # Epoch 0: after LinearInit the starting model is already a trained classifier; it
    # competes with the fine-tuned epochs for the best validation score.
    epoch0 = evaluate_initial(learner, method, evaluate) if config.linear_init else None
    timed = _EpochSeconds()
    parts = info["parts"]  # the test and training splits are scored as in the linear setting (split_scores)
    tracker = fit(learner, method, epochs=epochs, evaluate=evaluate, patience=parts.patience, run_dir=run_dir,
                  resume=resume, callbacks=[timed, *callbacks], member_info=[{"lr": lr, "seed": seed}])
    m = tracker.members[0]
    best_epoch, best_score, snapshot = m.best_epoch, m.best_score, m.snapshot
    if epoch0 is not None and math.isfinite(epoch0[0]) and (not best_epoch or not epoch0[0] < best_score):
        # fine-tuning never beat the starting model: keep it (a tie keeps the simpler model)
        best_epoch, best_score, snapshot = 0, epoch0[0], epoch0[1]
    if snapshot is not None:
        learner.load_member_state(0, snapshot["learner"])
    test_logits = learner.scores("test")[0].cpu().numpy() if bundle.size("test") else np.zeros((0, bundle.n_labels))
    train_logits = learner.scores("train")[0].cpu().numpy() if parts.Y_train is not None else None
    scored = split_scores(test_logits, train_logits, Y_test=parts.Y_test, Z_test=parts.Z_test, Y_train=parts.Y_train,
                          empty=config.empty_classes, test_mask=parts.test_mask)
    epoch_seconds = _epoch_seconds(run_dir, timed.seen)
    details = {"recipe": info["recipe"], "val_models": learner.val_log, "image_size": config.image_size,
               "backbone": config.backbone, "epoch_seconds": epoch_seconds,
               "seconds_per_epoch": round(sum(epoch_seconds) / len(epoch_seconds), 2) if epoch_seconds else None}
    if epoch0 is not None:
        details["epoch0_val_score"] = epoch0[0]
    init = info.get("linear_init")
    if init is not None:
        details["linear_init"] = {"lr": init.lr, "best_epoch": init.best_epoch, "val_score": init.val_score,
                                  "test_map": init.test_map, "epochs_run": init.epochs_run, "seconds": init.seconds}
    state = None
    if keep_state:
        state = {"model": {k: v.detach().cpu().clone() for k, v in learner.model.state_dict().items()},
                 "spec": learner.model.spec(), "method": to_cpu((snapshot or {}).get("method", {})),
                 "val_logits": learner.scores("val")[0].cpu().numpy() if bundle.size("val")
                 else np.zeros((0, bundle.n_labels)),
                 "test_logits": test_logits}
    return FinetuneResult(
        method=config.method, params=dict(method.params), lr=lr, batch_size=config.batch_size, seed=seed,
        best_epoch=len(m.history) if parts.selection == "last" else best_epoch,
        val_score=best_score if snapshot is not None else math.nan, selection=info["selection"], **scored,
        epochs_run=len(m.history), val_history=list(m.history), seconds=time.perf_counter() - t0, state=state,
        finetune=details, expected_positives=info.get("expected_positives"))
