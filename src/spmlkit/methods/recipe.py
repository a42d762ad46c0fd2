"""Recipes: meta-methods that train several registered methods and combine them, in the
manner of scikit-learn's meta-estimators (a ``VotingClassifier`` is not a classifier with
a placeholder ``fit``: it holds estimators).  A :class:`Recipe` is **not** a
:class:`~spmlkit.methods.base.Method`: it has no loss and no hooks; it names its members,
their learning rates and how they are combined, and
:func:`spmlkit.training.recipe.train_recipe` carries it out (the one entry point,
:func:`spmlkit.training.run.train`, chooses that trainer by type: :func:`is_recipe`).

``auto`` is spmlkit's recipe for single-positive data (docs/recipe.md has the design and
the measurements):

1. Each **member** method (by default :data:`DEFAULT_MEMBERS`) trains at every learning
   rate of ``lrs`` with the user's seed, batch size, head and epochs; each run keeps its
   best epoch by the observed-label validation mAP (:func:`spmlkit.metrics.observed_positive_map`),
   and stops once that score has not improved for ``patience`` epochs (early stopping on
   the same label-free criterion; the user's ``--patience`` takes precedence).
2. Per member, the learning rate with the best observed validation mAP is kept.  When
   that run's best epoch is its last one, the member trains again at that learning rate
   for ``longer`` × the epochs, and the longer run is kept when its observed validation
   mAP is higher (training length chosen by the same label-free criterion).
3. The members are **chosen and weighed** on the observed validation labels
   (``combine``): by default ``ensemble_selection`` — greedy forward selection with
   replacement (Caruana et al. 2004), bagged over bootstrap resamples (rows drawn with replacement) of the
   validation rows (Caruana et al. 2006) — :mod:`spmlkit.training.ensemble`.  The
   prediction is the weighted mean of the chosen members' probabilities.

No full label is read by any choice: on a benchmark bundle that has full labels the
validation observations are single positives simulated in the training regime
(:meth:`spmlkit.data.Bundle.selection_observations`).

**Presence-only data** (a bundle with background rows): the members are
``presence_members`` — the losses that use the background rows (``full-weighted``,
Zbinden et al. 2024; ``an-full``, SINR, Cole et al. 2023, Eq. 5), on the SINR network
(``presence_head``, an MLP; Cole et al. 2023 §4) — and every choice is made by the
target-group AUC (Phillips et al. 2009; ``target_group_auc``).
"""
from __future__ import annotations

import importlib.util

from ..errors import ConfigError
from ..models.heads import HEADS
from .base import get_method_spec, register_method

#: member methods of ``auto`` (``name`` or ``name:head``; none needs k or full labels)
DEFAULT_MEMBERS = "em-apl,gr,wan,l1r,em-apl:mlp,wan:mlp,wan:tree"
#: member methods of ``auto`` on presence-only data (bundles with background rows)
PRESENCE_MEMBERS = "full-weighted,an-full,full-weighted:tree"
#: ... and on presence-only data with **one** species: SINR's AN-full weighs a presence
#: λ = 2048 times a background row, a balance set for thousands of species (Cole et al. 2023
#: §5: each presence is drowned by every other species' pseudo-absences); with one species
#: nothing drowns it and the map's level says "suitable" nearly everywhere (its ranking may
#: still be good).  full-weighted's weights stay balanced with one species
#: (spmlkit.losses.full_weighted, "A label alone").  Its head is MaxEnt itself (``maxent``,
#: spmlkit.models.maxent_head: MaxEnt's features and regularised objective, solved to
#: convergence; Phillips & Dudík 2008, maxnet's defaults), the model whose smooth, clamped
#: responses the field trusts to transfer to places not sampled.  Chosen on folds that leave
#: the scored fold out (benchmarks/results/dismo/bradypus_nested*.md), not on the test folds:
#: there it scored above the earlier default (SINR's MLP, the MaxEnt-feature head and a linear
#: head, weighed by validation) on random and spatial folds; pairing it with the MLP lost on
#: spatial folds with its earlier penalties and tied (within 0.001) with maxnet's
#: (bradypus_nested_maxnet_regularisation.md), where the single model is kept: one fit, no
#: seed, MaxEnt's own output scale.  MaxEnt's regularisation multiplier is then **tuned on
#: the validation rows**, as the field tunes it on spatially separate data (Radosavljevic &
#: Anderson 2014, J. Biogeogr. 41:629; Muscarella et al. 2014's ENMeval): MaxEnt at maxnet's
#: ``regmult`` 1 (its default), 2 and 4 (doubling steps over ENMeval's usual 1–5), chosen and
#: weighed by validation as every member is.  On the inner folds
#: (bradypus_nested_regmult.md) the spatial folds rose from 0.855 to 0.871 (MaxEnt 0.852)
#: and the random folds stayed at 0.888 (MaxEnt 0.890).
PRESENCE_SINGLE_MEMBERS = "full-weighted:maxent,full-weighted:maxent-x2,full-weighted:maxent-x4"
#: the head of the presence-only members: SINR's network (Cole et al. 2023 §4: a residual MLP)
PRESENCE_HEAD = "mlp"
#: learning rates each member is tried at: the two of Cole et al. §6.1's grid that the
#: design pool's members chose (1e-4 won rarely, and leaving it out lost nothing there,
#: benchmarks/results/recipe_strategies.md); a third of the cost saved
DEFAULT_LRS = "1e-2,1e-3"
#: the tree members (``:tree``, gradient-boosted trees) need the trees extra (XGBoost); without it
#: ``auto`` trains its other members
def _installed(name: str) -> bool:
    """Whether ``name`` can be imported, asked without importing it (an import hook that
    refuses the name, as a machine without it would, counts as not installed)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


TREES_INSTALLED = _installed("xgboost")
COMBINE = ("ensemble_selection", "mean_probability", "select")
#: when the members marked ``:mlp`` train: on tabular features only (``tabular``: not on a
#: backbone's cached image features, where the papers' setting is the linear probe and an
#: MLP member costs ~25 linear ones), ``always`` or ``never``
MLP_WHEN = ("tabular", "always", "never")
#: epochs without a better observed validation score before a member's run stops: a fixed
#: number of epochs, as common early-stopping defaults are (Keras and Lightning count
#: checks, scikit-learn's MLP ``n_iter_no_change`` 10), chosen as a fifth of the papers'
#: linear-setting budget of 25 epochs (Cole et al. 2021 §6.1); the best epoch is kept, so a
#: run only loses an improvement that would have come after 5 flat epochs
PATIENCE = 5
#: auto's cost budget at scale, in runs, and the training entries from which it applies
#: (spmlkit.training.budget, whose docstring gives the reasons)
BUDGET = 4.0
BUDGET_FROM = 2 ** 27


def _names(text: str, what: str) -> tuple[str, ...]:
    items = tuple(t.strip() for t in str(text).split(",") if t.strip())
    if not items:
        raise ConfigError(f"method 'auto': {what} is empty")
    return items


class Recipe:
    """A meta-method: members (``(method, head)``; head ``None`` = the run's head), the
    learning rates each member tries, and how the members are combined.  Trained by
    :func:`spmlkit.training.recipe.train_recipe`."""

    regime = "single_positive"
    setting = "linear"
    #: the bench stacks a recipe's seeds in one group (each member stacks its own runs)
    supports_members = True
    #: the recipe itself draws no background row (its presence-only members do)
    uses_background = False

    def __init__(self, name: str, members: tuple, lrs: tuple[float, ...], combine: str, *,
                 presence_members: tuple = (), presence_head: str | None = None, presence_single: tuple = (),
                 longer: int = 2,
                 rounds: int = 20, steps: int = 10, mlp: str = "tabular", patience: int | None = None,
                 budget: float = 4.0, budget_from: int = 2 ** 27, params: dict | None = None):
        self.name = name
        self.members = tuple(members)
        self.presence_members = tuple(presence_members)
        self.presence_single = tuple(presence_single)
        self.presence_head = presence_head
        self.lrs = tuple(lrs)
        self.combine = combine
        self.longer = int(longer)
        self.rounds = int(rounds)
        self.steps = int(steps)
        self.mlp = mlp
        self.patience = None if patience is None else int(patience)
        self.budget = float(budget)
        self.budget_from = int(budget_from)
        self.params = dict(params or {})

    def members_for(self, presence_only: bool, backbone_features: bool = False, n_labels: int | None = None) -> tuple:
        """``((method, head or None), ...)``: the presence-only members on data with
        background rows (when the recipe declares them; with one label, its one-species
        members when it declares those), else the members — without those marked ``:mlp`` on
        a backbone's cached features unless ``mlp="always"`` (and never with ``mlp="never"``)."""
        if presence_only and self.presence_members:
            chosen = self.presence_single if n_labels == 1 and self.presence_single else self.presence_members
            return tuple((m, h or self.presence_head) for m, h in chosen if not (h == "tree" and not TREES_INSTALLED))
        skip = self.mlp == "never" or (self.mlp == "tabular" and backbone_features)
        # tree members: tabular features only, and only with the trees extra installed
        no_trees = backbone_features or not TREES_INSTALLED
        kept = tuple((m, h) for m, h in self.members if not (skip and h == "mlp") and not (no_trees and h == "tree"))
        return kept or self.members

    def __repr__(self) -> str:
        return f"Recipe({self.name!r}, members={self.members}, lrs={self.lrs}, combine={self.combine!r})"


def is_recipe(method) -> bool:
    """True for a recipe (trained as its members, :mod:`spmlkit.training.recipe`), False
    for a method (trained with its loss)."""
    return isinstance(method, Recipe)


def parse_members(text: str, what: str = "members") -> tuple:
    """``"a,b:mlp"`` -> ``(("a", None), ("b", "mlp"))``, each checked: a registered
    single-positive method of the linear setting that is not itself a recipe, and a known head."""
    out = []
    for item in _names(text, what):
        name, _, head = item.partition(":")
        name, head = name.strip(), head.strip() or None
        spec = get_method_spec(name)  # unknown names: the registry's "did you mean" error
        if spec.setting == "finetune":
            raise ConfigError(f"method 'auto': member {name!r} needs fine-tuning; members train in the linear setting")
        if spec.family == "recipe":
            raise ConfigError(f"method 'auto': member {name!r} is itself a recipe")
        if spec.regime != "single_positive":
            raise ConfigError(f"method 'auto': member {name!r} trains on the {spec.regime!r} regime; members must "
                              "learn from single positives")
        if head is not None and head not in HEADS:
            raise ConfigError(f"method 'auto': member {item!r}: head must be one of {', '.join(sorted(HEADS))}")
        out.append((name, head))
    if len(set(out)) != len(out):
        raise ConfigError(f"method 'auto': {what} lists a member twice ({text!r})")
    return tuple(out)


@register_method("auto", reference="spmlkit's recipe, the default of spml train: docs/recipe.md", setting="linear",
                 family="recipe", in_default_bench=False)
def build_auto(members: str = DEFAULT_MEMBERS, lrs: str = DEFAULT_LRS, combine: str = "ensemble_selection",
               presence_members: str = PRESENCE_MEMBERS, presence_head: str = PRESENCE_HEAD,
               presence_single: str = PRESENCE_SINGLE_MEMBERS, longer: int = 2,
               rounds: int = 20, steps: int = 10, mlp: str = "tabular", patience: int = PATIENCE,
               budget: float = BUDGET, budget_from: int = BUDGET_FROM) -> Recipe:
    """spmlkit's recipe: em-apl, gr, wan, l1r (and em-apl, wan with an MLP head on tabular data), chosen and weighed on observed labels.

    ``members``: comma-separated registered methods, each optionally ``:linear`` / ``:mlp``
    (default: the run's head); ``lrs``: the learning rates each member tries; ``combine``:
    ``ensemble_selection`` (bagged greedy selection on the observed validation mAP),
    ``mean_probability`` (every member, equal weights) or ``select`` (the one member with
    the best observed validation mAP); ``longer``: a member whose chosen run peaked at its
    last epoch trains again for ``longer`` × the epochs (1: never); ``rounds`` / ``steps``:
    the resamples and greedy steps of ``ensemble_selection``; ``mlp``: when the ``:mlp``
    members train (``tabular``: not on a backbone's image features; ``always``; ``never``);
    ``patience``: a member's run stops after this many epochs without a better observed
    validation score (its best epoch is kept; a value >= the epochs runs every epoch; the
    run's own ``--patience``, when given, takes precedence).
    ``budget`` / ``budget_from``: from ``budget_from`` training entries (N x L) the members
    train within ``budget`` times the epochs of one run — learning rates by successive
    halving after one epoch, no longer try, members in order while the budget lasts
    (:mod:`spmlkit.training.budget`; said and recorded); below it nothing changes.
    ``presence_members`` /
    ``presence_head``: the members and their head on presence-only data (background rows),
    chosen by ``target_group_auc`` there; ``presence_single``: the members on presence-only
    data with one species (``background_auc`` chooses there; by default full-weighted with
    MaxEnt's own head at regularisation multipliers 1, 2 and 4: ``maxent``, ``maxent-x2``,
    ``maxent-x4``).
    """
    names = parse_members(members)
    po_names = parse_members(presence_members, "presence_members")
    single = parse_members(presence_single, "presence_single")
    try:
        rates = tuple(float(t) for t in _names(lrs, "lrs"))
    except ValueError:
        raise ConfigError(f"method 'auto': lrs must be comma-separated numbers, got {lrs!r}") from None
    if any(not (r > 0 and r < float("inf")) for r in rates):
        raise ConfigError(f"method 'auto': learning rates must be positive and finite, got {lrs!r}")
    if mlp not in MLP_WHEN:
        raise ConfigError(f"method 'auto': mlp must be one of {', '.join(MLP_WHEN)}, got {mlp!r}")
    if combine not in COMBINE:
        raise ConfigError(f"method 'auto': combine must be one of {', '.join(COMBINE)}, got {combine!r}")
    if presence_head not in HEADS:
        raise ConfigError(f"method 'auto': presence_head must be one of {', '.join(sorted(HEADS))}, "
                          f"got {presence_head!r}")
    for key, value, low in (("longer", longer, 1), ("rounds", rounds, 1), ("steps", steps, 1),
                            ("patience", patience, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"method 'auto': {key} must be an integer >= {low}, got {value!r}")
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not (budget > 0 and budget < float("inf")):
        raise ConfigError(f"method 'auto': budget must be a positive number of runs, got {budget!r}")
    if isinstance(budget_from, bool) or not isinstance(budget_from, int) or budget_from < 0:
        raise ConfigError(f"method 'auto': budget_from must be an integer >= 0 (training entries), got {budget_from!r}")
    return Recipe("auto", names, rates, combine, presence_members=po_names, presence_head=presence_head,
                  presence_single=single, longer=longer, rounds=rounds, steps=steps, mlp=mlp, patience=patience,
                  budget=budget, budget_from=budget_from)
