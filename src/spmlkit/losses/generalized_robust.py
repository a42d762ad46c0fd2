"""Generalized Robust loss, GR-Loss (Chen et al., IJCAI 2024, "Boosting Single Positive
Multi-label Classification with Generalized Robust Loss", arXiv:2405.03501) and its
pseudo-label extension, GPR-Loss (Tran et al., ICCV 2025, "More Reliable Pseudo-labels,
Better Performance: A Generalized Approach to SPML", arXiv:2508.20381, the loss of AEVLP).

GR-Loss (Chen §3, the expected-risk framework and its instance)
---------------------------------------------------------------
Writing ``p = σ(s)`` and ``z`` the observation, the per-entry loss is::

    z = +1:  L₁(p) = −log p
    z =  0:  v(p; α) · [ k̂(p; β) · L₂(p) + (1 − k̂(p; β)) · L₃(p) ]

with the generalized-cross-entropy (negative Box–Cox) surrogates::

    L₂(p) = (1 − p^{q₂}) / q₂              (the unobserved label is positive)
    L₃(p) = (1 − (1 − p)^{q₃}) / q₃        (the unobserved label is negative)

``k̂`` is the *soft pseudo-label* — the estimated probability that the unobserved label
is positive — and ``v`` an instance/class re-weighting; both are computed from the
detached prediction (no gradient flows through them) and are inputs of this loss
(``soft_targets`` = k̂, ``weights`` = v), supplied by the schedule component of
:mod:`spmlkit.methods.generalized_robust`.  ``q → 0`` gives the log losses (``−log p``,
``−log(1 − p)``); ``q = 1`` the mean absolute error (``1 − p``, ``p``), which is bounded
and robust to the false negatives among the unobserved labels (Zhang & Sabuncu 2018).

Special cases (Chen §3.2: former losses "seamlessly converted into our framework"),
tested in ``tests/losses/test_generalized_robust.py``:

* ``k̂ = 0, v = 1, q₃ → 0``: assume negative (AN, Cole Eq. 8);
* ``k̂ = 0, v = γ, q₃ → 0``: weak assume negative (WAN, Cole §5.1);
* ``v = 0``: only the observed positives count ("ignore unobserved", EPR without R_k);
* ``k̂ = 1, q₂ → 0``: every unobserved label trained as positive with BCE (the
  temporary correction of LL-Ct, Kim et al. 2022, applied to all entries).

Observed negatives (partial or full labels, not part of the paper's SPML setting) get
``−log(1 − p)``.

GPR-Loss (Tran et al. 2025, §3.2)
---------------------------------
Unobserved entries also carry a pseudo-label ``ỹ ∈ {−1, 0, +1}`` from an external
(vision-language) model (input ``pseudo_labels``)::

    ỹ =  0:  as GR-Loss
    ỹ = +1:  w⁺ · [ρ·(−log p) + (1 − ρ)·(−log(1 − p))],   w⁺ = 1 − clip(v, 1 − λ₁, 1 − λ₂) ∈ [λ₂, λ₁]
    ỹ = −1:  v · (−log(1 − p))

plus ``reg · R_k`` — Cole et al.'s expected-positive penalty ``((k̂_B − k)/L)²`` — added
to every entry so that the mean over ``B·L`` entries carries it once (as in
:mod:`.expected_positives`).  Pseudo-positives are label-smoothed (ρ = 0.9) and their
weight is kept inside ``[λ₂, λ₁]`` so that noisy pseudo-labels cannot dominate.
Defaults are the authors' COCO configuration (λ₁ = 0.7, λ₂ = 0.5, ρ = 0.9,
reg = 0.001, q₂ = 0.01, q₃ = 1).

Everything is computed on logits: ``p^q = exp(q·logsigmoid(s))`` and
``(1 − p)^q = exp(q·logsigmoid(−s))``; ``(1 − x^q)/q = −expm1(q·log x)/q``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..errors import ConfigError
from .base import register_loss
from .expected_positives import expected_positive_penalty

GR_REFERENCE = "Chen et al. 2024 (IJCAI), GR-Loss, §3"
GPR_REFERENCE = "Tran et al. 2025 (ICCV), AEVLP, GPR-Loss §3.2"


def box_cox(log_x: torch.Tensor, q: float) -> torch.Tensor:
    """``(1 − x^q)/q`` from ``log x`` (negative Box–Cox); ``q = 0`` gives ``−log x``.

    >>> import torch, math
    >>> lx = torch.tensor([math.log(0.25)], dtype=torch.float64)
    >>> round(box_cox(lx, 1.0).item(), 6), round(box_cox(lx, 0.0).item(), 6) == round(-math.log(0.25), 6)
    (0.75, True)
    """
    if q < 0:
        raise ConfigError(f"the exponent q must be >= 0, got {q}")
    if q == 0:
        return -log_x
    return -torch.expm1(q * log_x) / q


def gr_unobserved(logits: torch.Tensor, soft_targets: torch.Tensor, weights: torch.Tensor, *, q2: float,
                  q3: float, log_p: torch.Tensor | None = None) -> torch.Tensor:
    """``v · [k̂·L₂(p) + (1 − k̂)·L₃(p)]`` elementwise (Chen §3); ``log_p``: ``log σ(logits)``
    when the caller has it already (the same tensor, computed once)."""
    l2 = box_cox(F.logsigmoid(logits) if log_p is None else log_p, q2)
    l3 = box_cox(F.logsigmoid(-logits), q3)
    k = soft_targets.to(logits.dtype)
    return weights.to(logits.dtype) * (k * l2 + (1.0 - k) * l3)


@register_loss("gr", reference=GR_REFERENCE, inputs=("soft_targets", "weights"))
def generalized_robust(logits: torch.Tensor, observed: torch.Tensor, *, soft_targets: torch.Tensor,
                       weights: torch.Tensor, q2: float = 0.01, q3: float = 1.0) -> torch.Tensor:
    """GR-Loss (Chen §3): −log p on positives, v·[k̂·L₂ + (1−k̂)·L₃] on unobserved entries.

    ``soft_targets`` (k̂) and ``weights`` (v) are tensors broadcastable to ``logits``,
    treated as constants.  ``q2`` = 0.01 and ``q3`` = 1 are the authors' defaults
    (official code): almost-BCE towards a pseudo-positive, MAE towards a negative.

    >>> import torch, math
    >>> out = generalized_robust(torch.zeros(1, 2), torch.tensor([[1, 0]]), soft_targets=torch.zeros(1, 2),
    ...                          weights=torch.ones(1, 2), q3=1.0)
    >>> [round(v, 6) for v in out[0].tolist()] == [round(math.log(2), 6), 0.5]
    True
    """
    # one pass per term over the (members x) batch x labels entries: log σ(s) serves L₁ and
    # L₂, and the observed-negative term is built only when the batch has one (single
    # positives have none); the values and gradients are those of the term-by-term form
    log_p = F.logsigmoid(logits)
    unobs = gr_unobserved(logits, soft_targets.detach(), weights.detach(), q2=q2, q3=q3, log_p=log_p)
    out = torch.where(observed == 1, -log_p, unobs)
    neg = observed == -1
    return torch.where(neg, F.softplus(logits), out) if bool(neg.any()) else out


@register_loss("gpr", reference=GPR_REFERENCE, inputs=("soft_targets", "weights", "pseudo_labels"))
def generalized_pseudo_label_robust(logits: torch.Tensor, observed: torch.Tensor, *, soft_targets: torch.Tensor,
                                    weights: torch.Tensor, pseudo_labels: torch.Tensor, q2: float = 0.01,
                                    q3: float = 1.0, lam1: float = 0.7, lam2: float = 0.5, rho: float = 0.9,
                                    reg: float = 0.001, k: float | None = None) -> torch.Tensor:
    """GPR-Loss (Tran et al. 2025): GR-Loss plus weighted, smoothed pseudo-positives and pseudo-negatives.

    ``pseudo_labels`` ``(..., B, L)`` in {−1, 0, +1} (ignored on observed entries).
    ``k`` (expected positives per example) is needed when ``reg > 0``.

    >>> import torch, math
    >>> out = generalized_pseudo_label_robust(
    ...     torch.zeros(1, 3), torch.tensor([[1, 0, 0]]), soft_targets=torch.zeros(1, 3), weights=torch.ones(1, 3),
    ...     pseudo_labels=torch.tensor([[0, 1, -1]]), reg=0.0)
    >>> [round(v, 6) for v in out[0].tolist()] == [round(math.log(2), 6), round(0.5 * math.log(2), 6), round(math.log(2), 6)]
    True
    """
    if not 0.0 <= lam2 <= lam1 <= 1.0:
        raise ConfigError(f"gpr: need 0 <= lam2 <= lam1 <= 1, got lam1={lam1}, lam2={lam2}")
    if not 0.0 <= rho <= 1.0:
        raise ConfigError(f"gpr: rho must be in [0, 1], got {rho}")
    v = weights.detach().to(logits.dtype)
    base = generalized_robust(logits, observed, soft_targets=soft_targets, weights=v, q2=q2, q3=q3)
    unobs = observed == 0
    pl = pseudo_labels.to(observed.device)
    ppos = unobs & (pl == 1)
    pneg = unobs & (pl == -1)
    w_pos = 1.0 - v.clamp(min=1.0 - lam1, max=1.0 - lam2)
    smoothed = rho * F.softplus(-logits) + (1.0 - rho) * F.softplus(logits)
    out = torch.where(ppos, w_pos * smoothed, base)
    out = torch.where(pneg, v * F.softplus(logits), out)
    if reg:
        if k is None:
            raise ConfigError("gpr: reg > 0 needs k, the expected number of positives per example")
        out = out + reg * expected_positive_penalty(logits, float(k))
    return out
