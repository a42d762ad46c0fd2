"""Robust losses for multi-label learning with missing labels as methods: focal margin, Hill
and SPLC (self-paced loss correction), from Zhang et al. (2021), "Simple and Robust Loss
Design for Multi-Label Learning with Missing Labels" (arXiv:2112.07368).

==================  ================================================  ===================================
method              loss / parts                                      defaults (source)
==================  ================================================  ===================================
``focal-margin``    focal margin loss, unobserved assumed negative    m = 1, γ = 2 (paper, code)
``hill``            focal margin on positives, (λ − p)p² on others    λ = 1.5, m = 1, γ = 2 (paper, code)
``splc``            focal margin + self-paced loss correction         τ = 0.6, correction from epoch 2
==================  ================================================  ===================================

SPLC (Zhang §3.4, Eq. 12)::

    L⁺_SPLC = loss⁺(p)
    L⁻_SPLC = 𝟙(p ≤ τ)·loss⁻(p) + (1 − 𝟙(p ≤ τ))·loss⁺(p)

an unobserved label whose predicted probability exceeds τ is treated as a positive
for that step.  The correction is *self-paced*: it is decided afresh at every step
from the current model, never stored.  "Since the first epoch can recall few missing
labels with high precision, SPLC can be used after the first epoch" (official code,
``change_epoch = 1`` with 0-based epochs): here epochs are 1-based, so the correction
starts in epoch ``start_epoch = 2``.  ``loss⁺``/``loss⁻`` are the focal margin loss's
two terms (:mod:`spmlkit.losses.robust_mlml`); following Eq. 12 literally, a corrected
entry gets ``loss⁺`` including the margin (the authors' code subtracts the margin from
the annotated positives only — a negligible difference at τ = 0.6, noted in
docs/newer_methods.md).

The correction is a component (:class:`SelfPacedCorrection`) that hands the loss an
``observed`` override with the corrected entries set to +1; the trainer knows
nothing of it.
"""
from __future__ import annotations

import torch

from ..errors import ConfigError
from .base import Batch, Component, Method, TrainContext, register_method

FAMILY = "zhang2021"
REF = "Zhang et al. 2021 (arXiv:2112.07368)"


class SelfPacedCorrection(Component):
    """SPLC's correction (Zhang Eq. 12): from ``start_epoch`` on, unobserved entries with
    ``σ(s) > τ`` are trained as positives in the current step (decided per step from
    the detached logits; nothing is remembered across steps).

    State: the current epoch only (a resumed run restarts its epoch through
    :meth:`on_epoch_start`)."""

    supports_members = True
    supports_compaction = True  # no per-member state

    def __init__(self, tau: float = 0.6, start_epoch: int = 2):
        if not 0.0 < float(tau) < 1.0:
            raise ConfigError(f"splc: tau must be in (0, 1), got {tau}")
        if int(start_epoch) < 1:
            raise ConfigError(f"splc: start_epoch must be >= 1, got {start_epoch}")
        self.tau = float(tau)
        self.start_epoch = int(start_epoch)
        self.epoch = 1
        self._corrected = None  # corrections counted this epoch (a device tensor: no host sync per step)

    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        self.epoch = 1

    def on_epoch_start(self, epoch: int) -> None:
        self.epoch = int(epoch)
        self._corrected = None

    @property
    def n_corrected(self) -> int:
        """Entries corrected to positive so far in this epoch (all members)."""
        return 0 if self._corrected is None else int(self._corrected)

    @property
    def active(self) -> bool:
        return self.epoch >= self.start_epoch

    def corrected(self, observed: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """Mask of the unobserved entries SPLC treats as positive now (``(..., B, L)`` bool)."""
        if not self.active:
            return torch.zeros_like(observed, dtype=torch.bool)
        return (observed == 0) & (torch.sigmoid(logits.detach()) > self.tau).to(observed.device)

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        if not self.active:
            return {}
        obs = batch.observed.to(logits.device).expand(logits.shape)
        mask = self.corrected(obs, logits)
        count = mask.sum()
        self._corrected = count if self._corrected is None else self._corrected + count  # a device tensor, read at epoch end
        return {"observed": torch.where(mask, torch.ones_like(obs), obs)}

    def on_epoch_end(self, epoch: int, predict_train) -> dict:
        return {"splc_corrected": int(self.n_corrected)}

    def state_dict(self) -> dict:
        return {"epoch": self.epoch}

    def load_state_dict(self, state: dict) -> None:
        self.epoch = int(state.get("epoch", 1))


@register_method("focal-margin", reference=f"{REF}, Eq. 7-8", family=FAMILY, in_default_bench=False)
def build_focal_margin(margin: float = 1.0, gamma: float = 2.0) -> Method:
    """Focal margin loss on AN targets (Zhang Eq. 8): margin m = 1 on the positive's logit, focal γ = 2."""
    return Method("focal-margin", "focal-margin", loss_params={"margin": margin, "gamma": gamma})


@register_method("hill", reference=f"{REF}, Eq. 11", family=FAMILY, in_default_bench=False)
def build_hill(lam: float = 1.5, margin: float = 1.0, gamma: float = 2.0) -> Method:
    """Hill loss (Zhang Eq. 11): focal margin on the positive, (λ − p)·p² on every other label (λ = 1.5)."""
    return Method("hill", "hill", loss_params={"lam": lam, "margin": margin, "gamma": gamma})


@register_method("splc", reference=f"{REF}, Eq. 12 (SPLC)", family=FAMILY, in_default_bench=False)
def build_splc(tau: float = 0.6, start_epoch: int = 2, margin: float = 1.0, gamma: float = 2.0) -> Method:
    """Self-paced loss correction (Zhang Eq. 12): focal margin loss; from epoch 2, unobserved labels with p > τ = 0.6 count as positives."""
    return Method("splc", "focal-margin", loss_params={"margin": margin, "gamma": gamma},
                  components=[SelfPacedCorrection(tau, start_epoch)])
