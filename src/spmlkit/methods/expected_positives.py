"""Expected positive regularisation as a method, ``epr`` (Cole et al. 2021, §5.3, Eq. 10):
AN on the observed positives plus a penalty on the distance between the predicted number
of positives per example and k (reasons in :mod:`spmlkit.losses.expected_positives`).

k is taken from the training data when not given (Eq. A1), resolved when the method is
set up (:func:`.base.resolve_k`) and written back into ``method.params`` so that reports
show the value used; λ = 1 in the code's scaling.
"""
from __future__ import annotations

from ..params import Interval
from .base import Method, register_method, resolve_k


@register_method("epr", regime="single_positive", reference="Cole et al. 2021, §5.3, Eq. 10", family="cole2021",
                 constraints={"k": [Interval(float, 0, None, closed="neither"), None]})
def build_epr(k: float | None = None, lam: float = 1.0) -> Method:
    """Expected positive regularisation (Cole §5.3); k=None takes k from the training data (Eq. A1)."""
    return Method("epr", "epr", loss_params={"k": k, "lam": lam}, resolve=resolve_k("epr"))
