"""``auto``'s cost at scale: a stated budget of training epochs, and learning rates chosen
by successive halving.

Below a size nothing here applies: every member trains at every learning rate for the
run's epochs, a member whose chosen run peaked at its last epoch trains again for longer
(:mod:`spmlkit.training.recipe`), and every committed table stays as it was.  From
``budget_from`` training entries (``N_train × L``; default 2**27, the size from which
validation scores a subsample too, :mod:`spmlkit.training.validation`) the recipe spends at
most ``budget`` times the training epochs of one ``-m an`` run (its epochs, at one
learning rate, on the linear head; default 4: with validation, weighing and scoring on
top, the whole default command stays within about five ``-m an`` commands — three linear
members at two learning rates and three epochs):

1. **Learning rates by successive halving** (Jamieson & Talwalkar 2016, *Non-stochastic
   best arm identification and hyperparameter optimization*, AISTATS; the rung of
   Hyperband, Li et al. 2018, JMLR 18(185)): every learning rate of a member trains one
   epoch, stacked in one loop; per seed the one with the best validation criterion goes
   on for the remaining epochs and the others stop there (:class:`LearningRateHalving`).
   A member then costs ``epochs + n_lrs - 1`` of its epochs instead of ``n_lrs × epochs``.
   The losers keep their first epoch and still count for the member's choice (they lost
   it), and are recorded.
2. **No longer try** (the recipe's ``longer``): it would re-train a member for
   ``longer × epochs``.
3. **Members from the cheapest while the budget lasts**: a member's cost is its epochs
   under (1) times its cost per epoch against an epoch of ``-m an`` on the linear head
   (:func:`member_cost`: the head's cost, :func:`head_cost`, plus what its loss costs
   beyond AN's, the method's declared ``epoch_cost``, measured by
   ``benchmarks/method_cost.py``: GR-Loss's elementwise passes over the ``(B, L)`` logits
   make its epoch about three of AN's at L = 10,000).  Members are admitted cheapest
   first (ties in the recipe's order), so that the budget buys as many members as it can
   — ensemble selection gains from more, different members (Caruana et al. 2004) — and
   they train in the recipe's order; members past the budget are dropped with the
   reason, as members over the memory budget are.  The cheapest member always trains.

Each of the three is said in one line and recorded in the run's notes
(``notes["budget"]``); the combination rule itself is unchanged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..methods.base import get_method_spec
from .callbacks import Callback

#: the elementwise work of a loss per (example, label) entry, forward and backward, in
#: multiply-adds of the head's output layer: a rough constant (sigmoid, log, their
#: gradients: a few tens of flops) that makes an MLP's 512 hidden units cost ~5.7 linear
#: heads on 64 features rather than 8
ENTRY_WORK = 32


def head_cost(head: str, in_features: int, hidden: int) -> float:
    """An epoch of ``head`` against an epoch of the linear head on the same data: the
    multiply-adds per (example, label) entry of the output layer plus :data:`ENTRY_WORK`
    (a tree head is not planned here: :mod:`spmlkit.training.trees` budgets its memory).

    >>> head_cost("linear", 64, 512)
    1.0
    >>> round(head_cost("mlp", 64, 512), 2)
    5.67
    """
    width = hidden if head == "mlp" else in_features
    return (width + ENTRY_WORK) / (in_features + ENTRY_WORK)


def member_cost(name: str, head: str, in_features: int, hidden: int) -> float:
    """An epoch of member ``name`` on ``head`` against an epoch of ``-m an`` on the linear
    head: the head's cost (:func:`head_cost`) plus the loss's cost beyond AN's
    (``epoch_cost - 1``, :attr:`spmlkit.methods.base.MethodSpec.epoch_cost`), which does
    not grow with the head's width (it is work per (example, label) entry on the logits).

    >>> member_cost("an", "linear", 64, 512), member_cost("an", "mlp", 64, 512) == head_cost("mlp", 64, 512)
    (1.0, True)
    """
    return head_cost(head, in_features, hidden) + get_method_spec(name).epoch_cost - 1.0


@dataclass
class BudgetPlan:
    """What the budget decided: ``members`` kept (``(method, head)``), ``dropped`` (with
    reasons), whether the learning rates are halved after the first epoch and the longer
    try is skipped (``active``), and the costs in epochs of one run."""

    active: bool
    members: tuple
    dropped: list = field(default_factory=list)
    budget_epochs: float = 0.0
    spent_epochs: float = 0.0

    def notes(self) -> dict | None:
        if not self.active:
            return None
        return {"budget_epochs": round(self.budget_epochs, 3), "planned_epochs": round(self.spent_epochs, 3),
                "halving": "learning rates after epoch 1", "longer": "skipped"}


def plan(members, *, n_train: int, n_labels: int, epochs: int, n_lrs: int, in_features: int, hidden: int,
         budget: float, budget_from: int) -> BudgetPlan:
    """The members that train within ``budget`` × ``epochs`` epochs of one linear ``-m an``
    run, when ``n_train × n_labels >= budget_from`` (else every member, nothing changed):
    admitted cheapest first (:func:`member_cost`; ties in the given order), returned in
    the given order.

    >>> p = plan((("gr", "linear"), ("wan", "linear"), ("l1r", "linear"), ("wan", "mlp")), n_train=10**5,
    ...          n_labels=10**4, epochs=3, n_lrs=2, in_features=64, hidden=512, budget=4, budget_from=2**27)
    >>> p.active, p.members, p.spent_epochs, [d["method"] for d in p.dropped]
    (True, (('wan', 'linear'), ('l1r', 'linear')), 9.0, ['gr', 'wan:mlp'])
    >>> plan((("gr", "linear"),), n_train=10, n_labels=10, epochs=3, n_lrs=2, in_features=64, hidden=512,
    ...      budget=4, budget_from=2**27).active
    False
    """
    if n_train * n_labels < budget_from:
        return BudgetPlan(False, tuple(members))
    total = budget * epochs
    per_member = epochs + max(n_lrs, 1) - 1  # successive halving: every lr one epoch, the best the rest
    costs = [per_member * member_cost(name, head, in_features, hidden) for name, head in members]
    kept, dropped, spent = set(), {}, 0.0
    for i in sorted(range(len(members)), key=lambda i: (costs[i], i)):
        name, head = members[i]
        if kept and spent + costs[i] > total:
            dropped[i] = {"method": f"{name}:{head}" if head != "linear" else name,
                          "reason": f"over auto's cost budget at this size: it would train {costs[i]:.1f} epochs of "
                                    f"one -m an run, {spent:.1f} of the {total:.1f} ({budget:g} runs x {epochs} "
                                    "epochs) planned already for cheaper members (method param budget)"}
            continue
        kept.add(i)
        spent += costs[i]
    return BudgetPlan(True, tuple(m for i, m in enumerate(members) if i in kept),
                      [dropped[i] for i in sorted(dropped)], total, spent)


class LearningRateHalving(Callback):
    """Successive halving of a member's learning rates (Jamieson & Talwalkar 2016): at the
    end of epoch ``at``, per seed, the stacked run with the best validation score goes on
    and every other run of that seed stops (its best epoch is kept, the loop's compaction
    takes it out of the stack).  A NaN score never wins; ties go to the first learning
    rate.  The decision lives in the loop's tracker (``stopped``), so a resumed run keeps it."""

    def __init__(self, at: int = 1):
        self.at = int(at)

    def on_epoch_end(self, fit, info: dict) -> None:
        if info["epoch"] != self.at:
            return
        scores = {row["member"]: row["val_score"] for row in info["rows"]}
        by_seed: dict = {}
        for g in fit.active:
            by_seed.setdefault(fit.member_info[g].get("seed"), []).append(g)
        for group in by_seed.values():
            valid = [g for g in group if not math.isnan(scores.get(g, math.nan))]
            if len(group) < 2 or not valid:
                continue
            winner = max(valid, key=lambda g: (scores[g], -group.index(g)))
            for g in group:
                if g != winner:
                    fit.tracker.members[g].stopped = True
