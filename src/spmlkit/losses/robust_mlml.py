"""Hill loss and the focal margin loss of SPLC (Zhang et al. 2021, "Simple and Robust Loss
Design for Multi-Label Learning with Missing Labels", arXiv:2112.07368).

Notation: ``s`` a logit, ``p = σ(s)``, ``p_m = σ(s − m)`` the probability with a margin
``m`` subtracted from the logit.

Focal margin loss (Zhang §3.2, Eq. 7–8)
---------------------------------------
The positive term of both methods::

    L⁺(p) = −(1 − p_m)^γ · log p_m            (observed positives)

The margin makes the positive term keep pushing ``s`` up until ``s ≈ m``, i.e. it
"emphasises semi-hard positives"; γ is the focal exponent of Lin et al. (2017).  The
base loss of SPLC treats every other entry as a negative with the focal term::

    L⁻(p) = −p^γ · log(1 − p)

Hill loss (Zhang §3.3, Eq. 11)
------------------------------
For negatives (observed or missing) the loss is re-weighted so that confident
"negatives" — most likely missing positives — are punished less::

    L⁻_Hill(p) = (λ − p)·p²          (λ = 1.5)

i.e. an MSE-like negative term ``p²`` multiplied by the weight ``(λ − p)``, which
decreases as the model becomes confident that the label is present.  Its stated properties, checked in
``tests/losses/test_robust_mlml.py``: it is **bounded** (it increases on [0, 1] from 0
to ``λ − 1 = 0.5`` at p = 1, where BCE is unbounded), and its gradient with respect
to p, ``2λp − 3p² = 3p(1 − p)`` at λ = 1.5, is **hill-shaped** (not monotone: it peaks
at p = 0.5 and vanishes at p = 1), so negatives the model is confident are positive
receive almost no push.  λ = 1.5 is the only value for which the weight's derivative
vanishes exactly at p = 1; the authors "did not change the value of λ".

Computed on logits: ``log p_m = logsigmoid(s − m)``, ``(1 − p_m)^γ =
exp(γ·logsigmoid(m − s))``, ``−log(1 − p) = softplus(s)``.

Defaults (paper §4 and official code): m = 1 ("margins in [0.5, 1.0] have little
effect"), γ = 2, λ = 1.5.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..errors import ConfigError
from .base import register_loss

REFERENCE = "Zhang et al. 2021, Simple and Robust Loss Design for MLML (arXiv:2112.07368)"


def _check(gamma: float, margin: float) -> None:
    if gamma < 0:
        raise ConfigError(f"gamma must be >= 0, got {gamma}")
    if margin < 0:
        raise ConfigError(f"margin must be >= 0, got {margin}")


def focal_margin_positive(logits: torch.Tensor, *, margin: float = 1.0, gamma: float = 2.0) -> torch.Tensor:
    """``−(1 − p_m)^γ log p_m`` with ``p_m = σ(s − m)`` (Zhang Eq. 8), elementwise.

    >>> import torch, math
    >>> round(focal_margin_positive(torch.tensor([1.0]), margin=1.0, gamma=2.0).item(), 6) == round(0.25 * math.log(2), 6)
    True
    """
    shifted = logits - margin
    loss = -F.logsigmoid(shifted)
    if gamma != 0:
        loss = torch.exp(gamma * F.logsigmoid(-shifted)) * loss
    return loss


def focal_negative(logits: torch.Tensor, *, gamma: float = 2.0) -> torch.Tensor:
    """``−p^γ log(1 − p)``, elementwise (the focal term of a negative)."""
    loss = F.softplus(logits)
    if gamma != 0:
        loss = torch.exp(gamma * F.logsigmoid(logits)) * loss
    return loss


def hill_negative(logits: torch.Tensor, *, lam: float = 1.5) -> torch.Tensor:
    """``(λ − p)·p²`` with ``p = σ(s)`` (Zhang Eq. 11), elementwise.

    >>> import torch
    >>> hill_negative(torch.tensor([0.0])).item()   # (1.5 - 0.5) * 0.25
    0.25
    """
    p = torch.sigmoid(logits)
    return (lam - p) * p * p


@register_loss("focal-margin", reference=f"{REFERENCE}, Eq. 7-8")
def focal_margin(logits: torch.Tensor, observed: torch.Tensor, *, margin: float = 1.0,
                 gamma: float = 2.0) -> torch.Tensor:
    """Focal margin loss (Zhang Eq. 8): −(1−p_m)^γ log p_m on positives, −p^γ log(1−p) on all other entries.

    The base loss of SPLC (:mod:`spmlkit.methods.robust_mlml`): unobserved entries are
    assumed negative with the focal weight.  ``margin`` = 1, ``gamma`` = 2 (paper and
    code).  With ``margin=0`` this is the ``focal`` loss (Lin et al.) on AN targets.

    >>> import torch, math
    >>> out = focal_margin(torch.tensor([[1.0, 0.0]]), torch.tensor([[1, 0]]))
    >>> [round(v, 6) for v in out[0].tolist()] == [round(0.25 * math.log(2), 6)] * 2
    True
    """
    _check(gamma, margin)
    pos = observed == 1
    return torch.where(pos, focal_margin_positive(logits, margin=margin, gamma=gamma),
                       focal_negative(logits, gamma=gamma))


@register_loss("hill", reference=f"{REFERENCE}, Eq. 8 and 11")
def hill(logits: torch.Tensor, observed: torch.Tensor, *, lam: float = 1.5, margin: float = 1.0,
         gamma: float = 2.0) -> torch.Tensor:
    """Hill loss (Zhang Eq. 11): focal margin loss on positives, (λ − p)·p² on every other entry.

    Observed negatives and unobserved entries are both "negatives" (the paper's MLML
    setting treats missing labels as negatives); the Hill weight is what makes the
    assumption robust.  Defaults λ = 1.5, m = 1, γ = 2 (paper and official code).

    >>> import torch, math
    >>> out = hill(torch.tensor([[1.0, 0.0]]), torch.tensor([[1, 0]]))
    >>> [round(v, 6) for v in out[0].tolist()] == [round(0.25 * math.log(2), 6), 0.25]
    True
    """
    _check(gamma, margin)
    if lam < 1.0:
        raise ConfigError(f"hill: lam must be >= 1 (the weight λ − p must stay non-negative on [0, 1]), got {lam}")
    pos = observed == 1
    return torch.where(pos, focal_margin_positive(logits, margin=margin, gamma=gamma),
                       hill_negative(logits, lam=lam))
