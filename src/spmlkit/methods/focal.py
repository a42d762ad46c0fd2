"""Focal-type losses on AN targets as methods, rows of Zhou et al.'s Table 1 (ECCV 2022):
the focal loss (Lin et al. 2017) and the asymmetric loss ASL (Ridnik et al. 2021)
(:mod:`spmlkit.losses.focal`).

==========  =========================================  ===========================================
method      loss                                       defaults (source)
==========  =========================================  ===========================================
``focal``   focal loss on AN targets                    γ = 2, no α (Lin et al.)
``asl``     asymmetric loss on AN targets               γ+ = 0, γ− = 4, m = 0.05 (Ridnik et al.)
==========  =========================================  ===========================================
"""
from __future__ import annotations

from .base import Method, register_method

FAMILY = "zhou2022"
REF = "Zhou et al. 2022"


@register_method("focal", reference=f"Lin et al. 2017; {REF}, Table 1 (Focal loss)", family=FAMILY)
def build_focal(gamma: float = 2.0, alpha: float | None = None) -> Method:
    """Focal loss on AN targets (Lin et al. 2017): γ = 2, no α-balancing."""
    return Method("focal", "focal", loss_params={"gamma": gamma, "alpha": alpha})


@register_method("asl", reference=f"Ridnik et al. 2021; {REF}, Table 1 (ASL)", family=FAMILY)
def build_asl(gamma_pos: float = 0.0, gamma_neg: float = 4.0, margin: float = 0.05) -> Method:
    """Asymmetric loss on AN targets (Ridnik et al. 2021): γ+ = 0, γ− = 4, probability margin m = 0.05."""
    return Method("asl", "asl", loss_params={"gamma_pos": gamma_pos, "gamma_neg": gamma_neg, "margin": margin})
