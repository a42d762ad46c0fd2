"""Presence-only methods: SINR's losses (Cole et al. 2023) and Zbinden et al.
(2024)'s full-weighted loss, for data whose examples are single presence records plus
**background rows** (examples with no observed label, e.g. random background sites).

=================  ==============================================================  ==========
method             loss (:mod:`spmlkit.losses.sinr`, :mod:`~spmlkit.losses.full_weighted`)  background
=================  ==============================================================  ==========
``an-ssdl``        −log f_z(x) − log(1 − f_z(r))                                    yes
``an-slds``        −log f_z(x) − log(1 − f_z′(x)), z′ random (:class:`LabelDraw`)    no
``an-full``        SINR Eq. 5, λ = 2048                                              yes
``*-me``           the same with −H(f) for each assume-negative term                 as above
``full-weighted``  Zbinden's L_full-weighted, w_s = n/n_s (:class:`LabelFrequency`),  yes
                   λ₁ = 1, λ₂ = 0.8
=================  ==============================================================  ==========

A method whose loss takes ``background_logits`` declares it consumes background
(:attr:`spmlkit.methods.base.Method.uses_background`): the linear trainer then iterates
over the labelled rows and draws one background row per example and step
(:mod:`spmlkit.training.background`).  They are not in ``spml bench``'s default method
list (they need background rows, which the simulated benchmarks do not have).
"""
from __future__ import annotations

import numpy as np
import torch

from .base import Batch, Component, MemberStreams, Method, TrainContext, register_method

REF = "Cole et al. 2023 (SINR)"


class LabelDraw(MemberStreams, Component):
    """Uniform draws ``(G, B, L)`` for AN-SLDS's random other label ``z′`` (input
    ``label_draw``), from one generator per member seeded from the member's seed."""

    supports_compaction = True

    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        seeds = ctx.seeds or (0,) * ctx.n_members
        self.generators = [torch.Generator().manual_seed(10_007 + int(s)) for s in seeds]

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        G, B, L = logits.shape[-3:] if logits.dim() == 3 else (1, *logits.shape[-2:])
        draws = torch.stack([torch.rand(B, L, generator=g, device="cpu") for g in self.generators[:G]])
        return {"label_draw": draws.to(logits.device).view(logits.shape)}



class LabelFrequency(Component):
    """``n_s / n`` (input ``label_frequency``): the share of the training examples with
    an observation (background rows excluded) that have label ``s`` as an observed
    positive, computed once from the training observations (Zbinden's ``w_s = n / n_s``)."""

    supports_compaction = True

    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        Z = ctx.observed  # sparse: positives only in labelled rows
        n = max(int((Z.row_counts(0) < Z.n_labels).sum()), 1)
        self.frequency = (torch.from_numpy(Z.col_counts(1)).double() / n).float()

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        return {"label_frequency": self.frequency.to(logits.device).expand_as(logits)}


def _method(name: str, loss: str, components=(), **loss_params) -> Method:
    return Method(name, loss, loss_params=loss_params, components=list(components), setting="linear")


@register_method("an-ssdl", reference=REF + ", Eq. 3", setting="linear", in_default_bench=False)
def an_ssdl() -> Method:
    """SINR's AN-SSDL: the positive against the same label at a background row."""
    return _method("an-ssdl", "an-ssdl")


@register_method("an-ssdl-me", reference=REF + ", Eq. 3, ME variant", setting="linear", in_default_bench=False)
def an_ssdl_me() -> Method:
    """AN-SSDL with the negative entropy at the background row."""
    return _method("an-ssdl-me", "an-ssdl-me")


@register_method("an-slds", reference=REF + ", Eq. 4", setting="linear", in_default_bench=False)
def an_slds() -> Method:
    """SINR's AN-SLDS: the positive against one random other label of the same example."""
    return _method("an-slds", "an-slds", [LabelDraw()])


@register_method("an-slds-me", reference=REF + ", Eq. 4, ME variant", setting="linear", in_default_bench=False)
def an_slds_me() -> Method:
    """AN-SLDS with the negative entropy on the random other label."""
    return _method("an-slds-me", "an-slds-me", [LabelDraw()])


@register_method("an-full", reference=REF + ", Eq. 5", setting="linear", in_default_bench=False)
def an_full(pos_weight: float = 2048.0) -> Method:
    """SINR's full assume-negative loss: λ-weighted positive, every other label and every label at a background row negative."""
    return _method("an-full", "an-full", pos_weight=pos_weight)


@register_method("an-full-me", reference=REF + ", Eq. 5, ME variant", setting="linear", in_default_bench=False)
def an_full_me(pos_weight: float = 2048.0) -> Method:
    """AN-full with the negative entropy for every assume-negative term."""
    return _method("an-full-me", "an-full-me", pos_weight=pos_weight)


@register_method("full-weighted", reference="Zbinden et al. 2024, L_full-weighted", setting="linear",
                 in_default_bench=False)
def full_weighted(lambda1: float = 1.0, lambda2: float = 0.8) -> Method:
    """Zbinden et al.'s full-weighted loss: presences weighted n/n_s, other labels and background traded off by λ₂."""
    return _method("full-weighted", "full-weighted", [LabelFrequency()], lambda1=lambda1, lambda2=lambda2)
