"""Pairwise ranking as a method, ``pr`` (Cole et al. 2021, appendix A): the observed positive
ranked above every unobserved label, which is assumed negative (:mod:`spmlkit.losses.ranking`).
"""
from __future__ import annotations

from .base import Method, register_method


@register_method("pr", regime="single_positive", reference="Cole et al. 2021, appendix A", family="cole2021")
def build_pr() -> Method:
    """Pairwise ranking with unobserved labels assumed negative (Cole appendix A)."""
    return Method("pr", "pr")
