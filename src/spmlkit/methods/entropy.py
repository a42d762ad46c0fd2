"""Entropy terms on the unobserved labels as methods: EM and EM+APL (Zhou et al., ECCV 2022,
"Acknowledging the Unknown") and entropy minimisation (Grandvalet & Bengio 2004, a row of
Zhou et al.'s Table 1).

==========  =========================================  ===========================================
method      loss / parts                               defaults (source)
==========  =========================================  ===========================================
``em``      EM loss (Eq. 3–4)                          α = 0.1 (authors' COCO/NUS value, median)
``em-apl``  EM + APL pseudo-labels (Eq. 6–8, Alg. 1)   α = 0.1, β = 0.2, θ = 0.9, T_w = ⌊T_t/2⌋
``entmin``  AN + λ·H(f) on unobserved labels            λ = 0.1
==========  =========================================  ===========================================

The losses are :mod:`spmlkit.losses.entropy`; APL's pseudo-labeller is the component of
:mod:`.apl`.  The defaults and their reasons are in each loss's docstring and in
docs/zhou2022.md.
"""
from __future__ import annotations

from .apl import AsymmetricPseudoLabeler
from .base import Method, register_method

FAMILY = "zhou2022"
REF = "Zhou et al. 2022"


@register_method("em", reference=f"{REF}, Eq. 3-4", family=FAMILY)
def build_em(alpha: float = 0.1) -> Method:
    """Entropy-maximisation loss: −log f on the observed positive, −α·H(f) on unobserved labels (Zhou Eq. 3)."""
    return Method("em", "em", loss_params={"alpha": alpha})


@register_method("em-apl", reference=f"{REF}, Eq. 6-8, Algorithm 1", family=FAMILY,
                 epoch_cost=4.4)  # (benchmarks/results/method_cost.md; its epoch-end labelling pass on top)
def build_em_apl(alpha: float = 0.1, beta: float = 0.2, theta: float = 0.9, warmup: int | None = None,
                 soft: bool = True, positive: bool = False, positive_theta: float = 0.1) -> Method:
    """EM loss with asymmetric pseudo-labelling: soft negative pseudo-labels, added progressively after warm-up.

    ``theta`` (θ = 90%, all four datasets in the paper and code), ``warmup`` (T_w;
    None = ⌊T_t/2⌋, see :func:`spmlkit.methods.apl.default_warmup`), ``beta`` (β, weight
    of the pseudo-label BCE), ``soft`` (soft targets, Table 3), ``positive`` /
    ``positive_theta`` (positive pseudo-labels, off by default; 10% in the Fig. 3b
    ablation).  T_t is the run's number of epochs."""
    apl = AsymmetricPseudoLabeler(theta=theta, warmup=warmup, soft=soft, positive=positive,
                                  positive_theta=positive_theta)
    return Method("em-apl", "em-apl", loss_params={"alpha": alpha, "beta": beta}, components=[apl])


@register_method("entmin", reference=f"Grandvalet & Bengio 2004; {REF}, Table 1 (EntMin)", family=FAMILY)
def build_entmin(weight: float = 0.1, assume_negative: bool = True) -> Method:
    """AN + entropy minimisation λ·H(f) on unobserved labels (Grandvalet & Bengio 2004)."""
    return Method("entmin", "entmin", loss_params={"weight": weight, "assume_negative": assume_negative})
