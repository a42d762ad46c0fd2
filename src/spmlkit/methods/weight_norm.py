"""Weight-norm regularisation as methods, rows of Zhou et al.'s Table 1 (ECCV 2022): AN plus
an L1 (``l1r``) or squared L2 (``l2r``) norm of the classifier weights, λ = 1e-4.

==========  =========================================  ===========================================
method      loss / parts                               defaults (source)
==========  =========================================  ===========================================
``l1r``     AN + λ‖W‖₁ of the classifier weights        λ = 1e-4
``l2r``     AN + λ‖W‖²₂ of the classifier weights       λ = 1e-4 (ResNet weight decay)
==========  =========================================  ===========================================

The loss is AN's (:mod:`spmlkit.losses.assume_negative`); the norm is a regulariser of
the method (:class:`WeightNorm`), which sees the model.  The defaults' reasons are in the
factories' docstrings and in docs/zhou2022.md.
"""
from __future__ import annotations

import torch

from ..errors import ConfigError
from ..models.heads import StackedLinear
from .base import Batch, Method, register_method

FAMILY = "zhou2022"
REF = "Zhou et al. 2022"


def classifier_weights(model) -> list[tuple[torch.Tensor, bool]]:
    """The classifier's weight matrices (biases excluded), each with a flag "has a
    leading member axis".

    Stacked heads (:mod:`spmlkit.models.heads`: every ``Stacked*`` layer's ``weight``,
    shaped ``(G, D, L)``) are found anywhere in the model, so a backbone followed by a
    stacked head regularises the head only.  Otherwise the weight matrices (dim ≥ 2) of
    a submodule named ``head``, ``classifier`` or ``fc`` are used, without member axis.
    """
    stacked = [(m.weight, True) for m in model.modules() if isinstance(m, StackedLinear)]
    if stacked:
        return stacked
    for name in ("head", "classifier", "fc"):
        sub = getattr(model, name, None)
        if isinstance(sub, torch.nn.Module):
            found = [(p, False) for n, p in sub.named_parameters() if n.endswith("weight") and p.dim() >= 2]
            if found:
                return found
    raise ConfigError(f"l1r/l2r: cannot find the classifier weights of a {type(model).__name__} "
                      "(expected stacked heads or a 'head' / 'classifier' / 'fc' submodule)")


class WeightNorm:
    """Regulariser ``λ·Σ‖W‖ₚᵖ`` over the classifier weights, per member: ``(logits, batch, model) -> (G,)``.

    ``p = 1``: L1 norm (sum of |w|); ``p = 2``: squared L2 norm (sum of w²).  Biases are not
    regularised.  For a model without member axis the penalty is broadcast over the
    ``G`` rows of ``logits`` (G = 1 for such models)."""

    def __init__(self, lam: float, p: int):
        if lam < 0:
            raise ConfigError(f"l{p}r: lam must be >= 0, got {lam}")
        if p not in (1, 2):
            raise ValueError("p must be 1 or 2")
        self.lam = float(lam)
        self.p = p

    def __call__(self, logits: torch.Tensor, batch: Batch, model) -> torch.Tensor:
        G = logits.shape[0] if logits.dim() == 3 else 1
        total = logits.new_zeros(G)
        for w, stacked in classifier_weights(model):
            term = w.abs() if self.p == 1 else w * w
            if stacked:
                total = total + term.reshape(term.shape[0], -1).sum(1)
            else:
                total = total + term.sum()
        return self.lam * total

    def __repr__(self) -> str:
        return f"WeightNorm(lam={self.lam}, p={self.p})"


@register_method("l1r", reference=f"{REF}, Table 1 (L1R)", family=FAMILY)
def build_l1r(lam: float = 1e-4) -> Method:
    """AN + λ·‖W‖₁ of the classifier weights (biases not regularised).

    λ = 1e-4: no value is published (Zhou et al. give none, their code has no such
    row); 1e-4 is the standard weight-decay strength of ResNet training (He et al.
    2016), used for both norms so the two rows differ only in the norm."""
    return Method("l1r", "an", regularizers=[WeightNorm(lam, 1)])


@register_method("l2r", reference=f"{REF}, Table 1 (L2R)", family=FAMILY)
def build_l2r(lam: float = 1e-4) -> Method:
    """AN + λ·‖W‖²₂ of the classifier weights (biases not regularised).

    λ = 1e-4: the weight decay of ResNet training (He et al. 2016); Zhou et al. give no
    value."""
    return Method("l2r", "an", regularizers=[WeightNorm(lam, 2)])
