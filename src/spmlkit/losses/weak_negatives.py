"""Weak assume negative, WAN (Cole et al. 2021, §5.1).

``L_WAN = −1/L Σ_i [𝟙[z=1] log f_i + 𝟙[z≠1] γ log(1 − f_i)]``: assume negative with the
assumed negatives down-weighted by γ ∈ [0, 1].  γ = 1 is AN (Eq. 8); γ = 0 admits the
trivial "always positive" solution.  The paper uses γ = 1/(L−1) throughout, so that
the single positive weighs as much as the L−1 assumed negatives (and WAN is the
expectation of sampling one pseudo-negative per example); the authors' code hard-codes
the same value.
"""
from __future__ import annotations

import torch

from ..errors import ConfigError
from .base import bce_with_target, register_loss
from .label_smoothing import two_valued


def default_gamma(n_labels: int) -> float:
    """γ = 1/(L−1) (Cole §5.1)."""
    if n_labels < 2:
        raise ConfigError(f"WAN's default gamma 1/(L-1) needs at least 2 labels, got L={n_labels}")
    return 1.0 / (n_labels - 1)


@register_loss("wan", reference="Cole et al. 2021, §5.1")
def weak_assume_negative(logits: torch.Tensor, observed: torch.Tensor, *, gamma: float | None = None) -> torch.Tensor:
    """Weak assume negative (Cole §5.1): −log f on positives, −γ log(1−f) on all other entries.

    ``gamma=None`` means 1/(L−1) with L = ``logits.shape[-1]`` (the paper's choice).

    >>> import torch
    >>> weak_assume_negative(torch.zeros(1, 3), torch.tensor([[1, 0, 0]])).tolist()  # γ = 1/2
    [[0.6931471824645996, 0.3465735912322998, 0.3465735912322998]]
    """
    g = default_gamma(logits.shape[-1]) if gamma is None else float(gamma)
    if not 0.0 <= g <= 1.0:
        raise ConfigError(f"WAN gamma must be in [0, 1], got {g}")
    pos = observed == 1
    loss = bce_with_target(logits, pos)
    weight = two_valued(pos, 1.0, g, loss)  # Python scalars: no blocking host-to-device copy per step
    return loss * weight
