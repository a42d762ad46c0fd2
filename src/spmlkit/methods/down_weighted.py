"""Down-weighted assumed negatives as a method, ``dw`` (Zhou et al., ECCV 2022, Table 1):
AN with every assumed negative weighted by w, by default 1/(L−1), Cole et al.'s WAN γ
(:mod:`spmlkit.losses.down_weighted`; WAN itself is :mod:`.weak_negatives`).
"""
from __future__ import annotations

from .base import Method, register_method

FAMILY = "zhou2022"
REF = "Zhou et al. 2022"


@register_method("dw", reference=f"{REF}, Table 1 (DW)", family=FAMILY)
def build_dw(weight: float | None = None) -> Method:
    """AN with down-weighted assumed negatives (weight None = 1/(L−1), Cole et al.'s WAN value)."""
    return Method("dw", "dw", loss_params={"weight": weight})
