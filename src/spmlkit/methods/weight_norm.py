"""Zhou et al. (ECCV 2022) "Acknowledging the Unknown": EM, EM+APL and every other row of
their Table 1 that is not already a Cole et al. method.

==========  =========================================  ===========================================
method      loss / parts                               defaults (source)
==========  =========================================  ===========================================
``em``      EM loss (Eq. 3–4)                          α = 0.1 (authors' COCO/NUS value, median)
``em-apl``  EM + APL pseudo-labels (Eq. 6–8, Alg. 1)   α = 0.1, β = 0.2, θ = 0.9, T_w = ⌊T_t/2⌋
``dw``      AN, assumed negatives weighted              w = 1/(L−1) (Cole et al.'s WAN γ)
``l1r``     AN + λ‖W‖₁ of the classifier weights        λ = 1e-4
``l2r``     AN + λ‖W‖²₂ of the classifier weights       λ = 1e-4 (ResNet weight decay)
``ls``      AN with label smoothing on all labels       ε = 0.2, targets 0.9/0.1 (Cole's code)
``n-ls``    label smoothing on assumed negatives only   ε = 0.2
``entmin``  AN + λ·H(f) on unobserved labels            λ = 0.1
``focal``   focal loss on AN targets                    γ = 2, no α (Lin et al.)
``asl``     asymmetric loss on AN targets               γ+ = 0, γ− = 4, m = 0.05 (Ridnik et al.)
==========  =========================================  ===========================================

The defaults and their reasons are in each loss's docstring and in docs/zhou2022.md.
"ROLE" and "ROLE+LI" of the same table are Cole et al.'s methods (other module).
"""
from __future__ import annotations

import torch

from ..errors import ConfigError
from ..models.heads import StackedLinear
from .apl import AsymmetricPseudoLabeler
from .base import Batch, Method, register_method

FAMILY = "zhou2022"
REF = "Zhou et al. 2022"


# ----------------------------------------------------------------------------- EM
@register_method("em", reference=f"{REF}, Eq. 3-4", family=FAMILY)
def build_em(alpha: float = 0.1) -> Method:
    """Entropy-maximisation loss: −log f on the observed positive, −α·H(f) on unobserved labels (Zhou Eq. 3)."""
    return Method("em", "em", loss_params={"alpha": alpha})


@register_method("em-apl", reference=f"{REF}, Eq. 6-8, Algorithm 1", family=FAMILY)
def build_em_apl(alpha: float = 0.1, beta: float = 0.2, theta: float = 0.9, warmup: int | None = None,
                 soft: bool = True, positive: bool = False, positive_theta: float = 0.1) -> Method:
    """EM loss with asymmetric pseudo-labelling: soft negative pseudo-labels, added progressively after warm-up.

    ``theta`` (θ = 90%, all four datasets in the paper and code), ``warmup`` (T_w;
    None = ⌊T_t/2⌋, see :func:`spmlkit.methods.apl.default_warmup`), ``beta`` (β, weight
    of the pseudo-label BCE), ``soft`` (soft targets, Table 3), ``positive`` /
    ``positive_theta`` (positive pseudo-labels, off by default; 10% in the Fig. 3b
    ablation).  T_t is the run's number of epochs."""
    apl = AsymmetricPseudoLabeler(theta=theta, warmup=warmup, soft=soft, positive=positive,
                                  positive_theta=positive_theta)
    return Method("em-apl", "em-apl", loss_params={"alpha": alpha, "beta": beta}, components=[apl])


# ------------------------------------------------------------- improved AN rows
@register_method("dw", reference=f"{REF}, Table 1 (DW)", family=FAMILY)
def build_dw(weight: float | None = None) -> Method:
    """AN with down-weighted assumed negatives (weight None = 1/(L−1), Cole et al.'s WAN value)."""
    return Method("dw", "dw", loss_params={"weight": weight})


def classifier_weights(model) -> list[tuple[torch.Tensor, bool]]:
    """The classifier's weight matrices (biases excluded), each with a flag "has a
    leading member axis".

    Stacked heads (:mod:`spmlkit.models.heads`: every ``Stacked*`` layer's ``weight``,
    shaped ``(G, D, L)``) are found anywhere in the model, so a backbone followed by a
    stacked head regularises the head only.  Otherwise the weight matrices (dim ≥ 2) of
    a submodule named ``head``, ``classifier`` or ``fc`` are used, without member axis.
    """
    stacked = [(m.weight, True) for m in model.modules() if isinstance(m, StackedLinear)]
    if stacked:
        return stacked
    for name in ("head", "classifier", "fc"):
        sub = getattr(model, name, None)
        if isinstance(sub, torch.nn.Module):
            found = [(p, False) for n, p in sub.named_parameters() if n.endswith("weight") and p.dim() >= 2]
            if found:
                return found
    raise ConfigError(f"l1r/l2r: cannot find the classifier weights of a {type(model).__name__} "
                      "(expected stacked heads or a 'head' / 'classifier' / 'fc' submodule)")


class WeightNorm:
    """Regulariser ``λ·Σ‖W‖ₚᵖ`` over the classifier weights, per member: ``(logits, batch, model) -> (G,)``.

    ``p = 1``: L1 norm (sum of |w|); ``p = 2``: squared L2 norm (sum of w²).  Biases are not
    regularised.  For a model without member axis the penalty is broadcast over the
    ``G`` rows of ``logits`` (G = 1 for such models)."""

    def __init__(self, lam: float, p: int):
        if lam < 0:
            raise ConfigError(f"l{p}r: lam must be >= 0, got {lam}")
        if p not in (1, 2):
            raise ValueError("p must be 1 or 2")
        self.lam = float(lam)
        self.p = p

    def __call__(self, logits: torch.Tensor, batch: Batch, model) -> torch.Tensor:
        G = logits.shape[0] if logits.dim() == 3 else 1
        total = logits.new_zeros(G)
        for w, stacked in classifier_weights(model):
            term = w.abs() if self.p == 1 else w * w
            if stacked:
                total = total + term.reshape(term.shape[0], -1).sum(1)
            else:
                total = total + term.sum()
        return self.lam * total

    def __repr__(self) -> str:
        return f"WeightNorm(lam={self.lam}, p={self.p})"


@register_method("l1r", reference=f"{REF}, Table 1 (L1R)", family=FAMILY)
def build_l1r(lam: float = 1e-4) -> Method:
    """AN + λ·‖W‖₁ of the classifier weights (biases not regularised).

    λ = 1e-4: no value is published (Zhou et al. give none, their code has no such
    row); 1e-4 is the standard weight-decay strength of ResNet training (He et al.
    2016), used for both norms so the two rows differ only in the norm."""
    return Method("l1r", "an", regularizers=[WeightNorm(lam, 1)])


@register_method("l2r", reference=f"{REF}, Table 1 (L2R)", family=FAMILY)
def build_l2r(lam: float = 1e-4) -> Method:
    """AN + λ·‖W‖²₂ of the classifier weights (biases not regularised).

    λ = 1e-4: the weight decay of ResNet training (He et al. 2016); Zhou et al. give no
    value."""
    return Method("l2r", "an", regularizers=[WeightNorm(lam, 2)])


@register_method("ls", reference=f"{REF}, Table 1 (LS); Cole et al. 2021, Eq. 9", family=FAMILY)
def build_ls(epsilon: float = 0.2) -> Method:
    """AN with label smoothing on every label (targets 1 − ε/2 and ε/2; = Cole's AN-LS)."""
    return Method("ls", "ls", loss_params={"epsilon": epsilon})


@register_method("n-ls", reference=f"{REF}, Table 1 (N-LS)", family=FAMILY)
def build_n_ls(epsilon: float = 0.2) -> Method:
    """AN with label smoothing on the assumed negatives only (target ε/2; observed labels stay hard)."""
    return Method("n-ls", "n-ls", loss_params={"epsilon": epsilon})


# --------------------------------------------------------- other comparison rows
@register_method("entmin", reference=f"Grandvalet & Bengio 2004; {REF}, Table 1 (EntMin)", family=FAMILY)
def build_entmin(weight: float = 0.1, assume_negative: bool = True) -> Method:
    """AN + entropy minimisation λ·H(f) on unobserved labels (Grandvalet & Bengio 2004)."""
    return Method("entmin", "entmin", loss_params={"weight": weight, "assume_negative": assume_negative})


@register_method("focal", reference=f"Lin et al. 2017; {REF}, Table 1 (Focal loss)", family=FAMILY)
def build_focal(gamma: float = 2.0, alpha: float | None = None) -> Method:
    """Focal loss on AN targets (Lin et al. 2017): γ = 2, no α-balancing."""
    return Method("focal", "focal", loss_params={"gamma": gamma, "alpha": alpha})


@register_method("asl", reference=f"Ridnik et al. 2021; {REF}, Table 1 (ASL)", family=FAMILY)
def build_asl(gamma_pos: float = 0.0, gamma_neg: float = 4.0, margin: float = 0.05) -> Method:
    """Asymmetric loss on AN targets (Ridnik et al. 2021): γ+ = 0, γ− = 4, probability margin m = 0.05."""
    return Method("asl", "asl", loss_params={"gamma_pos": gamma_pos, "gamma_neg": gamma_neg, "margin": margin})
