"""The one entry point of training: :func:`train` chooses, once, how ``config`` trains.

:func:`trainer_for` is the one place that chooses (:data:`TRAINERS`):

* ``recipe``: a recipe (:class:`spmlkit.methods.recipe.Recipe`, e.g. ``auto``: a
  meta-method, not a :class:`~spmlkit.methods.base.Method`) trains its member methods and
  combines them
  (:func:`spmlkit.training.recipe.train_recipe`);
* ``finetune``: ``config.setting == "finetune"``, backbone and head end to end on images
  (:func:`spmlkit.training.finetune.train_finetune`);
* ``trees``: ``config.head == "tree"``, gradient-boosted trees on tabular features
  (:func:`spmlkit.training.trees.train_trees`);
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
from ..methods.recipe import Recipe, is_recipe
from . import finetune, linear, recipe, trees  # (called through the modules: a test may replace a trainer)
from .prepare import build_run_method

SETTINGS = ("linear", "finetune")


class ProgressPlan(NamedTuple):
    """How a run's progress is counted (``spml train``'s bar): ``total`` units of ``unit``,
    ``steps`` units per epoch, ``per_member`` epochs per member method (a recipe trains
    each member in turn)."""

    per_member: int
    steps: int
    total: int
    unit: str  # "epoch"; "step" when fine-tuning (minutes per epoch: progress in optimizer steps); "round": trees


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


def _run_trees(bundle, config, method, *, log, **kw):
    return trees.train_trees(bundle, config, method=method, log=log, **kw)


def _plan_trees(config: TrainConfig, method: Method, n_train: int) -> ProgressPlan:
    n_seeds = len(dict.fromkeys(int(s) for s in config.members(None, None)[1]))
    return ProgressPlan(trees.ROUNDS, 1, trees.ROUNDS * n_seeds, "round")  # (boosting rounds, at most)


def _plan_finetune(config: TrainConfig, method: Method, n_train: int) -> ProgressPlan:
    per_member = int(finetune.resolve_recipe(config, method)["epochs"])
    steps = max(1, math.ceil(n_train / config.batch_size))
    return ProgressPlan(per_member, steps, per_member * steps, "step")


TRAINERS = {
    "recipe": Trainer("recipe", _run_recipe,
                      lambda c, m, n: ProgressPlan(c.epochs, 1, c.epochs * max(1, len(m.members)), "epoch")),
    "finetune": Trainer("finetune", _run_finetune, _plan_finetune),
    "linear": Trainer("linear", _run_linear, lambda c, m, n: ProgressPlan(c.epochs, 1, c.epochs, "epoch")),
    "trees": Trainer("trees", _run_trees, _plan_trees),
}


def trainer_for(config: TrainConfig, method: Method | Recipe) -> Trainer:
    """The one place that chooses how ``config`` trains with ``method`` (by type: a recipe
    is not a method)."""
    if is_recipe(method):
        return TRAINERS["recipe"]
    if config.head == "tree":
        return TRAINERS["trees"]
    return TRAINERS["finetune" if config.setting == "finetune" else "linear"]


def progress_plan(config: TrainConfig, method: Method, n_train: int) -> ProgressPlan:
    """The :class:`ProgressPlan` of training ``config`` with ``method`` on ``n_train``
    training examples."""
    return trainer_for(config, method).plan(config, method, n_train)


def train(bundle, config: TrainConfig, *, lrs: list[float] | None = None, seeds: list[int] | None = None,
          run_dir: str | Path | None = None, resume: bool = True, on_epoch=None, keep_state: bool = False,
          log=None, method: Method | None = None, device=None, callbacks=()) -> list:
    """Train ``config`` on ``bundle``: the one entry point of every trainer (recipe,
    fine-tuning, linear), chosen once by :func:`trainer_for`.

    Args:
        bundle: a prepared :class:`~spmlkit.data.Bundle`, or any object with the
            :class:`~spmlkit.data.bundle_like.BundleLike` members (an ``ArrayBundle``).
        config: the run's :class:`~spmlkit.config.TrainConfig` (method, its parameters,
            optimisation, selection, setting).
        lrs, seeds: the grid members, trained together as one stacked model where the
            method allows it; default ``[config.lr]`` and ``[config.seed]``.
        run_dir: a folder for the checkpoint and the methods' scratch files; with it a
            killed run resumes (``resume=True``) where it stopped.
        on_epoch: ``on_epoch(info)``, a plain function called as each epoch ends.
        keep_state: keep the model's and the method's final state in ``result.state``.
        log: messages of the fine-tuning trainer (LinearInit's extraction).
        method, device: the run's method (fresh, not set up; used for the first member's
            run) and its resolved device, when the caller has them already, so neither is
            built twice.
        callbacks: :mod:`spmlkit.training.callbacks` objects that hear every fit of the run.

    Returns:
        One :class:`~spmlkit.training.result.RunResult` per member ``zip(lrs, seeds)``, in
        member order: the best-validation epoch, its validation score and test mAP, the
        validation history.

    Example:
        >>> import numpy as np
        >>> from spmlkit.config import TrainConfig
        >>> from spmlkit.data.memory import ArrayBundle
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(60, 5)).astype("float32")
        >>> Z = np.zeros((60, 3), dtype="int8")
        >>> Z[np.arange(60), rng.integers(0, 3, 60)] = 1  # one observed positive per row
        >>> bundle = ArrayBundle(X[:40], Z[:40], X_val=X[40:], Z_val=Z[40:])
        >>> results = train(bundle, TrainConfig(method="an", epochs=2), lrs=[1e-2, 1e-3], seeds=[0, 0])
        >>> [(r.lr, r.epochs_run) for r in results]
        [(0.01, 2), (0.001, 2)]
    """
    if method is None:
        method = build_run_method(config)
    return trainer_for(config, method).run(bundle, config, method, lrs=lrs, seeds=seeds, run_dir=run_dir,
                                           resume=resume, on_epoch=on_epoch, keep_state=keep_state, device=device,
                                           log=log, callbacks=callbacks)
