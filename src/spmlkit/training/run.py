"""The one entry point of training: :func:`train` chooses, once, how ``config`` trains.

:func:`trainer_for` is the one place that chooses (:data:`TRAINERS`):

* ``recipe``: a recipe (e.g. ``auto``) trains its member methods and combines them
  (:func:`spmlkit.training.recipe.train_recipe`);
* ``finetune``: ``config.setting == "finetune"``, backbone and head end to end on images
  (:func:`spmlkit.training.finetune.train_finetune`);
* ``linear``: otherwise, a head on cached features
  (:func:`spmlkit.training.linear.train_linear`).

Each :class:`Trainer` also says how its runs count progress (:meth:`Trainer.plan`).
Imports go one way: this module → recipe → linear → prepare (and finetune → linear →
prepare); the trainers below it never choose another trainer.  Each trainer assembles
its run from :func:`spmlkit.training.prepare.prepare_run`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

from ..config import TrainConfig
from ..methods.base import Method
from . import finetune, linear, recipe  # (called through the modules: a test may replace a trainer)
from .prepare import build_run_method

SETTINGS = ("linear", "finetune")


class ProgressPlan(NamedTuple):
    """How a run's progress is counted (``spml train``'s bar): ``total`` units of ``unit``,
    ``steps`` units per epoch, ``per_member`` epochs per member method (a recipe trains
    each member in turn)."""

    per_member: int
    steps: int
    total: int
    unit: str  # "epoch", or "step" when fine-tuning (minutes per epoch: progress in optimizer steps)


@dataclass(frozen=True)
class Trainer:
    """A way to train: ``kind``, ``run(bundle, config, method, **options) -> [RunResult]``
    and ``plan(config, method, n_train) -> ProgressPlan``."""

    kind: str
    run: Callable[..., list]
    plan: Callable[[TrainConfig, Method, int], ProgressPlan]


def _run_recipe(bundle, config, method, *, lrs, seeds, log, **kw):
    lrs, seeds = config.members(lrs, seeds)
    return recipe.train_recipe(bundle, config, method, lrs=lrs, seeds=seeds, **kw)


def _run_finetune(bundle, config, method, **kw):
    return finetune.train_finetune(bundle, config, method=method, **kw)


def _run_linear(bundle, config, method, *, log, **kw):
    return linear.train_linear(bundle, config, method=method, **kw)


def _plan_finetune(config: TrainConfig, method: Method, n_train: int) -> ProgressPlan:
    per_member = int(finetune.resolve_recipe(config, method)["epochs"])
    steps = max(1, math.ceil(n_train / config.batch_size))
    return ProgressPlan(per_member, steps, per_member * steps, "step")


TRAINERS = {
    "recipe": Trainer("recipe", _run_recipe,
                      lambda c, m, n: ProgressPlan(c.epochs, 1, c.epochs * len(m.candidates), "epoch")),
    "finetune": Trainer("finetune", _run_finetune, _plan_finetune),
    "linear": Trainer("linear", _run_linear, lambda c, m, n: ProgressPlan(c.epochs, 1, c.epochs, "epoch")),
}


def trainer_for(config: TrainConfig, method: Method) -> Trainer:
    """The one place that chooses how ``config`` trains with ``method``."""
    if method.candidates:  # a recipe (the recipe's redesign makes it a kind of its own: one check to replace)
        return TRAINERS["recipe"]
    return TRAINERS["finetune" if config.setting == "finetune" else "linear"]


def progress_plan(config: TrainConfig, method: Method, n_train: int) -> ProgressPlan:
    """The :class:`ProgressPlan` of training ``config`` with ``method`` on ``n_train``
    training examples."""
    return trainer_for(config, method).plan(config, method, n_train)


def train(bundle, config: TrainConfig, *, lrs: list[float] | None = None, seeds: list[int] | None = None,
          run_dir: str | Path | None = None, resume: bool = True, on_epoch=None, keep_state: bool = False,
          log=None, method: Method | None = None, device=None, callbacks=()) -> list:
    """Train ``config`` on ``bundle``: one result (:class:`~spmlkit.training.result.RunResult`)
    per member ``zip(lrs, seeds)`` (default: ``config.lr``, ``config.seed``), in member order.

    ``method`` / ``device``: the run's method (fresh, not set up; it is used for the first
    member's run) and resolved device when the caller has them already, so neither is
    built twice.  ``callbacks`` (:mod:`spmlkit.training.callbacks`) hear every fit of the
    run; ``on_epoch(info)`` is a plain function called as each epoch ends.  ``log``:
    messages of the fine-tuning trainer (LinearInit's extraction)."""
    if method is None:
        method = build_run_method(config)
    return trainer_for(config, method).run(bundle, config, method, lrs=lrs, seeds=seeds, run_dir=run_dir,
                                           resume=resume, on_epoch=on_epoch, keep_state=keep_state, device=device,
                                           log=log, callbacks=callbacks)
