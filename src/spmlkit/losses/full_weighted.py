"""The full-weighted loss of Zbinden et al. (2024), "On the selection and effectiveness of
pseudo-absences for species distribution modeling with deep learning", *Ecological
Informatics* 81, 102623 (the ``L_full-weighted`` equation of §2.3).

SINR's AN-full (:mod:`.sinr`) with the class imbalance addressed per species and the two
kinds of pseudo-absence weighed against each other::

    L = −(1/S) Σ_s [ 1[y_s=1] λ₁ w_s log f_s(x)
                   + 1[y_s=0] λ₂ (1 / (1 − 1/w_s)) log(1 − f_s(x))
                   + (1 − λ₂) log(1 − f_s(r)) ]

with ``w_s = n / n_s`` (``n`` training presence examples, ``n_s`` of them with species
``s``), so ``1/(1 − 1/w_s) = n / (n − n_s)``; ``r`` a random background row.  The second
term uses the other species' presences as pseudo-absences (target-group-like), the
third random background; λ₂ trades them off.  Defaults λ₁ = 1, λ₂ = 0.8 (the paper's
setting for random background).

**A label alone** (``n_s = n``: one species, or a species whose records are the only
presence examples) has no other species' presences, so the second term, which carries
the weight λ₂·n of the pseudo-absences for every other label, is empty, and with it
λ₂'s share: presences would weigh λ₁·n against (1 − λ₂)·n of background, five to one at
λ₂ = 0.8, and the map says "suitable" almost everywhere.  For such a label the background
term takes the whole pseudo-absence weight, 1 instead of 1 − λ₂ (λ₂ + (1 − λ₂)): presences
and background weigh λ₁·n and n, as the other labels' presences and their pseudo-absences
do, and the loss is presence-versus-background logistic regression — the setting of
MaxEnt as an infinitely weighted logistic regression (Fithian & Hastie 2013, *Annals of
Applied Statistics* 7:1917–1939), whose background weight is not traded against a
target group that does not exist.  With two or more species nothing changes.

**Inputs.**  ``background_logits`` (as in :mod:`.sinr`) and ``label_frequency``: the
fraction ``n_s / n`` of training presence examples with each label, broadcastable to
the logits (the method's component computes it once from the training observations;
clamped to ``[1e-6, 1 − 1e-6]`` so that both weights stay finite).  Observed
negatives are treated like the unobserved entries' pseudo-absence term.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .base import register_loss

EPS = 1e-6


@register_loss("full-weighted", reference="Zbinden et al. 2024, L_full-weighted (§2.3)",
               inputs=("background_logits", "label_frequency"))
def full_weighted(logits: torch.Tensor, observed: torch.Tensor, *, background_logits: torch.Tensor,
                  label_frequency: torch.Tensor, lambda1: float = 1.0, lambda2: float = 0.8) -> torch.Tensor:
    """Zbinden et al.'s full-weighted loss: λ₁·w_s on presences, λ₂·n/(n−n_s) on other labels, (1−λ₂) on background.

    >>> import torch, math
    >>> q = torch.tensor([0.5, 0.25])               # w = (2, 4); n/(n-n_s) = (2, 4/3)
    >>> out = full_weighted(torch.zeros(1, 2), torch.tensor([[1, 0]]), background_logits=torch.zeros(1, 2),
    ...                     label_frequency=q, lambda1=1.0, lambda2=0.5)
    >>> [round(v, 5) for v in out[0].tolist()] == [round((2 + 0.5) * math.log(2), 5),
    ...                                            round((0.5 * 4 / 3 + 0.5) * math.log(2), 5)]
    True
    """
    if background_logits.shape != logits.shape:
        raise ValueError(f"background_logits must pair one background row with each example: shape "
                         f"{tuple(background_logits.shape)} != logits {tuple(logits.shape)}")
    wide = torch.promote_types(logits.dtype, torch.float32)  # the weights in at least float32 (1 - 1e-6 is 1 in bfloat16)
    alone = label_frequency.to(wide) >= 1.0 - EPS  # every presence example is this label's: no target group
    q = label_frequency.to(wide).clamp(EPS, 1.0 - EPS)
    pos = observed == 1
    w_pos = (lambda1 / q).to(logits.dtype)
    w_neg = (lambda2 / (1.0 - q)).to(logits.dtype)
    w_bg = torch.where(alone, torch.ones_like(q), torch.full_like(q, 1.0 - lambda2)).to(logits.dtype)
    return (torch.where(pos, w_pos * F.softplus(-logits), w_neg * F.softplus(logits))
            + w_bg * F.softplus(background_logits))
