"""Cole et al. (2021) Table 1 rows that are plain losses on a label regime.

==========  =============================  ======================================
method      regime                         loss
==========  =============================  ======================================
``bce``     full ("All P. & All N.")       BCE on every label (Eq. 5)
``iun``     1 P. & all N.                  BCE on the positive and the true negatives (Eq. 7)
``iu``      1 P. & 1 N.                    BCE on one positive and one negative (Eq. 6)
``an``      1 P. & 0 N.                    assume negative (Eq. 8)
==========  =============================  ======================================
"""
from .base import Method, register_method


@register_method("bce", regime="full", reference="Cole et al. 2021, Eq. 5", family="cole2021")
def build_bce() -> Method:
    """Full-label binary cross-entropy (the oracle row of Cole Table 1)."""
    return Method("bce", "bce")


@register_method("iun", regime="single_positive_all_negatives", reference="Cole et al. 2021, Eq. 7",
                 family="cole2021")
def build_iun() -> Method:
    """One positive and all true negatives observed, unobserved positives ignored (Cole Eq. 7)."""
    return Method("iun", "iun")


@register_method("iu", regime="single_positive_one_negative", reference="Cole et al. 2021, Eq. 6",
                 family="cole2021")
def build_iu() -> Method:
    """One positive and one negative observed, the rest ignored (Cole Eq. 6)."""
    return Method("iu", "iu")


@register_method("an", regime="single_positive", reference="Cole et al. 2021, Eq. 8", family="cole2021")
def build_an() -> Method:
    """Assume every unobserved label is negative (Cole Eq. 8): the SPML baseline."""
    return Method("an", "an")
