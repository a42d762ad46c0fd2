"""Weak assume negative as a method, ``wan`` (Cole et al. 2021, §5.1): AN with the assumed
negatives weighted by γ, by default 1/(L−1) (reasons in :mod:`spmlkit.losses.weak_negatives`).

The data-dependent default is resolved when the method is set up (``Method(...,
resolve=...)``, :mod:`.base`) from the :class:`~.base.TrainContext` and written back
into ``method.params`` so that reports show the value used.  Zhou et al.'s DW row, the
same weighting under another name, is :mod:`.down_weighted`.
"""
from __future__ import annotations

from ..losses.weak_negatives import default_gamma
from .base import Method, TrainContext, register_method


@register_method("wan", regime="single_positive", reference="Cole et al. 2021, §5.1", family="cole2021",
                 epoch_cost=1.25)  # (the per-entry weights: benchmarks/results/method_cost.md)
def build_wan(gamma: float | None = None) -> Method:
    """Weak assume negative (Cole §5.1); gamma=None means 1/(L−1), the paper's value."""

    def resolve(ctx: TrainContext, params: dict) -> dict:
        g = params.get("gamma")
        return {**params, "gamma": default_gamma(ctx.n_labels) if g is None else float(g)}

    return Method("wan", "wan", loss_params={"gamma": gamma}, resolve=resolve)
