"""LAC: label-aware global consistency (Xie, Xiao & Huang, NeurIPS 2022).

Fine-tuning only (``setting="finetune"``): the model is the label-wise embedding model
(backbone + :class:`~spmlkit.models.decoder.LabelDecoder`), each training image is seen in
a weak view (flip) and a strong view (flip + Cutout + RandAugment + colour jitter), and the
objective is Eq. 3::

    L = L_AN(weak) + λ_plc · L_PLC(strong | weak) + λ_lac · L_LAC      (stage 2)
    L = L_AN(weak) + λ_plc · L_PLC(strong | weak)                       (stage 1)

* ``L_AN`` (Eq. 2) on the weak view, ``L_PLC`` Eq. 4 (:mod:`spmlkit.losses.plc`), both in
  the paper's ``1/b Σ_i Σ_j`` form (sum over labels, mean over the batch);
* ``L_LAC`` Eq. 5–7 (:mod:`spmlkit.losses.lac`) over the current label-wise embeddings of
  both views plus a first-in-first-out memory queue of the last ``K`` valid embeddings and
  their labels (:class:`MemoryQueue`);
* two stages (§3.2, "Two-stage training strategy"): stage 1 for ``stage1_epochs`` epochs
  (default: half of the fine-tuning epochs) with δ = 0.6, stage 2 with δ = 0.9 and LAC
  (thresholds of the authors' README).

Training recipe (applied by the fine-tuning trainer unless the config overrides it,
Xie et al. §4.1): the label-wise decoder head, AdamW (weight decay 1e-2) with a one-cycle
learning rate (peak = the configured lr; the paper uses 1e-4, pct_start 0.2), EMA of the
weights with decay 0.9997 per step, both the raw and the EMA model evaluated each epoch and
the better one kept.

Deviations (documented in docs/images.md): the queue is a true circular FIFO that drops
the oldest entries (the authors' queue resets its write pointer to 0 when full); stage 2
continues from the end of stage 1 inside one run rather than restarting from the best
stage-1 checkpoint with a new schedule; PLC covers unobserved labels only, as Eq. 4 says.
"""
from __future__ import annotations

import torch

from ..errors import ConfigError
from ..losses import get_loss
from ..losses.lac import LAC_FORMS, label_aware_contrastive
from ..params import Interval, Options, check_params
from .base import Batch, Component, FinetuneNeeds, Method, TrainContext, register_method


def reduce_sum_labels(loss: torch.Tensor) -> torch.Tensor:
    """``1/b Σ_i Σ_j``: sum over labels, mean over the batch -> ``(...)`` (Xie Eq. 2, 4)."""
    return loss.sum(dim=-1).mean(dim=-1)


class MemoryQueue:
    """First-in-first-out ring buffer of ``size`` entries, each ``V`` embeddings of dimension
    ``d`` (allocated on the first push) and a label index.  Pushing ``n`` entries overwrites
    the ``n`` oldest once full; pushing more than ``size`` keeps the newest ``size``."""

    def __init__(self, size: int):
        if size < 0:
            raise ConfigError(f"queue size K must be >= 0, got {size}")
        self.size = int(size)
        self.z: torch.Tensor | None = None
        self.labels = torch.full((self.size,), -1, dtype=torch.long, device="cpu")  # moves to the embeddings' device
        self.ptr = 0  # next write position
        self.count = 0

    def push(self, z: torch.Tensor, labels: torch.Tensor) -> None:
        if self.size == 0 or len(z) == 0:
            return
        z, labels = z.detach(), labels.detach().long()
        if self.z is None:
            self.z = torch.zeros((self.size, *z.shape[1:]), dtype=z.dtype, device=z.device)
        if self.z.device != z.device:  # e.g. a queue resumed from a checkpoint (CPU tensors) on a GPU
            self.z = self.z.to(z.device)
        self.labels = self.labels.to(z.device)
        labels = labels.to(z.device)
        if len(z) > self.size:
            z, labels = z[-self.size:], labels[-self.size:]
        pos = (self.ptr + torch.arange(len(z), device=z.device)) % self.size
        self.z[pos] = z.to(self.z.dtype)
        self.labels[pos] = labels
        self.ptr = int((self.ptr + len(z)) % self.size)
        self.count = min(self.count + len(z), self.size)

    def contents(self) -> tuple[torch.Tensor | None, torch.Tensor]:
        """Stored entries from oldest to newest: ``(z (n, V, d), labels (n,))``."""
        if self.count == 0:
            return None, self.labels[:0]
        start = (self.ptr - self.count) % self.size
        order = (start + torch.arange(self.count, device=self.labels.device)) % self.size
        return self.z[order], self.labels[order]

    def state_dict(self) -> dict:
        return {"size": self.size, "z": None if self.z is None else self.z.clone(), "labels": self.labels.clone(),
                "ptr": self.ptr, "count": self.count}

    def load_state_dict(self, s: dict, device: torch.device | str | None = None) -> None:
        """Load a state written on any device onto ``device`` (default: where it was
        saved, i.e. the CPU for a checkpoint): a queue resumed on a GPU must be there
        before the first stage-2 step concatenates it with the batch's embeddings."""
        self.size, self.ptr, self.count = int(s["size"]), int(s["ptr"]), int(s["count"])
        self.z = None if s["z"] is None else s["z"].to(device, copy=True)
        self.labels = s["labels"].to(device, copy=True)


class LabelAwareConsistency(Component):
    """LAC's state: the training stage (by epoch), its threshold δ, and the memory queue."""

    supports_members = False
    #: the values Xie et al.'s stages allow (spmlkit.params; also declared with the registration)
    _parameter_constraints = {"threshold_stage1": [Interval(float, 0.5, 1.0)],
                              "threshold_stage2": [Interval(float, 0.5, 1.0)],
                              "queue_size": [Interval(int, 0)], "stage1_epochs": [Interval(int, 0), None]}

    def __init__(self, *, threshold_stage1: float, threshold_stage2: float, queue_size: int,
                 stage1_epochs: int | None):
        check_params(dict(threshold_stage1=threshold_stage1, threshold_stage2=threshold_stage2, queue_size=queue_size,
                          stage1_epochs=stage1_epochs), self._parameter_constraints, owner="method 'lac'")
        self.thresholds = (float(threshold_stage1), float(threshold_stage2))
        self.stage1_epochs = stage1_epochs
        self.queue = MemoryQueue(queue_size)
        self.stage = 1

    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        if ctx.n_members != 1:
            raise ConfigError("lac trains one model at a time")
        if self.stage1_epochs is None:
            self.stage1_epochs = max(1, ctx.epochs // 2)

    @property
    def threshold(self) -> float:
        return self.thresholds[self.stage - 1]

    def on_epoch_start(self, epoch: int) -> None:
        self.stage = 1 if epoch <= self.stage1_epochs else 2

    def after_optimizer_step(self, batch: Batch) -> None:
        push = batch.extras.pop("lac_push", None)
        if push is not None:
            self.queue.push(*push)

    def on_epoch_end(self, epoch, predict_train) -> dict:
        return {"lac_stage": self.stage, "lac_queue": self.queue.count}

    def state_dict(self) -> dict:
        return {"stage": self.stage, "stage1_epochs": self.stage1_epochs, "queue": self.queue.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.stage, self.stage1_epochs = int(state["stage"]), state["stage1_epochs"]
        ctx = getattr(self, "ctx", None)
        self.queue.load_state_dict(state["queue"], device=None if ctx is None else ctx.device)


class LACMethod(Method):
    """AN + PLC (+ LAC in stage 2) on two views; see the module docstring."""

    # two image views (inputs, extras["strong"]), the decoder's label-wise embeddings, Xie et al.'s recipe
    finetune = FinetuneNeeds(views=("weak", "strong"), embeddings=True,
                             defaults={"head": "decoder", "optimizer": "adamw-onecycle", "ema_decay": 0.9997})
    global_extras = {"strong_logits": -2, "z": 0}  # (1, b, L) and (b, L, 2, p): gathered in distributed steps

    def __init__(self, *, lambda_plc: float, lambda_lac: float, temperature: float, lac_form: str,
                 state: LabelAwareConsistency):
        super().__init__("lac", "an", components=[state], regularizers=[self._plc, self._lac],
                         reduction=reduce_sum_labels, setting="finetune")
        check_params({"lac_form": lac_form}, {"lac_form": [Options(*LAC_FORMS)]}, owner="method 'lac'")
        self.state = state
        self.lambda_plc, self.lambda_lac = float(lambda_plc), float(lambda_lac)
        self.temperature, self.lac_form = float(temperature), lac_form
        self._plc_loss = get_loss("plc")

    def forward(self, model, batch: Batch) -> torch.Tensor:
        weak, strong = batch.inputs, batch.extras["strong"]
        b = weak.shape[0]
        x = torch.cat([weak, strong])
        if self.state.stage == 2 and self.lambda_lac > 0:
            logits, emb = model.embed(x)
            z = model.project(emb)  # (2b, L, p)
            batch.extras["z"] = torch.stack([z[:b], z[b:]], dim=2)  # (b, L, 2, p)
        else:
            logits = model(x)
        batch.extras["strong_logits"] = logits[:, b:]
        return logits[:, :b]

    def _plc(self, logits, batch: Batch, model) -> torch.Tensor:
        if self.lambda_plc == 0:
            return logits.new_zeros(logits.shape[0])
        loss = self._plc_loss.fn(batch.extras["strong_logits"], batch.observed, threshold=self.state.threshold,
                                 weak_logits=logits)
        return self.lambda_plc * reduce_sum_labels(loss)

    def _lac(self, logits, batch: Batch, model) -> torch.Tensor:
        z = batch.extras.get("z")
        if z is None:
            return logits.new_zeros(logits.shape[0])
        p_w = torch.sigmoid(logits.detach()[0])
        obs = batch.observed[0]
        valid = (obs == 1) | ((obs == 0) & (p_w >= self.state.threshold))  # Eq. 5-6 (observed positive: p^w := 1)
        i, j = valid.nonzero(as_tuple=True)
        zv = z[i, j]  # (n, 2, p)
        qz, ql = self.state.queue.contents()
        b, L = obs.shape
        loss = label_aware_contrastive(zv, j, queue_z=qz, queue_labels=ql, temperature=self.temperature,
                                       form=self.lac_form, n_slots=b * L * z.shape[2])
        batch.extras["lac_push"] = (zv.detach(), j.detach())
        return self.lambda_lac * loss.view(1)


@register_method("lac", regime="single_positive", reference="Xie, Xiao & Huang, NeurIPS 2022", setting="finetune",
                 family="xie2022",
                 constraints={**LabelAwareConsistency._parameter_constraints, "lac_form": [Options(*LAC_FORMS)]})
def build_lac(threshold_stage1: float = 0.6, threshold_stage2: float = 0.9, lambda_plc: float = 1.0,
              lambda_lac: float = 1.0, temperature: float = 0.5, queue_size: int = 512,
              stage1_epochs: int | None = None, lac_form: str = "paper") -> Method:
    """Label-aware global consistency: AN + pseudo-label consistency + label-aware contrastive loss (Xie Eq. 3).

    ``stage1_epochs=None`` = half of the fine-tuning epochs (stage 1 = AN + PLC).
    ``lac_form``: ``paper`` (Eq. 7 as printed) or ``supcon`` (the authors' code)."""
    state = LabelAwareConsistency(threshold_stage1=threshold_stage1, threshold_stage2=threshold_stage2,
                                  queue_size=queue_size, stage1_epochs=stage1_epochs)
    return LACMethod(lambda_plc=lambda_plc, lambda_lac=lambda_lac, temperature=temperature, lac_form=lac_form,
                     state=state)
