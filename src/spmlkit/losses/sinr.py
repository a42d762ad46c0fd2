"""The presence-only losses of SINR (Cole et al., ICML 2023, "Spatial Implicit Neural
Representations for Global-Scale Species Mapping", §3.2–3.3, Eq. 3–5 and the "ME"
variants of §3.3 / Table 1).

Notation: ``f_j(x) = σ(s_j(x))`` is the predicted probability of label (species) ``j`` at
example ``x``; ``z`` an observed positive of ``x``; ``r`` a **background** example (a
place with no observation at all, SINR's uniformly random location); ``S`` the number of
labels; ``H(f) = −f log f − (1−f) log(1−f)`` the Bernoulli entropy.

============  =========================================================================
loss          per example (the per-entry matrix below sums to it; mean over B·L = SINR's
              1/S-normalised batch mean up to the constant 1/S for the first two)
============  =========================================================================
``an-ssdl``   −log f_z(x) − log(1 − f_z(r))          "same species, different location"
``an-slds``   −log f_z(x) − log(1 − f_z′(x))         "same location, different species",
              z′ a uniformly random label that is not an observed positive of x
``an-full``   −(1/S)[λ log f_z(x) + Σ_{j≠z} log(1 − f_j(x)) + Σ_j log(1 − f_j(r))]
              (SINR Eq. 5, λ = 2048 as in SINR's experiments)
``*-me``      each assume-negative term −log(1 − f) replaced by the negative entropy
              −H(f): uncertainty is pushed towards ½ instead of towards absence
============  =========================================================================

**Inputs (the method contract).**  ``background_logits`` ``(..., B, L)``: the logits of
``B`` background rows drawn for this step (row ``i`` is the ``r`` paired with example
``i``); the linear trainer supplies them to any method whose loss declares this input
(:attr:`spmlkit.methods.base.Method.uses_background`).  ``an-slds`` also takes
``label_draw`` ``(..., B, L)``: uniform draws; ``z′`` is the unobserved label with the
largest draw, so the loss is a pure function (the randomness lives in the method's
component, seeded per member).

Observed negatives (data with real absences) always get −log(1 − f), never the entropy:
they are known, not assumed.  Several observed positives in one example (records merged
by site) each get their positive term.  Everything is computed on logits
(``softplus``), not on ``log(p + 1e-5)``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .base import register_loss
from .entropy import binary_entropy_with_logits

REFERENCE = "Cole et al. 2023 (SINR), Eq. 3-5"


def _check_background(logits: torch.Tensor, background_logits: torch.Tensor) -> None:
    if background_logits.shape != logits.shape:
        raise ValueError(f"background_logits must pair one background row with each example: shape "
                         f"{tuple(background_logits.shape)} != logits {tuple(logits.shape)}")


def _negative_term(logits: torch.Tensor, entropy: bool) -> torch.Tensor:
    """The assume-negative term: −log(1 − f) = softplus(s), or −H(f) for the ME variants."""
    return -binary_entropy_with_logits(logits) if entropy else F.softplus(logits)


def _ssdl(logits, observed, background_logits, entropy):
    _check_background(logits, background_logits)
    pos = (observed == 1).to(logits.dtype)
    neg = (observed == -1).to(logits.dtype)
    return (pos * (F.softplus(-logits) + _negative_term(background_logits, entropy))
            + neg * F.softplus(logits))


def _slds(logits, observed, label_draw, entropy):
    pos = observed == 1
    draw = torch.where(pos, torch.full_like(label_draw, -1.0), label_draw.to(logits.dtype))
    other = F.one_hot(draw.argmax(-1), logits.shape[-1]).to(torch.bool) & ~pos & (observed != -1)
    return (pos.to(logits.dtype) * F.softplus(-logits)
            + other.to(logits.dtype) * _negative_term(logits, entropy)
            + (observed == -1).to(logits.dtype) * F.softplus(logits))


def _full(logits, observed, background_logits, pos_weight, entropy):
    _check_background(logits, background_logits)
    pos = (observed == 1).to(logits.dtype)
    neg = (observed == -1).to(logits.dtype)
    unobs = (observed == 0).to(logits.dtype)
    return (pos * pos_weight * F.softplus(-logits) + neg * F.softplus(logits)
            + unobs * _negative_term(logits, entropy) + _negative_term(background_logits, entropy))


@register_loss("an-ssdl", reference=REFERENCE, inputs=("background_logits",))
def an_ssdl(logits: torch.Tensor, observed: torch.Tensor, *, background_logits: torch.Tensor) -> torch.Tensor:
    """SINR's AN-SSDL (Eq. 3): −log f_z(x) − log(1 − f_z(r)) on each observed positive z, r a background row.

    >>> import torch, math
    >>> out = an_ssdl(torch.zeros(1, 2), torch.tensor([[1, 0]]), background_logits=torch.zeros(1, 2))
    >>> [round(v, 6) for v in out[0].tolist()] == [round(2 * math.log(2), 6), 0.0]
    True
    """
    return _ssdl(logits, observed, background_logits, entropy=False)


@register_loss("an-ssdl-me", reference=REFERENCE + "; ME variant (§3.3)", inputs=("background_logits",))
def an_ssdl_me(logits: torch.Tensor, observed: torch.Tensor, *, background_logits: torch.Tensor) -> torch.Tensor:
    """AN-SSDL with the background term replaced by the negative entropy: −log f_z(x) − H(f_z(r))."""
    return _ssdl(logits, observed, background_logits, entropy=True)


@register_loss("an-slds", reference=REFERENCE, inputs=("label_draw",))
def an_slds(logits: torch.Tensor, observed: torch.Tensor, *, label_draw: torch.Tensor) -> torch.Tensor:
    """SINR's AN-SLDS (Eq. 4): −log f_z(x) − log(1 − f_z′(x)), z′ a random label not observed positive.

    ``label_draw`` (shaped like ``logits``) holds uniform draws; z′ is the non-positive
    label with the largest draw (uniform over them when the draws are i.i.d.).

    >>> import torch, math
    >>> out = an_slds(torch.zeros(1, 3), torch.tensor([[1, 0, 0]]), label_draw=torch.tensor([[0.9, 0.1, 0.5]]))
    >>> [round(v, 6) for v in out[0].tolist()] == [round(math.log(2), 6), 0.0, round(math.log(2), 6)]
    True
    """
    return _slds(logits, observed, label_draw, entropy=False)


@register_loss("an-slds-me", reference=REFERENCE + "; ME variant (§3.3)", inputs=("label_draw",))
def an_slds_me(logits: torch.Tensor, observed: torch.Tensor, *, label_draw: torch.Tensor) -> torch.Tensor:
    """AN-SLDS with the assume-negative term replaced by the negative entropy: −log f_z(x) − H(f_z′(x))."""
    return _slds(logits, observed, label_draw, entropy=True)


@register_loss("an-full", reference=REFERENCE, inputs=("background_logits",))
def an_full(logits: torch.Tensor, observed: torch.Tensor, *, background_logits: torch.Tensor,
            pos_weight: float = 2048.0) -> torch.Tensor:
    """SINR's "full assume negative" (Eq. 5): λ·(−log f_z(x)), −log(1 − f_j(x)) on the other labels, −log(1 − f_j(r)) on all.

    Per entry ``(i, j)``: ``λ·softplus(−s_ij)`` if j is an observed positive of example i,
    else ``softplus(s_ij)``; plus ``softplus(s_j(r_i))`` for the background row r_i paired
    with example i.  The mean over the B·L entries is SINR's −(1/S)[…] averaged over
    the batch.  ``pos_weight`` λ = 2048 is SINR's value (they note it is of the order of
    the number of species in their data, up-weighting the one positive against the 2S−1
    negative terms).

    >>> import torch, math
    >>> out = an_full(torch.zeros(1, 2), torch.tensor([[1, 0]]), background_logits=torch.zeros(1, 2), pos_weight=3.0)
    >>> [round(v, 5) for v in out[0].tolist()] == [round(4 * math.log(2), 5), round(2 * math.log(2), 5)]
    True
    """
    return _full(logits, observed, background_logits, pos_weight, entropy=False)


@register_loss("an-full-me", reference=REFERENCE + "; ME variant (§3.3)", inputs=("background_logits",))
def an_full_me(logits: torch.Tensor, observed: torch.Tensor, *, background_logits: torch.Tensor,
               pos_weight: float = 2048.0) -> torch.Tensor:
    """AN-full with every assume-negative term −log(1 − f) replaced by the negative entropy −H(f).

    >>> import torch, math
    >>> out = an_full_me(torch.zeros(1, 2), torch.tensor([[1, 0]]), background_logits=torch.zeros(1, 2), pos_weight=1.0)
    >>> [round(v, 5) for v in out[0].tolist()] == [0.0, round(-2 * math.log(2), 5)]
    True
    """
    return _full(logits, observed, background_logits, pos_weight, entropy=True)
