"""``auto``: spmlkit's own recipe (issue 16) — an ensemble of complementary families,
each tuned on held-out **observed** labels only.

What it does (:func:`spmlkit.training.recipe.train_recipe` carries it out):

1. Train each member method — by default ``l1r``, ``em-apl``, ``wan`` and ``ll-ct`` —
   at every learning rate of ``lrs`` (1e-2, 1e-3, 1e-4), with the user's seed, batch
   size and epochs; each run keeps its best epoch by ``observed_map`` on the
   validation split.
2. For each member method keep the learning rate with the best observed-label
   validation mAP (:func:`spmlkit.metrics.observed_positive_map`; no full label is
   read anywhere, also when the bundle has them: benchmarks then score single positives
   simulated in the training regime, :meth:`spmlkit.data.Bundle.selection_observations`).
3. Predict the mean of the members' probabilities,
   :math:`\\hat p_j(x) = \\frac{1}{M}\\sum_{m=1}^{M} \\sigma(f^{(m)}_j(x))`
   (reported as the logit of that mean).

Why these members (docs/recipe.md has the measurements):

* no single family wins everywhere — regularised assume-negative (**L1R**) is the one
  method never clearly below AN on the sparse Mulan sets, while entropy maximisation
  with pseudo-labels (**EM+APL**, Zhou et al. 2022, Eq. 3 and §3.3) is the best on
  dense and image-feature sets and collapses on sparse ones; down-weighted negatives
  (**WAN**, Cole et al. 2021 §5.1) and Large-Loss correction (**LL-Ct**, Kim et al.
  2022, Eq. 5) are steady in between;
* each needs neither full labels nor the expected number of positives k (so ROLE and
  EPR, which need k, are not members);
* picking one family by observed validation mAP was measured worse than averaging:
  the observed criterion is noisy on small validation splits (26–93 rows), and a wrong
  pick costs up to 20 mAP on sparse sets, while the average of complementary families
  is never far below its best member (dev draw, ``prepare-seed 5``, docs/recipe.md).

The defaults were fixed on that development draw before the learning-quality table
(draws 0–2) was run.

**Presence-only data** (a bundle with background rows: examples with no observed label,
issue 24): the members are ``full-weighted`` (Zbinden et al. 2024) and ``an-full``
(SINR, Cole et al. 2023, Eq. 5) — the losses that use the background rows, each its
paper's recommendation — and every choice is made by ``target_group_auc`` (each
species' held-out records against the other species' records; Phillips et al. 2009),
the criterion that tracks test AUC on presence-only data where ``observed_map`` and
``background_auc`` do not (``benchmarks/results/disdat/target-group``).  The general
members would treat background rows as examples absent of every species.
"""
from __future__ import annotations

from ..errors import ConfigError
from .base import Method, register_method

#: member methods of ``auto`` (one per family; none needs k or full labels)
DEFAULT_MEMBERS = "l1r,em-apl,wan,ll-ct"
#: member methods of ``auto`` on presence-only data (bundles with background rows)
PRESENCE_MEMBERS = "full-weighted,an-full"
#: learning rates each member is tried at (Cole et al. §6.1's grid without 1e-5, which
#: never won a linear-setting cell of the committed tables)
DEFAULT_LRS = "1e-2,1e-3,1e-4"


def _names(text: str, what: str) -> tuple[str, ...]:
    items = tuple(t.strip() for t in str(text).split(",") if t.strip())
    if not items:
        raise ConfigError(f"method 'auto': {what} is empty")
    return items


class Recipe(Method):
    """A method that is trained as several other methods and combined.

    The trainer recognises it by :attr:`Method.candidates` (non-empty) and hands it to
    :func:`spmlkit.training.recipe.train_recipe`; its own loss is never used."""

    def __init__(self, name: str, members: tuple[str, ...], lrs: tuple[float, ...], combine: str,
                 presence_members: tuple[str, ...] = ()):
        super().__init__(name, "an", setting="linear")
        self.candidates = members
        #: the members on presence-only data (background rows); empty: ``candidates`` there too
        self.presence_candidates = presence_members
        self.candidate_lrs = lrs
        self.combine = combine


@register_method("auto", reference="spmlkit's recipe, the default of spml train: docs/recipe.md", setting="linear",
                 family="recipe",
                 in_default_bench=False)
def build_auto(members: str = DEFAULT_MEMBERS, lrs: str = DEFAULT_LRS, combine: str = "mean_probability",
               presence_members: str = PRESENCE_MEMBERS) -> Method:
    """spmlkit's recipe: l1r, em-apl, wan and ll-ct, each at its best lr by observed validation mAP, probabilities averaged.

    ``members``: comma-separated registered methods; ``lrs``: comma-separated learning
    rates each member is tried at; ``combine``: ``mean_probability`` (average the
    members' probabilities) or ``select`` (keep the one member with the best observed
    validation mAP).  ``presence_members``: the members on presence-only data (a bundle
    with background rows), chosen by ``target_group_auc`` there.
    """
    from .base import get_method_spec

    names = _names(members, "members")
    po_names = _names(presence_members, "presence_members")
    for n in dict.fromkeys(names + po_names):
        spec = get_method_spec(n)  # unknown names: the registry's "did you mean" error
        if spec.setting == "finetune":
            raise ConfigError(f"method 'auto': member {n!r} needs fine-tuning; members train in the linear setting")
        if spec.family == "recipe":
            raise ConfigError(f"method 'auto': member {n!r} is itself a recipe")
        if spec.regime != "single_positive":
            raise ConfigError(f"method 'auto': member {n!r} trains on the {spec.regime!r} regime; members must "
                              "learn from single positives")
    try:
        rates = tuple(float(t) for t in _names(lrs, "lrs"))
    except ValueError:
        raise ConfigError(f"method 'auto': lrs must be comma-separated numbers, got {lrs!r}") from None
    if any(not (r > 0 and r < float("inf")) for r in rates):
        raise ConfigError(f"method 'auto': learning rates must be positive and finite, got {lrs!r}")
    if combine not in ("mean_probability", "select"):
        raise ConfigError(f"method 'auto': combine must be 'mean_probability' or 'select', got {combine!r}")
    return Recipe("auto", names, rates, combine, presence_members=po_names)
