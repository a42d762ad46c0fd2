"""Planning a bench: every training group in a fixed order, each named by a hash of
everything that determines its result (so a changed epoch count or grid never reuses
stale results).

A *group* is one dataset, method (with its hyper-parameters and regime), training
fraction, batch size and a set of (lr, seed) members.  Learning rates × seeds of one
batch size form one group trained as one stacked model when the method allows it
(``Method.supports_members``), otherwise each (lr, seed) is its own group.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ...config import TrainConfig
from ...io import sha256_file
from .data import BenchDataset, subsample_rows
from .spec import DEFAULT_EPOCHS, BenchSpec, _methods_registry, method_params, split_row

BENCH_FORMAT = 1


@dataclass
class Group:
    dataset: str
    method: str
    params: dict  # the user's hyper-parameters
    regime: str  # effective regime (row group)
    hide_prob: float | None
    fraction: float
    batch_size: int
    members: tuple  # ((lr, seed), ...)
    config: TrainConfig
    key: dict
    hash: str
    histograms: bool
    n_train: int = 0  # training examples (after subsampling)
    draw: int | None = None  # --vary-draw: the prepare seed of the bundle this group trains on
    loops: int = 1  # training loops of one group: a recipe trains each of its members in a loop of its own

    @property
    def n_members(self) -> int:
        return len(self.members)

    @property
    def steps_per_epoch(self) -> int:
        return -(-self.n_train // self.batch_size)

    @property
    def steps(self) -> int:
        """Optimizer steps of the whole group: the progress bar's unit.  One step of a
        stacked group updates all its members at once, so steps track wall time better
        than member-epochs (and, unlike epochs, account for dataset and batch size).  A
        recipe's group counts every member's loop (runs stopped early or tried longer make
        the real count smaller or larger; the bar is set to the group's end when it ends)."""
        return self.config.epochs * self.steps_per_epoch * self.loops


def canonical(obj) -> str:
    """``obj`` as canonical JSON (sorted keys, no spaces): what a group's hash is taken of."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr)


def _draw_units(spec: BenchSpec, datasets: list[BenchDataset]) -> list[tuple]:
    """``(dataset, draw, bundle, fingerprint, seeds)`` per dataset and draw: one unit with every
    seed on the dataset's bundle, or with ``--vary-draw`` one unit per seed s on the bundle
    prepared with prepare seed s."""
    units = []
    for ds in datasets:
        if ds.draws:
            units += [(ds, s, b, fp, (s,)) for s, (b, fp) in ds.draws.items()]
        else:
            units.append((ds, None, ds.bundle, ds.fingerprint, tuple(spec.seeds)))
    return units


def plan_groups(spec: BenchSpec, datasets: list[BenchDataset]) -> list[Group]:
    """Every training group of the bench, in a fixed order (datasets, fractions or
    hiding probabilities, methods, batch sizes, members)."""
    from ...methods import build_method  # (lazy: imports every method module)
    from ...methods.recipe import is_recipe
    from ...training.recipe import recipe_members

    reg = _methods_registry()
    epochs = spec.resolved_epochs()
    groups: list[Group] = []
    variants = [(1.0, p) for p in spec.hide_fractions] if spec.hide_fractions else \
        [(f, None) for f in spec.train_fractions]
    for ds, draw, draw_bundle, fingerprint, unit_seeds in _draw_units(spec, datasets):
        for fraction, hide in variants:
            n_train = draw_bundle.size("train") if fraction == 1.0 else len(
                subsample_rows(draw_bundle.size("train"), fraction, spec.subsample_seed))
            for name in spec.methods:
                mname, row_cfg = split_row(name)
                params = method_params(spec, name)
                method = build_method(mname, **params)
                resolved = {**reg[mname].hyperparameters, **params}
                regime = spec.regime or reg[mname].regime
                stacked = method.supports_members
                run_cfg = {**spec.config, **row_cfg}
                run_epochs = epochs
                if spec.setting == "finetune":
                    if row_cfg.get("linear_init"):  # Cole: the linear setting's epochs, then a short fine-tune
                        run_epochs = DEFAULT_EPOCHS["linear"]
                    else:  # --epochs is the fine-tuning length
                        run_cfg["finetune_epochs"] = epochs
                for bs in spec.batch_sizes:
                    base = TrainConfig(method=mname, params=params, batch_size=bs, epochs=run_epochs,
                                       patience=spec.patience, regime=spec.regime, hide_prob=hide,
                                       lr=spec.lrs[0], seed=unit_seeds[0], **run_cfg)
                    # a recipe (e.g. auto) searches its own learning rates: one member per seed
                    row_lrs = spec.lrs[:1] if is_recipe(method) else spec.lrs
                    loops = len(recipe_members(draw_bundle, method, base)) if is_recipe(method) else 1
                    members = [(float(lr), int(s)) for lr in row_lrs for s in unit_seeds]
                    member_groups = [members] if stacked else [[m] for m in members]
                    # (a recipe's epochs belong to several member methods: no histogram of its own)
                    hist = bool(spec.histograms and fraction == 1.0 and hide is None and not is_recipe(method))
                    for mg in member_groups:
                        cfg = base.replace(lr=mg[0][0], seed=mg[0][1])
                        cd = cfg.to_dict()
                        cd.pop("lr")
                        cd.pop("seed")
                        cd.pop("device", None)  # where a group trains is not what it is (files are device-free)
                        key = {"format": BENCH_FORMAT, "bundle": fingerprint, "setting": spec.setting,
                               "config": cd, "resolved_params": resolved, "members": [list(m) for m in mg],
                               "fraction": fraction,
                               "subsample_seed": spec.subsample_seed if fraction < 1.0 else None,
                               "histograms": hist}
                        if draw is not None:  # absent otherwise, so existing benches keep their group hashes
                            key["draw"] = draw
                        ps = params.get("pseudo_scores")
                        if ps and Path(str(ps)).is_file():  # a file changed in place is another group
                            key["pseudo_scores_sha256"] = sha256_file(ps)
                        h = hashlib.sha256(canonical(key).encode()).hexdigest()[:20]
                        groups.append(Group(ds.label, name, params, regime, hide, fraction, bs, tuple(mg), cfg,
                                            json.loads(canonical(key)), h, hist, n_train, draw, loops))
    return groups
