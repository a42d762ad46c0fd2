"""Regularised online label estimation, ROLE: the loss (Cole et al. 2021, §5.4, Eq. 11).

The classifier ``f`` and a label estimator ``g`` (one row of logits per training
example, :class:`spmlkit.methods.role.LabelEstimator`) are trained jointly through

    L'(F_B | Ŷ_B) = 1/|B| Σ_n L_BCE(f_n, sg(ŷ_n)) + L_EPR(F_B, Z_B)          (Eq. 11)
    L_ROLE = ( L'(F_B | Ŷ_B) + L'(Ŷ_B | F_B) ) / 2

where ``sg`` is the stop-gradient: ``f`` is fitted to the estimates and the estimates
to ``f``, both constrained by EPR (observed positives and the expected number of
positives ``k``).  Per entry, in the authors' code's arrangement:

    0.5·(pos_f + pos_g) + 0.5·(BCE(s_f, sg σ(s_g)) + BCE(s_g, sg σ(s_f))) + 0.5·λ·(R_k(f) + R_k(g))

with ``pos_· = −log σ(·)`` on observed positives only and ``R_k`` of Eq. 10 computed on
the batch, per member.  Everything is computed from logits (softplus /
``binary_cross_entropy_with_logits``), not from ``log(p + 1e-5)``.  The batch-level
penalties are added to every entry, so the mean over ``B·L`` (the code's reduction,
λ = 1) is the loss; see :mod:`.expected_positives` for that scaling.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..errors import ConfigError
from .base import register_loss
from .expected_positives import check_k


@register_loss("role", reference="Cole et al. 2021, §5.4, Eq. 11", inputs=("estimator_logits",))
def role(logits: torch.Tensor, observed: torch.Tensor, *, k: float | None = None, lam: float = 1.0,
         estimator_logits: torch.Tensor) -> torch.Tensor:
    """ROLE (Cole §5.4): symmetric stop-gradient BCE between classifier and label estimator, plus EPR on both.

    ``estimator_logits`` are the estimator's logits for the batch, shaped like
    ``logits``; gradients flow to both, but each BCE target is detached.

    >>> import torch
    >>> s, g = torch.zeros(1, 2), torch.zeros(1, 2)
    >>> # per entry 0.5·(2 pos) + 0.5·(log2 + log2) ; pos term only on entry 0 ; R_k(=((1−1)/2)²)=0
    >>> [round(v, 4) for v in role(s, torch.tensor([[1, 0]]), k=1.0, estimator_logits=g)[0].tolist()]
    [1.3863, 0.6931]
    """
    if estimator_logits is None or estimator_logits.shape != logits.shape:
        raise ConfigError(f"ROLE needs estimator_logits shaped like the logits {tuple(logits.shape)}, "
                          f"got {None if estimator_logits is None else tuple(estimator_logits.shape)}")
    k = check_k(k, logits.shape[-1])
    return _RoleLoss.apply(logits, estimator_logits, observed, k, float(lam))


class _RoleLoss(torch.autograd.Function):
    """The ROLE loss per entry (module docstring), both directions at once, with its
    closed-form gradient.  With ``S = (s_f, s_g)`` stacked, ``P = σ(S)``, ``T = sg(P)``
    swapped (each side's target is the other's probability), ``pos = 𝟙[z = 1]``, upstream
    gradient ``Γ`` (..., B, L) and ``c = Σ_{B,L} Γ`` per member:

        ∂/∂S = ½ Γ (P − T − pos·(1 − P))  +  λ/(B·L) · c · (k̂ − k)/L · P(1 − P)

    the first term from ``½[softplus(−S)(1 + pos) + (1 − T) S]`` (T constant), the second
    from ``½λ((k̂ − k)/L)²`` added to every entry, ``k̂ = (1/B) Σ_{n,l} P``.  The same
    numbers as autograd through the expression (tested) with one autograd node instead
    of about twenty: at batch 8 the loss's cost is per-operation overhead
    (benchmarks/ measures the step time)."""

    @staticmethod
    def forward(ctx, logits, estimator_logits, observed, k: float, lam: float):
        L, B = logits.shape[-1], logits.shape[-2]
        ctx.est_dtype = estimator_logits.dtype
        if estimator_logits.dtype != logits.dtype:
            estimator_logits = estimator_logits.to(logits.dtype)
        S = torch.stack((logits, estimator_logits))
        P = torch.sigmoid(S)
        T = P.flip(0)
        pos = (observed == 1).to(logits.dtype).expand_as(logits)
        # per side: BCE(s, t) = softplus(−s) + (1 − t)·s, plus −log σ(s) = softplus(−s) on observed positives
        both = F.binary_cross_entropy_with_logits(S, T, reduction="none").sum(dim=0)
        both = both.addcmul_(pos, F.logsigmoid(S).sum(dim=0), value=-1.0)
        dev = (P.sum(dim=(-2, -1), keepdim=True) - k * B) / (B * L)  # (k̂ − k)/L per side, (2, ..., 1, 1)
        ctx.save_for_backward(P, T, pos, dev)
        ctx.coef = lam / (B * L)
        return torch.add((0.5 * lam) * (dev * dev).sum(dim=0), both, alpha=0.5)

    @staticmethod
    def backward(ctx, grad_out):
        P, T, pos, dev = ctx.saved_tensors
        Q = 1.0 - P
        scale = dev * (ctx.coef * grad_out.sum(dim=(-2, -1), keepdim=True))  # EPR part, per member and side
        grad = (P - T).addcmul_(pos, Q, value=-1.0).mul_(0.5 * grad_out).addcmul_(P * Q, scale)
        return grad[0], grad[1].to(ctx.est_dtype), None, None, None
