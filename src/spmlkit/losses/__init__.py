"""Losses: one module per family, registered by name, one signature (see :mod:`.base`).

Every registered loss is also importable as a plain function, without the string
registry: by its registry name with ``-`` as ``_`` where that is not also a module name
(``from spmlkit.losses import wan, an_ls, em_apl``), and always as ``<name>_loss``
(``role_loss``, ``opml_loss``, ``em_apl_loss``).  The lists below are written out, so
a reader sees where each name comes from; ``tests/contracts/test_inits.py`` fails when
a registered loss is missing from them.  LAC's label-aware contrastive loss works on
label-wise embeddings, not on logits, so it is not in the logits registry; it is
exported as :func:`label_aware_contrastive`.

>>> from spmlkit.losses import wan, role_loss, get_loss
>>> wan is get_loss("wan").fn and role_loss is get_loss("role").fn
True
"""
from .base import LOSSES, LossSpec, get_loss, reduce_mean, register_loss
from .lac import label_aware_contrastive
from .assume_negative import (assume_negative as an_loss, assume_negative as an, bce as bce_loss, bce,
                              ignore_unobserved as iu_loss, ignore_unobserved as iu,
                              ignore_unobserved_negatives as iun_loss, ignore_unobserved_negatives as iun)
from .down_weighted import down_weighted as dw_loss, down_weighted as dw
from .entropy import (entropy_maximization as em_loss, entropy_maximization as em,
                      entropy_maximization_apl as em_apl_loss, entropy_maximization_apl as em_apl,
                      entropy_minimization as entmin_loss, entropy_minimization as entmin)
from .expected_positives import expected_positive_regularization as epr_loss, expected_positive_regularization as epr
from .focal import asymmetric as asl_loss, asymmetric as asl, focal as focal_loss
from .full_weighted import full_weighted as full_weighted_loss
from .generalized_robust import (generalized_pseudo_label_robust as gpr_loss, generalized_pseudo_label_robust as gpr,
                                 generalized_robust as gr_loss, generalized_robust as gr)
from .label_smoothing import (assume_negative_label_smoothing as an_ls_loss,
                              assume_negative_label_smoothing as an_ls,
                              assume_negative_asymmetric_label_smoothing as an_ls_asym_loss,
                              assume_negative_asymmetric_label_smoothing as an_ls_asym,
                              bce_label_smoothing as bce_ls_loss, bce_label_smoothing as bce_ls)
from .opml import opml as opml_loss, opml_soft as opml_soft_loss, opml_soft
from .plc import pseudo_label_consistency as plc_loss
from .ranking import pairwise_ranking as pr_loss, pairwise_ranking as pr
from .robust_mlml import focal_margin as focal_margin_loss, focal_margin, hill as hill_loss, hill
from .role import role as role_loss
from .sinr import (an_full as an_full_loss, an_full, an_full_me as an_full_me_loss, an_full_me,
                   an_slds as an_slds_loss, an_slds, an_slds_me as an_slds_me_loss, an_slds_me,
                   an_ssdl as an_ssdl_loss, an_ssdl, an_ssdl_me as an_ssdl_me_loss, an_ssdl_me)
from .vision_language import vision_language_pseudo_label as vlpl_loss, vision_language_pseudo_label as vlpl
from .weak_negatives import weak_assume_negative as wan_loss, weak_assume_negative as wan
from .zhou_label_smoothing import (label_smoothing as ls_loss, label_smoothing as ls,
                                   negative_label_smoothing as n_ls_loss, negative_label_smoothing as n_ls)
from .zlpr import zlpr as zlpr_loss, zlpr_soft as zlpr_soft_loss, zlpr_soft

__all__ = [
    "LOSSES", "LossSpec", "get_loss", "reduce_mean", "register_loss", "label_aware_contrastive", "an_loss", "an",
    "bce_loss", "bce", "iu_loss", "iu", "iun_loss", "iun", "dw_loss", "dw", "em_loss", "em", "em_apl_loss",
    "em_apl", "entmin_loss", "entmin", "epr_loss", "epr", "asl_loss", "asl", "focal_loss", "full_weighted_loss",
    "gpr_loss", "gpr", "gr_loss", "gr", "an_ls_loss", "an_ls", "an_ls_asym_loss", "an_ls_asym", "bce_ls_loss",
    "bce_ls", "opml_loss", "opml_soft_loss", "opml_soft", "plc_loss", "pr_loss", "pr", "focal_margin_loss",
    "focal_margin", "hill_loss", "hill", "role_loss", "an_full_loss", "an_full", "an_full_me_loss", "an_full_me",
    "an_slds_loss", "an_slds", "an_slds_me_loss", "an_slds_me", "an_ssdl_loss", "an_ssdl", "an_ssdl_me_loss",
    "an_ssdl_me", "vlpl_loss", "vlpl", "wan_loss", "wan", "ls_loss", "ls", "n_ls_loss", "n_ls", "zlpr_loss",
    "zlpr_soft_loss", "zlpr_soft",
]
