"""Large-Loss modification (Kim, Kim, Akata & Lee, "Large Loss Matters in Weakly Supervised
Multi-Label Classification", CVPR 2022): LL-R, LL-Ct, LL-Cp.

The model is trained with the "assume negative" BCE (``an``).  Unobserved labels are
noisy negatives; the model memorises them late, and their losses are then the large
ones.  From epoch 2 on, in every batch the ``k`` largest losses **among unobserved
entries** are

* ``ll-r``  — rejected (loss set to 0);
* ``ll-ct`` — temporarily corrected: their loss becomes BCE with target 1 for this step;
* ``ll-cp`` — corrected as in LL-Ct **and remembered**: from then on they are observed
  positives (the component keeps a per-member ``(G, N, L)`` mask and feeds it to the loss
  as an ``observed`` override; the dataset is never modified).

How many (the authors' code, snucml/LargeLossMatters; LL ``losses.py``, ``train.py``, ``config.py``)
--------------------------------------------------------------------------------------
``delta_rel`` (Δ_rel) is a **fraction** per epoch.  The authors' CLI flag is divided by
100 in their ``config.py``: their README's ``--delta_rel`` values 0.1–0.5 mean
0.1 %–0.5 % per epoch, i.e. ``delta_rel = 0.001 … 0.005`` here.

* LL-R, LL-Ct: in epoch ``t`` (1-based) ``k = ⌈B·L·(t − 1)·Δ_rel⌉`` (the fraction
  ``(t − 1)·Δ_rel`` is capped at 1);
* LL-Cp: ``k = ⌈B·L·Δ_rel⌉`` in every epoch ``t ≥ 2`` (each batch adds new permanent
  corrections, so the count need not grow);
* epoch 1 is plain AN for all three (the authors' ``clean_rate == 1`` branch).

``B`` is the size of the batch at hand (the last batch may be smaller) and ``L`` the
number of labels.

Deviations from the authors' code (deliberate)
----------------------------------------------
* Exactly ``k`` entries are selected, by ``topk`` on the losses of unobserved entries.
  The authors select every entry whose masked loss is ``≥`` the k-th largest, and write
  the permanent correction only for entries strictly above it.
* When ``k`` exceeds the batch's unobserved entries the authors' threshold becomes 0
  and observed positives (masked loss 0) are rejected or "corrected" too.  Here ``k`` is
  capped at the number of unobserved entries: observed labels are never touched.

Defaults
--------
``delta_rel`` per method is the value the authors reported best on most of the four
benchmark datasets (snucml/LargeLossMatters issue #4: VOC / COCO / NUS / CUB = LL-R
0.2 / 0.4 / 0.4 / 0.4, LL-Ct 0.2 / 0.2 / 0.2 / 0.4, LL-Cp 0.1 / 0.2 / 0.2 / 0.2, in
the CLI's percent units): LL-R 0.004, LL-Ct 0.002, LL-Cp 0.002.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..errors import ConfigError
from .base import Batch, Component, Method, TrainContext, register_method

REFERENCE = "Kim et al. 2022 (CVPR), Large Loss Matters"
MODES = ("reject", "temporary", "permanent")


class LargeLossModification(Component):
    """Reject or correct the largest losses among unobserved entries (Kim et al. 2022, Sec. 3.2).

    Works on a per-entry loss ``(G, B, L)`` (the ``an`` loss); members are handled
    independently (one ``topk`` per member).  See the module docstring for ``k``.
    """

    def __init__(self, mode: str = "reject", delta_rel: float = 0.002):
        if mode not in MODES:
            raise ConfigError(f"large-loss mode must be one of {', '.join(MODES)}, got {mode!r}")
        try:
            delta_rel = float(delta_rel)
        except (TypeError, ValueError):
            raise ConfigError(f"delta_rel must be a number, got {delta_rel!r}") from None
        if not 0.0 <= delta_rel <= 1.0:
            raise ConfigError(f"delta_rel is a fraction per epoch in [0, 1] (the authors' --delta_rel 0.2 is "
                              f"delta_rel=0.002 here), got {delta_rel}")
        self.mode = mode
        self.delta_rel = delta_rel
        self.epoch = 1
        self.corrected: torch.Tensor | None = None
        self.n_modified = 0

    state_alternative = "ll-cp's corrections are permanent, per entry: ll-ct and ll-r keep none"

    def state_bytes(self, ctx: TrainContext) -> int:
        """The permanent corrections (``mode='permanent'``): one bool per member and entry."""
        return ctx.n_members * ctx.n_train * ctx.n_labels if self.mode == "permanent" else 0

    # ------------------------------------------------------------------ hooks
    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        self.epoch = 1
        if self.mode == "permanent":
            self.corrected = torch.zeros((ctx.n_members, ctx.n_train, ctx.n_labels), dtype=torch.bool,
                                         device=ctx.device)

    def on_epoch_start(self, epoch: int) -> None:
        self.epoch = int(epoch)
        self.n_modified = 0

    def fraction(self, epoch: int | None = None) -> float:
        """Fraction of a batch's B·L entries modified in ``epoch`` (default: the current one)."""
        t = self.epoch if epoch is None else int(epoch)
        if t <= 1:
            return 0.0
        if self.mode == "permanent":
            return self.delta_rel
        return min(1.0, (t - 1) * self.delta_rel)

    def n_selected(self, n_entries: int, epoch: int | None = None) -> int:
        """``k = ⌈n_entries · fraction⌉`` (a 1e-9 guard keeps exact products such as 100 · 0.03
        from rounding up by floating-point error)."""
        frac = self.fraction(epoch)
        if frac <= 0:
            return 0
        return min(n_entries, math.ceil(n_entries * frac - 1e-9))

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        if self.corrected is None:
            return {}
        rows = self._rows(batch)  # only the batch's rows are looked at (no pass over the (G, N, L) table)
        if rows.device.type == "cpu" and not bool(rows.any()):  # (an accelerator always overrides: no host read)
            return {}
        obs = batch.observed
        return {"observed": torch.where(rows.reshape(obs.shape).to(obs.device), torch.ones_like(obs), obs)}

    def modify_loss(self, loss: torch.Tensor, batch: Batch, logits: torch.Tensor,
                    observed: torch.Tensor) -> torch.Tensor:
        if loss.shape[-1] != logits.shape[-1]:
            raise ConfigError("the large-loss modification needs a per-entry loss (..., B, L), such as 'an'; "
                              f"got shape {tuple(loss.shape)}")
        B, L = loss.shape[-2:]
        k = self.n_selected(B * L)
        if k == 0:
            return loss
        selected = self.select(loss, observed.expand_as(loss), k)
        if self.mode == "reject":
            out = loss.masked_fill(selected, 0.0)
        else:
            out = torch.where(selected, F.softplus(-logits), loss)  # BCE with target 1
        if self.mode == "permanent":
            self._remember(batch, selected)
        # a device tensor on an accelerator (read once, at the end of the epoch)
        self.n_modified += int(selected.sum()) if selected.device.type == "cpu" else selected.sum()
        return out

    @staticmethod
    def select(loss: torch.Tensor, observed: torch.Tensor, k: int) -> torch.Tensor:
        """Mask of the ``k`` largest losses among unobserved entries, per leading index (member).

        ``k`` is capped at each member's number of unobserved entries in the batch, so
        observed entries are never selected."""
        shape = loss.shape
        flat = loss.detach().reshape(-1, shape[-2] * shape[-1])
        unobs = (observed == 0).reshape(flat.shape)
        k = min(k, flat.shape[-1])
        top = flat.masked_fill(~unobs, -math.inf).topk(k, dim=-1).indices
        k_eff = unobs.sum(-1, keepdim=True).clamp(max=k)
        keep = torch.arange(k, device=flat.device)[None, :] < k_eff
        return torch.zeros_like(unobs).scatter(-1, top, keep).reshape(shape)

    # --------------------------------------------------------- permanent state
    def _rows(self, batch: Batch) -> torch.Tensor:
        members = torch.arange(self.corrected.shape[0], device=self.corrected.device)[:, None]
        return self.corrected[members, batch.index.to(self.corrected.device)]

    def _remember(self, batch: Batch, selected: torch.Tensor) -> None:
        members = torch.arange(self.corrected.shape[0], device=self.corrected.device)[:, None]
        idx = batch.index.to(self.corrected.device)
        sel = selected.detach().reshape(self.corrected.shape[0], idx.shape[-1], -1).to(self.corrected.device)
        self.corrected[members, idx] = self.corrected[members, idx] | sel

    def on_epoch_end(self, epoch: int, predict_train) -> dict:
        logs = {"large_loss_fraction": self.fraction(epoch), "large_loss_modified": int(self.n_modified)}
        if self.corrected is not None:
            logs["corrected_positives"] = self.corrected.sum((1, 2)).tolist()
        return logs

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "corrected": None if self.corrected is None else self.corrected.clone()}

    def load_state_dict(self, state: dict) -> None:
        self.epoch = state.get("epoch", 1)
        if state.get("corrected") is not None:
            self.corrected = state["corrected"].to(self.corrected.device if self.corrected is not None else "cpu")


@register_method("ll-r", reference=f"{REFERENCE}, LL-R", family="kim2022")
def build_ll_r(delta_rel: float = 0.004) -> Method:
    """Large-Loss rejection: from epoch 2, drop the ⌈B·L·(t−1)·Δ_rel⌉ largest unobserved losses per batch."""
    return Method("ll-r", "an", components=[LargeLossModification("reject", delta_rel)])


@register_method("ll-ct", reference=f"{REFERENCE}, LL-Ct", family="kim2022")
def build_ll_ct(delta_rel: float = 0.002) -> Method:
    """Large-Loss temporary correction: the largest unobserved losses are trained as positives for that step."""
    return Method("ll-ct", "an", components=[LargeLossModification("temporary", delta_rel)])


@register_method("ll-cp", reference=f"{REFERENCE}, LL-Cp", family="kim2022")
def build_ll_cp(delta_rel: float = 0.002) -> Method:
    """Large-Loss permanent correction: ⌈B·L·Δ_rel⌉ largest unobserved losses per batch become positives for good."""
    return Method("ll-cp", "an", components=[LargeLossModification("permanent", delta_rel)])
