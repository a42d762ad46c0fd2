"""Zhou et al.'s label smoothing rows as methods (ECCV 2022, Table 1): LS on every label and
N-LS on the assumed negatives only (:mod:`spmlkit.losses.zhou_label_smoothing`; Cole et
al.'s AN-LS rows are :mod:`.label_smoothing`).

==========  =========================================  ===========================================
method      loss                                       defaults (source)
==========  =========================================  ===========================================
``ls``      AN with label smoothing on all labels       ε = 0.2, targets 0.9/0.1 (Cole's code)
``n-ls``    label smoothing on assumed negatives only   ε = 0.2
==========  =========================================  ===========================================
"""
from __future__ import annotations

from .base import Method, register_method

FAMILY = "zhou2022"
REF = "Zhou et al. 2022"


@register_method("ls", reference=f"{REF}, Table 1 (LS); Cole et al. 2021, Eq. 9", family=FAMILY)
def build_ls(epsilon: float = 0.2) -> Method:
    """AN with label smoothing on every label (targets 1 − ε/2 and ε/2; = Cole's AN-LS)."""
    return Method("ls", "ls", loss_params={"epsilon": epsilon})


@register_method("n-ls", reference=f"{REF}, Table 1 (N-LS)", family=FAMILY)
def build_n_ls(epsilon: float = 0.2) -> Method:
    """AN with label smoothing on the assumed negatives only (target ε/2; observed labels stay hard)."""
    return Method("n-ls", "n-ls", loss_params={"epsilon": epsilon})
