"""Label smoothing as methods (Cole et al. 2021): BCE-LS on full labels, AN-LS on single
positives, symmetric and asymmetric.  Zhou et al.'s LS / N-LS rows are in
:mod:`.zhou_label_smoothing`.

=============  ===========  ==========================================================
method         regime       loss and defaults (reasons in :mod:`spmlkit.losses.label_smoothing`)
=============  ===========  ==========================================================
``bce-ls``     full         BCE with label smoothing, ε = 0.2 (paper notation; the
                            code's targets 0.9 / 0.1 that produced Table 1)
``an-ls``      1 P. & 0 N.  AN + symmetric label smoothing, Eq. 9, ε = 0.2 (same)
``an-ls-asym`` 1 P. & 0 N.  AN-LS(ε_p, ε_n), appendix A, defaults (0, 0.2) = Table A1's
                            "AN-LS(0, 0.1)" in the code's convention
=============  ===========  ==========================================================

``an-ls-asym`` is named after the paper's own description ("assume negative with
asymmetric label smoothing") and keeps ``an-ls`` for Table 1's symmetric row.
"""
from __future__ import annotations

from .base import Method, register_method


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
