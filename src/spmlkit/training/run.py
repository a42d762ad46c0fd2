"""The one entry point of training: :func:`train` chooses, once, how ``config`` trains.

* a recipe (:class:`spmlkit.methods.recipe.Recipe`, e.g. ``auto``: a meta-method, not a
  :class:`~spmlkit.methods.base.Method`) trains its member methods and combines them
  (:func:`spmlkit.training.recipe.train_recipe`);
* ``config.setting == "finetune"``: backbone and head end to end on images
  (:func:`spmlkit.training.finetune.train_finetune`);
* otherwise the linear setting on cached features
  (:func:`spmlkit.training.linear.train_linear`).

Imports go one way: this module → recipe → linear → prepare (and finetune → linear →
prepare); the trainers below it never choose another trainer.  Each trainer assembles
its run from :func:`spmlkit.training.prepare.prepare_run`.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

from ..config import TrainConfig
from ..methods.base import Method
from ..methods.recipe import Recipe, is_recipe
from .prepare import build_run_method

SETTINGS = ("linear", "finetune")


def trainer_kind(config: TrainConfig, method: Method | Recipe) -> str:
    """``"recipe"``, ``"finetune"`` or ``"linear"``: how :func:`train` trains ``config``
    (chosen by type: a recipe is not a method)."""
    if is_recipe(method):
        return "recipe"
    return "finetune" if config.setting == "finetune" else "linear"


def planned_epochs(config: TrainConfig, method: Method) -> int:
    """The epochs a run of ``config`` will report through ``on_epoch`` (a progress bar's
    total): a recipe trains each member method in turn; fine-tuning follows its recipe
    (:func:`spmlkit.training.finetune.resolve_recipe`)."""
    kind = trainer_kind(config, method)
    if kind == "finetune":
        from .finetune import resolve_recipe

        return int(resolve_recipe(config, method)["epochs"])
    return config.epochs * _n_members(method)


def _n_members(method) -> int:
    """The member methods a run trains in turn (a recipe's members; 1 otherwise)."""
    return max(1, len(method.members)) if is_recipe(method) else 1


class ProgressPlan(NamedTuple):
    """How a run's progress is counted (``spml train``'s bar): ``total`` units of ``unit``,
    ``steps`` units per epoch, ``per_member`` epochs per member method (a recipe trains
    each member in turn)."""

    per_member: int
    steps: int
    total: int
    unit: str  # "epoch", or "step" when fine-tuning (minutes per epoch: progress in optimizer steps)


def progress_plan(config: TrainConfig, method: Method, n_train: int) -> ProgressPlan:
    """The :class:`ProgressPlan` of training ``config`` with ``method`` on ``n_train``
    training examples."""
    if config.setting == "finetune":
        from .finetune import resolve_recipe

        per_member = resolve_recipe(config, method)["epochs"]
        steps = max(1, math.ceil(n_train / config.batch_size))
        return ProgressPlan(per_member, steps, per_member * steps, "step")
    return ProgressPlan(config.epochs, 1, config.epochs * _n_members(method), "epoch")


def train(bundle, config: TrainConfig, *, lrs: list[float] | None = None, seeds: list[int] | None = None,
          run_dir: str | Path | None = None, resume: bool = True, on_epoch=None, keep_state: bool = False,
          log=None, method: Method | None = None, device=None) -> list:
    """Train ``config`` on ``bundle``: one result (:class:`~spmlkit.training.linear.RunResult`)
    per member ``zip(lrs, seeds)`` (default: ``config.lr``, ``config.seed``), in member order.

    ``method`` / ``device``: the run's method (fresh, not set up; it is used for the first
    member's run) and resolved device when the caller has them already, so neither is
    built twice.  ``log``: messages of the fine-tuning trainer (LinearInit's extraction)."""
    if method is None:
        method = build_run_method(config)
    kind = trainer_kind(config, method)
    kw = dict(lrs=lrs, seeds=seeds, run_dir=run_dir, resume=resume, on_epoch=on_epoch, keep_state=keep_state,
              device=device)
    if kind == "recipe":
        from .recipe import train_recipe

        lrs, seeds = config.members(lrs, seeds)
        return train_recipe(bundle, config, method, **{**kw, "lrs": lrs, "seeds": seeds})
    if kind == "finetune":
        from .finetune import train_finetune

        return train_finetune(bundle, config, log=log, method=method, **kw)
    from .linear import train_linear

    return train_linear(bundle, config, method=method, **kw)
