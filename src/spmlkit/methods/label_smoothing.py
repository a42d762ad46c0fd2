"""Cole et al. (2021) methods that are a loss on a regime (ROLE is in :mod:`.role`).

=============  ===========  ==========================================================
method         regime       loss and defaults (reasons in the loss modules)
=============  ===========  ==========================================================
``bce-ls``     full         BCE with label smoothing, ε = 0.2 (paper notation; the
                            code's targets 0.9 / 0.1 that produced Table 1)
``an-ls``      1 P. & 0 N.  AN + symmetric label smoothing, Eq. 9, ε = 0.2 (same)
``an-ls-asym`` 1 P. & 0 N.  AN-LS(ε_p, ε_n), appendix A, defaults (0, 0.2) = Table A1's
                            "AN-LS(0, 0.1)" in the code's convention
``wan``        1 P. & 0 N.  weak assume negative, γ = 1/(L−1) (§5.1)
``epr``        1 P. & 0 N.  expected positive regularisation (§5.3), k from the data,
                            λ = 1 in the code's scaling
``pr``         1 P. & 0 N.  pairwise ranking with unobserved assumed negative (app. A)
=============  ===========  ==========================================================

``an-ls-asym`` is named after the paper's own description ("assume negative with
asymmetric label smoothing") and keeps ``an-ls`` for Table 1's symmetric row.

Data-dependent defaults (WAN's γ, EPR's k) are resolved when the method is set up
(``Method(..., resolve=...)``, :mod:`.base`) from the :class:`~.base.TrainContext` and
written back into ``method.params`` so that reports show the value used.
"""
from __future__ import annotations

from ..losses.weak_negatives import default_gamma
from ..params import Interval
from .base import Method, TrainContext, register_method, resolve_k


@register_method("bce-ls", regime="full", reference="Cole et al. 2021, Table 1 (BCE-LS)", family="cole2021")
def build_bce_ls(epsilon: float = 0.2) -> Method:
    """Full-label BCE with label smoothing (Cole Table 1 "BCE-LS"); ε in paper notation, 0.2 = code's 0.9/0.1."""
    return Method("bce-ls", "bce-ls", loss_params={"epsilon": epsilon})


@register_method("an-ls", regime="single_positive", reference="Cole et al. 2021, Eq. 9", family="cole2021")
def build_an_ls(epsilon: float = 0.2) -> Method:
    """Assume negative with label smoothing (Cole Eq. 9); ε in paper notation, 0.2 = code's 0.9/0.1 targets."""
    return Method("an-ls", "an-ls", loss_params={"epsilon": epsilon})


@register_method("an-ls-asym", regime="single_positive", reference="Cole et al. 2021, appendix A (Table A1)",
                 family="cole2021")
def build_an_ls_asym(epsilon_p: float = 0.0, epsilon_n: float = 0.2) -> Method:
    """Assume negative with asymmetric label smoothing AN-LS(ε_p, ε_n) (Cole appendix A)."""
    return Method("an-ls-asym", "an-ls-asym", loss_params={"epsilon_p": epsilon_p, "epsilon_n": epsilon_n})


@register_method("wan", regime="single_positive", reference="Cole et al. 2021, §5.1", family="cole2021")
def build_wan(gamma: float | None = None) -> Method:
    """Weak assume negative (Cole §5.1); gamma=None means 1/(L−1), the paper's value."""

    def resolve(ctx: TrainContext, params: dict) -> dict:
        g = params.get("gamma")
        return {**params, "gamma": default_gamma(ctx.n_labels) if g is None else float(g)}

    return Method("wan", "wan", loss_params={"gamma": gamma}, resolve=resolve)


@register_method("epr", regime="single_positive", reference="Cole et al. 2021, §5.3, Eq. 10", family="cole2021",
                 constraints={"k": [Interval(float, 0, None, closed="neither"), None]})
def build_epr(k: float | None = None, lam: float = 1.0) -> Method:
    """Expected positive regularisation (Cole §5.3); k=None takes k from the training data (Eq. A1)."""
    return Method("epr", "epr", loss_params={"k": k, "lam": lam}, resolve=resolve_k("epr"))


@register_method("pr", regime="single_positive", reference="Cole et al. 2021, appendix A", family="cole2021")
def build_pr() -> Method:
    """Pairwise ranking with unobserved labels assumed negative (Cole appendix A)."""
    return Method("pr", "pr")
