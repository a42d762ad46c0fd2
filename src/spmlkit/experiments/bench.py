"""``spml bench``: reproduce a paper's table with one command (Cole et al. 2021 §6.1).

For every dataset and method the runner trains the grid learning rate × batch size ×
seed (default lr ∈ {1e-2, 1e-3, 1e-4, 1e-5}, batch ∈ {8, 16}, seeds 0, 1, 2, 25 epochs
in the linear setting, 10 when fine-tuning — Cole et al. §6.1 "Hyperparameters"),
keeps each run's test mAP at its best-validation epoch, selects per method the
configuration with the best mean validation mAP over seeds
(:func:`~spmlkit.experiments.protocol.select_best`) and writes, in ``RESULTS_DIR``:

``table.md``      Cole Table 1: methods grouped by label regime × datasets, mean ± std
``recovery.md``   Cole Table 2: training-set mAP against the full training labels
``fractions.md``  with ``--train-fractions``: test mAP per fraction of training data
``partial.md``    with ``--hide-fractions``: the partial-label sweep (Zhou Fig. 5c)
``runs.csv`` / ``runs.json``  every run (``partial-runs.*`` for the sweep)
``groups/<hash>.json``  one file per finished training group (the resume state)
``*.png``         figures (:mod:`spmlkit.experiments.figures`)

**Groups.**  The unit of work is a *group*: one dataset, method (with its
hyper-parameters and regime), training fraction, batch size and a set of (lr, seed)
members.  Learning rates × seeds of one batch size form one group trained as one
stacked model when the method allows it (``Method.supports_members``), otherwise each
(lr, seed) is its own group.  A group is named by a hash of everything that
determines its result (the bundle's fingerprint, the full :class:`TrainConfig`, the
method's resolved hyper-parameters, the members, the fraction) so a changed epoch
count or grid never reuses stale results.

**Resuming.**  A finished group is written atomically to ``groups/<hash>.json`` at
once; an unfinished one checkpoints every epoch under ``work/<hash>/`` (the training
loop's atomic, checksummed checkpoint).  A rerun skips finished groups, resumes the
unfinished one from its last epoch and rebuilds the tables, so a bench killed at any
point (even SIGKILL) ends with the same tables as an uninterrupted one; only the
``<!-- run -->`` block of the headers (date, wall time) differs.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..config import TrainConfig
from ..errors import ConfigError, CorruptFileError, SpmlError, UnknownNameError
from ..io import (FolderLock, append_jsonl, check_output_folder, claim_output_folder, dumps_json, read_json,
                  read_jsonl, remove_stale_temporaries, safe_filename, sha256_file, write_json)
from ..labels import REGIMES, get_regime, regime_sort_key  # noqa: F401  (regime_sort_key re-exported)
from .machine import machine_info  # noqa: F401  (re-exported: the benchmarks' scripts use it)
from .protocol import DEFAULT_BATCH_SIZES, DEFAULT_LRS

BENCH_FORMAT = 1
#: Row groups of Cole et al. Table 1, in order ("All P. & All N.", "1 P. & All N.", ...).
#: The regime whose rows compete for bold/underline (Cole Table 1: "best single positive method").
CONTEST_REGIME = "single_positive"
DEFAULT_EPOCHS = {"linear": 25, "finetune": 10}
#: Default methods of the partial-label sweep (Zhou et al. Fig. 5c), those registered.
PARTIAL_DEFAULT_METHODS = ("iu", "an", "em")
HIST_BINS = 20
SUBSAMPLE_SEED = 999  # the authors' ss_seed (the authors' data preparation, elijahcole/single-positive-multi-label `preproc/`)


# ---------------------------------------------------------------------------- spec
@dataclass(frozen=True)
class BenchSpec:
    """Everything ``spml bench`` was asked to do (see the module docstring).  Frozen: a
    changed spec is a new one (``dataclasses.replace``), so what a runner was given is
    what its tables record."""

    datasets: list[str]
    methods: list[str] | None = None  # None: every registered method of the setting (or the sweep's default)
    lrs: tuple = DEFAULT_LRS
    batch_sizes: tuple = DEFAULT_BATCH_SIZES
    seeds: tuple = (0, 1, 2)
    epochs: int | None = None  # None: 25 (linear) / 10 (finetune), Cole et al. §6.1
    patience: int | None = None
    regime: str | None = None  # explicit override of every method's regime (e.g. "full")
    setting: str = "linear"
    params: dict = field(default_factory=dict)  # method -> {name: value}
    data_root: str | None = None
    prepare_seed: int = 0
    train_fractions: tuple = ()  # Cole Fig. 1; 1.0 (the main table) is always included
    subsample_seed: int = SUBSAMPLE_SEED
    hide_fractions: tuple = ()  # partial-label sweep (Zhou Fig. 5c)
    histograms: bool = True  # Cole Fig. 2 data (per-epoch histograms of unobserved positives)
    config: dict = field(default_factory=dict)  # other TrainConfig fields (head, standardize, ...)
    decimals: int = 1
    #: vary the draw with the seed: seed s trains on the bundle prepared with prepare seed s
    #: (its own single positives and validation split), so the spread is over draws
    vary_draw: bool = False

    @property
    def mode(self) -> str:
        return "partial" if self.hide_fractions else "main"

    def resolved_epochs(self) -> int:
        return int(self.epochs) if self.epochs is not None else DEFAULT_EPOCHS[self.setting]


def _methods_registry():
    from ..methods import METHODS, get_method_spec

    get_method_spec("an")  # imports every method module
    return METHODS


#: Row-name suffixes of a bench: ``role+li`` is the method ``role`` trained with
#: LinearInit (Cole et al. Table 1's "+LinearInit." rows; fine-tuning setting only).
ROW_SUFFIXES = {"+li": {"linear_init": True}}


def _strip_inline(name: str) -> tuple[str, str | None]:
    if name.endswith("]") and "[" in name:
        base, _, inner = name[:-1].partition("[")
        return base, inner
    return name, None


def split_row(name: str) -> tuple[str, dict]:
    """A bench row name -> ``(method name, TrainConfig overrides)``; inline
    hyper-parameters (``role[storage=float16]``) are :func:`row_params`."""
    name, _ = _strip_inline(name)
    for suffix, cfg in ROW_SUFFIXES.items():
        if name.endswith(suffix):
            return name[: -len(suffix)], dict(cfg)
    return name, {}


def row_params(name: str) -> dict:
    """Hyper-parameters written into a row name, so one table can hold several
    variants of a method (ablations): ``role[storage=factorised,rank=8]`` ->
    ``{"storage": "factorised", "rank": 8}``; ``{}`` for a plain name.  ``--param``
    values for the same row override them."""
    from ..config import parse_param_value

    _, inner = _strip_inline(name)
    if inner is None:
        return {}
    out = {}
    for item in filter(None, (t.strip() for t in inner.split(","))):
        if "=" not in item:
            raise ConfigError(f"method row {name!r}: expected NAME=VALUE inside [...], got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = parse_param_value(v.strip())
    if not out:
        raise ConfigError(f"method row {name!r}: empty [...]")
    return out


def method_params(spec, name: str) -> dict:
    """A row's hyper-parameters: inline ones, then ``--param`` ones."""
    return {**row_params(name), **spec.params.get(name, {})}


def default_methods(setting: str = "linear") -> list[str]:
    """Every registered method usable in ``setting``, in the row order of Cole Table 1:
    by regime group, AN first among the single-positive rows, then registration order."""
    methods = _methods_registry()
    names = [n for n, s in methods.items() if s.setting in ("any", setting) and getattr(s, "in_default_bench", True)]
    order = {n: i for i, n in enumerate(methods)}

    def key(n):
        r = methods[n].regime
        return (regime_sort_key(r), n != "an", order[n])

    return sorted(names, key=key)


def validate_spec(spec: BenchSpec) -> BenchSpec:
    """Check the spec and fill in the method list; returns a new spec."""
    methods_reg = _methods_registry()
    if spec.setting not in DEFAULT_EPOCHS:
        raise ConfigError(f"--setting must be one of {', '.join(DEFAULT_EPOCHS)}, got {spec.setting!r}")
    if not spec.datasets:
        raise ConfigError("--datasets: give at least one dataset name or bundle path")
    if not spec.lrs or any(lr <= 0 for lr in spec.lrs):
        raise ConfigError(f"--lrs must be positive numbers, got {list(spec.lrs)}")
    if not spec.batch_sizes or any(b < 1 for b in spec.batch_sizes):
        raise ConfigError(f"--batch-sizes must be >= 1, got {list(spec.batch_sizes)}")
    if not spec.seeds:
        raise ConfigError("give at least one seed (--seeds N or --seed-list ...)")
    for name, values in (("--lrs", spec.lrs), ("--batch-sizes", spec.batch_sizes), ("--seed-list", spec.seeds)):
        if len(set(values)) != len(values):
            raise ConfigError(f"{name} has repeated values: {list(values)}")
    for f in spec.train_fractions:
        if not 0.0 < f <= 1.0:
            raise ConfigError(f"--train-fractions must be in (0, 1], got {f}")
    for p in spec.hide_fractions:
        if not 0.0 <= p < 1.0:
            raise ConfigError(f"--hide-fractions must be in [0, 1), got {p}")
    regime = spec.regime
    if regime is not None:
        regime = get_regime(regime).name
    if spec.vary_draw:
        for entry in spec.datasets:
            if (Path(entry) / "meta.json").exists():
                raise ConfigError(f"--vary-draw re-draws the single positives and the validation split with each "
                                  f"seed, so it needs dataset names (or raw data files), not a prepared bundle: "
                                  f"{entry}")
        for row in set(spec.params) | set(spec.methods or ()):
            if spec.params.get(row, {}).get("pseudo_scores") or row_params(row).get("pseudo_scores"):
                raise ConfigError("--pseudo-scores are aligned with one bundle's training rows; --vary-draw changes "
                                  "the training rows with every seed, so the two cannot be combined")
    if spec.hide_fractions:
        if regime not in (None, "partial"):
            raise ConfigError("--hide-fractions runs the 'partial' regime; it cannot be combined with "
                              f"--regime {regime}")
        if spec.train_fractions and tuple(spec.train_fractions) != (1.0,):  # (1.0,): a validated spec's default
            raise ConfigError("--hide-fractions and --train-fractions are separate experiments; run them one at a time")
        regime = "partial"
    methods = spec.methods
    if methods is None:
        if spec.hide_fractions:
            methods = [m for m in PARTIAL_DEFAULT_METHODS if m in methods_reg]
        else:
            methods = default_methods(spec.setting)
    for row in methods:
        m, row_cfg = split_row(row)
        if m not in methods_reg:
            raise UnknownNameError("method", m, methods_reg)
        s = methods_reg[m]
        if s.setting not in ("any", spec.setting):
            raise ConfigError(f"method {m!r} is for the {s.setting} setting, not --setting {spec.setting}")
        if row_cfg.get("linear_init") and spec.setting != "finetune":
            raise ConfigError(f"{row!r}: LinearInit rows need --setting finetune")
    if len(set(methods)) != len(methods):
        raise ConfigError(f"--methods has repeated names: {methods}")
    for m, params in spec.params.items():
        if m not in methods:
            raise ConfigError(f"--param {m}:...: method {m!r} is not among the benchmarked methods {methods}")
    for m in methods:  # names and values checked before any bundle is prepared or group trained
        method_spec = methods_reg[split_row(m)[0]]
        for where, params in (("row " + m, row_params(m)), ("--param " + m, spec.params.get(m, {}))):
            try:
                method_spec.check_params(params)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
    known_cfg = {f.name for f in dataclasses.fields(TrainConfig)}
    reserved = {"method", "params", "lr", "batch_size", "seed", "epochs", "patience", "regime", "hide_prob"}
    bad = set(spec.config) - (known_cfg - reserved)
    if bad:
        raise ConfigError(f"bench config: unknown or reserved TrainConfig field(s) {sorted(bad)}")
    TrainConfig(**spec.config)  # every value checked now, not after the first dataset is prepared
    fractions = tuple(sorted(set(spec.train_fractions) | {1.0})) if spec.train_fractions else (1.0,)
    return dataclasses.replace(spec, methods=list(methods), regime=regime, train_fractions=fractions,
                               hide_fractions=tuple(spec.hide_fractions), seeds=tuple(spec.seeds),
                               lrs=tuple(spec.lrs), batch_sizes=tuple(spec.batch_sizes))


def parse_method_params(items: list[str] | None, methods: list[str] | None) -> dict:
    """``--param METHOD:NAME=VALUE`` (or ``NAME=VALUE`` for every benchmarked method that
    has a hyper-parameter of that name) -> ``{method: {name: value}}``."""
    from ..config import parse_param_value

    reg = _methods_registry()
    out: dict = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"--param {item!r}: expected METHOD:NAME=VALUE")
        lhs, value = item.split("=", 1)
        value = parse_param_value(value)
        if ":" in lhs:
            method, name = (t.strip() for t in lhs.split(":", 1))
            out.setdefault(method, {})[name] = value
        else:
            name = lhs.strip()
            targets = [m for m in (methods or []) if split_row(m)[0] in reg
                       and name in reg[split_row(m)[0]].hyperparameters]
            if not targets:
                raise ConfigError(f"--param {item!r}: no benchmarked method has a hyper-parameter {name!r}; "
                                  "write METHOD:NAME=VALUE")
            for m in targets:
                out.setdefault(m, {})[name] = value
    return out


def with_method_params(spec: BenchSpec, items: list[str] | None) -> BenchSpec:
    """``spec`` with the ``--param`` items parsed (:func:`parse_method_params`) against its
    methods: the rows it names, else the default rows of its setting (:func:`validate_spec`)."""
    methods = spec.methods or validate_spec(spec).methods
    return dataclasses.replace(spec, params=parse_method_params(items, methods))


def check_device_options(config: dict) -> None:
    """The ``device``, ``precision`` and ``sync_bn`` of a bench's TrainConfig fields
    (:func:`spmlkit.device.validate_config`): an unavailable device or a precision it
    cannot run is a one-line error before any dataset is prepared."""
    from ..device import validate_config

    validate_config(TrainConfig(**{k: v for k, v in config.items() if k in ("device", "precision", "sync_bn")}))


# --------------------------------------------------------------------------- data
@dataclass
class BenchDataset:
    label: str  # column header
    bundle: object  # spmlkit.data.Bundle
    fingerprint: str
    #: with --vary-draw: prepare seed -> (bundle, fingerprint), one draw per seed
    draws: dict = field(default_factory=dict)

    def bundles(self) -> list:
        return [b for b, _ in self.draws.values()] if self.draws else [self.bundle]


def bundle_fingerprint(bundle) -> str:
    """A content hash of a bundle: its meta (minus creation time and version) and the
    row indices of its splits (which pin the split and the examples kept)."""
    meta = {k: v for k, v in bundle.meta.items() if k not in ("created", "spmlkit_version")}
    h = hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode())
    for split in ("train", "val", "test"):
        p = Path(bundle.path) / split / "index.npy"
        h.update(sha256_file(p).encode() if p.exists() else b"-")
    return h.hexdigest()[:16]


def resolve_datasets(spec: BenchSpec, out: Path, log: Callable[[str], None] = lambda m: None) -> list[BenchDataset]:
    """Bundle paths are used as they are; names (and raw data files) are prepared once
    into ``out/bundles/<name>-s<prepare_seed>/`` with their official splits."""
    from ..data import Bundle, load_any, prepare_bundle

    def prepared(entry: str, p: Path, seed: int):
        target = out / "bundles" / f"{safe_filename(p.stem if p.exists() else entry)}-s{seed}"
        if (target / "meta.json").exists():
            log(f"{entry}: reusing {target}")
            return Bundle(target)
        ds = load_any(entry, data_root=spec.data_root)
        log(f"{entry}: preparing {target}")
        return prepare_bundle(ds, target, seed=seed, overwrite=True, log=log)

    found: list[BenchDataset] = []
    for entry in spec.datasets:
        p = Path(entry)
        draws = {}
        if (p / "meta.json").exists():
            bundle = Bundle(p)
            label = bundle.name
        else:
            if getattr(spec, "vary_draw", False):  # one bundle per seed: seed s uses prepare seed s
                for s in spec.seeds:
                    b = prepared(entry, p, int(s))
                    draws[int(s)] = (b, bundle_fingerprint(b))
                bundle = draws[int(spec.seeds[0])][0]
            else:
                bundle = prepared(entry, p, spec.prepare_seed)
            label = entry if not p.exists() else bundle.name
        labels = [d.label for d in found]
        if label in labels:
            label = f"{label} ({p.name})" if p.name and f"{label} ({p.name})" not in labels else f"{label} #{len(found) + 1}"
        found.append(BenchDataset(label, bundle, bundle_fingerprint(bundle), draws))
    return found


class TrainSubset:
    """A bundle whose training split is restricted to ``rows`` (Cole Fig. 1's "m% of
    the training images").  Observations are the parent's rows, so every example keeps
    the single positive it has in the full set; validation and test are unchanged."""

    def __init__(self, bundle, rows: np.ndarray):
        self._bundle = bundle
        self.rows = np.asarray(rows, dtype=np.int64)
        self.meta = {**bundle.meta, "sizes": {**bundle.meta["sizes"], "train": int(len(self.rows))}}

    def __getattr__(self, name):
        return getattr(self._bundle, name)

    def size(self, split: str) -> int:
        return len(self.rows) if split == "train" else self._bundle.size(split)

    def features(self, split: str, feature_set: str | None = None, *, mmap: bool = True) -> np.ndarray:
        X = self._bundle.features(split, feature_set, mmap=mmap)
        return np.asarray(X[self.rows]) if split == "train" else X

    def labels(self, split: str):
        Y = self._bundle.labels(split)
        return Y[self.rows] if split == "train" and Y is not None else Y

    def observations(self, split: str = "train", regime: str | None = None, **kw) -> np.ndarray:
        Z = self._bundle.observations(split, regime, **kw)
        return Z[self.rows] if split == "train" else Z

    def paths(self, split: str) -> list[str]:
        p = self._bundle.paths(split)
        return [p[i] for i in self.rows] if split == "train" else p


def subsample_rows(n: int, fraction: float, seed: int) -> np.ndarray:
    """Sorted rows of a seeded subsample of ``round(fraction * n)`` (at least 1) rows,
    nested across fractions: the first rows of one fixed permutation."""
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[:max(1, int(round(fraction * n)))])


# -------------------------------------------------------------------------- groups
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
        than member-epochs (and, unlike epochs, account for dataset and batch size)."""
        return self.config.epochs * self.steps_per_epoch


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr)


def _trainer(setting: str):
    """The bench's trainer: :func:`spmlkit.training.run.train` in ``setting`` (the groups'
    configs leave the setting out of their identity: it is the bench's)."""
    from ..training.run import SETTINGS, train

    if setting not in SETTINGS:
        raise ConfigError(f"--setting must be one of {', '.join(SETTINGS)}, got {setting!r}")

    def trainer(bundle, config, **kw):
        return train(bundle, config.replace(setting=setting), **kw)

    return trainer


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
    from ..methods import build_method

    reg = _methods_registry()
    epochs = spec.resolved_epochs()
    trainer = _trainer(spec.setting)
    stack_ok = getattr(trainer, "supports_members", True)
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
                stacked = stack_ok and method.supports_members
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
                    row_lrs = spec.lrs[:1] if method.candidates else spec.lrs
                    members = [(float(lr), int(s)) for lr in row_lrs for s in unit_seeds]
                    member_groups = [members] if stacked else [[m] for m in members]
                    # (a recipe's epochs belong to several member methods: no histogram of its own)
                    hist = bool(spec.histograms and fraction == 1.0 and hide is None and not method.candidates)
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
                        h = hashlib.sha256(_canonical(key).encode()).hexdigest()[:20]
                        groups.append(Group(ds.label, name, params, regime, hide, fraction, bs, tuple(mg), cfg,
                                            json.loads(_canonical(key)), h, hist, n_train, draw))
    return groups


def histogram_of(probs, mask) -> list[list[float]]:
    """Per member, the normalised histogram (``HIST_BINS`` equal bins on [0, 1], the last
    one closed) of the probabilities ``probs`` ``(G, N, L)`` at the entries of ``mask``
    (``(N, L)`` bool, or the flat indices of its True entries)."""
    import torch

    idx = torch.as_tensor(mask, device=probs.device)  # probabilities on a GPU: counted there
    if idx.dtype == torch.bool:
        idx = idx.reshape(-1).nonzero().squeeze(1)
    G = probs.shape[0]
    v = probs.reshape(G, -1).index_select(1, idx)  # (G, M)
    b = (v * HIST_BINS).long().clamp_(0, HIST_BINS - 1)
    counts = torch.zeros(G, HIST_BINS, dtype=torch.float64, device=probs.device).scatter_add_(
        1, b, torch.ones_like(b, dtype=torch.float64))
    counts /= max(idx.numel(), 1)
    return [[round(float(x), 6) for x in row] for row in counts.cpu()]


# ------------------------------------------------------------------------- runner
class BenchRunner:
    """Runs a :class:`BenchSpec` into ``out`` (see the module docstring)."""

    #: trains the pending groups instead of the local loop / process pool when set
    #: (``executor.train(runner, pending, by_label, groups, ctx, bar)``; see
    #: :mod:`spmlkit.experiments.executors`)
    executor = None
    #: ``--share-gpus``: allow more ``--jobs`` than GPUs on CUDA (workers round-robin over them)
    share_gpus = False

    def __init__(self, spec: BenchSpec, out: str | Path, *, command: str | None = None,
                 log: Callable[[str], None] | None = None, progress: bool | None = None,
                 figures: bool = True, jobs: int = 1, threads: int | None = None,
                 on_group: Callable[[Group, dict], None] | None = None):
        self.spec = validate_spec(spec)
        self.on_group = on_group  # hears every group this invocation trains, with its record (e.g. --log-to)
        if jobs < 1:
            raise ConfigError(f"jobs must be >= 1, got {jobs}")
        self.jobs = int(jobs)
        self.threads = threads
        self.out = Path(out)
        self.command = command
        self.log = log or (lambda m: print(m, file=sys.stderr))
        self.progress = progress
        self.figures = figures
        self.records: dict[str, dict] = {}  # group hash -> persisted group record
        self.n_trained = 0  # groups trained (or resumed) by this invocation

    # ---------------------------------------------------------------- persistence
    def group_path(self, g: Group) -> Path:
        return self.out / "groups" / f"{g.hash}.json"

    def load_finished(self, g: Group) -> dict | None:
        p = self.group_path(g)
        if not p.exists():
            return None
        try:
            rec = read_json(p)
        except Exception:  # an unreadable file is treated as unfinished (writes are atomic; this is paranoia)
            rec = None
        problem = group_record_problem(rec, g.n_members)
        if problem is not None:  # damaged or edited: the group is trained again and the record rewritten
            self.log(f"{p}: {problem}; training this group again")
            return None
        if rec["key"] != g.key:
            return None
        return rec

    # ------------------------------------------------------------------- training
    def _observations(self, bundle, g: Group):
        from ..methods import build_method
        from ..training.linear import observations_for

        return observations_for(bundle, build_method(g.config.method, **g.params), g.config)

    def run_group(self, g: Group, bundle, bar) -> dict:
        import torch

        trainer = _trainer(self.spec.setting)
        work = self.out / "work" / g.hash
        work.mkdir(parents=True, exist_ok=True)
        write_json(work / "key.json", g.key)
        Z = self._observations(bundle, g)
        n_observed = int((Z != 0).sum())
        mask = None
        if g.histograms:
            Y = bundle.labels("train")
            if Y is not None:
                flat = np.flatnonzero(np.asarray(Y, dtype=bool) & (Z == 0))  # unobserved true positives
                mask = torch.from_numpy(flat) if flat.size else None
        hist_file = work / "hist.jsonl"
        counted = [0]

        def on_epoch(info):
            counted[0] += g.steps_per_epoch
            if bar is not None:
                bar.update(g.steps_per_epoch)
            if mask is not None and "predict_train" in info:
                # the stack's members at this epoch (early-stopped ones leave it with --patience)
                members = [int(r["member"]) for r in info["rows"]]
                append_jsonl(hist_file, {"epoch": int(info["epoch"]), "members": members,
                                         "hist": histogram_of(info["predict_train"](), mask)})

        t0 = time.perf_counter()
        results = trainer(bundle, g.config, lrs=[m[0] for m in g.members], seeds=[m[1] for m in g.members],
                          run_dir=work, resume=True, on_epoch=on_epoch)
        seconds = time.perf_counter() - t0
        if bar is not None:
            rest = g.steps - counted[0]
            if rest > 0:
                bar.update(rest)
        hists: dict[int, dict[int, list]] = {}  # epoch -> member -> histogram
        for row in read_jsonl(hist_file):  # a resumed run may repeat an epoch: the last record wins
            if not (isinstance(row.get("epoch"), int) and isinstance(row.get("hist"), list)
                    and isinstance(row.get("members", []), list)):
                raise CorruptFileError(f"{hist_file}: line of histograms without 'epoch' and 'hist'; delete "
                                       f"{work} to train this group again")
            members = row.get("members", range(len(row["hist"])))
            hists[int(row["epoch"])] = dict(zip((int(m) for m in members), row["hist"]))
        runs = []
        for i, r in enumerate(results):
            rec = r.to_record()
            rec.update(dataset=g.dataset, method=g.method, regime=g.regime, hide_prob=g.hide_prob,
                       train_fraction=g.fraction, setting=self.spec.setting, n_train=int(bundle.size("train")),
                       n_observed=n_observed, group=g.hash, group_seconds=seconds,
                       seconds=seconds / len(results))
            if g.draw is not None:
                rec["prepare_seed"] = g.draw
            if hists:  # the epochs the member trained (fewer for one stopped early)
                rec["hist_unobserved_positives"] = [hists[e][i] for e in sorted(hists) if i in hists[e]]
            runs.append(rec)
        record = {"key": g.key, "runs": runs, "seconds": seconds, "hist_bins": HIST_BINS if hists else None}
        record["device"] = _device_name(g.config.device)  # where it trained (not part of what it is)
        record = json.loads(dumps_json(record))  # exactly what a later run will read back
        write_json(self.group_path(g), record)
        shutil.rmtree(work, ignore_errors=True)
        self.n_trained += 1
        return record

    def _cache_image_features(self, datasets: list) -> None:
        """Linear setting on image bundles: compute (or reuse) the backbone feature cache of
        every dataset (``spml features`` with the bench's backbone / weights / image size)
        and train on it."""
        if self.spec.setting != "linear" or "feature_set" in self.spec.config:
            return
        every = [b for d in datasets for b in d.bundles()]  # with --vary-draw: one bundle per draw
        images = [b for b in every if b.kind == "images"]
        if not images:
            return
        if len(images) != len(every):
            raise ConfigError("this bench mixes image and feature datasets; run them separately (the image ones "
                              "train on a cached backbone feature set)")
        from ..features import DEFAULT_BACKBONE, ensure_features

        cfg = self.spec.config
        names = set()
        for b in images:  # under the bundle's lock, as 'spml features' (one writer of a feature cache)
            with FolderLock(b.path, what="bundle"):
                names.add(ensure_features(b, backbone=cfg.get("backbone", DEFAULT_BACKBONE),
                                          weights=cfg.get("weights"), image_size=cfg.get("image_size", 448),
                                          log=self.log))
        self.spec = dataclasses.replace(self.spec, config={**cfg, "feature_set": names.pop()})

    @staticmethod
    def _draw_bundle(g: Group, by_label: dict):
        ds = by_label[g.dataset]
        return ds.draws[g.draw][0] if g.draw is not None else ds.bundle

    def _bundle_for(self, g: Group, by_label: dict, subsets: dict):
        bundle = self._draw_bundle(g, by_label)
        if g.fraction >= 1.0:
            return bundle
        k = (g.dataset, g.fraction, g.draw)
        if k not in subsets:
            subsets[k] = TrainSubset(bundle, subsample_rows(bundle.size("train"), g.fraction,
                                                            self.spec.subsample_seed))
        return subsets[k]

    def _run_parallel(self, pending: list, by_label: dict, groups: list, ctx: dict, bar) -> None:
        """Train pending groups in ``jobs`` worker processes (spawned, ``threads`` torch
        threads each); results are identical to a sequential bench (each group is
        deterministic on its own).  The progress bar advances as groups finish."""
        import concurrent.futures as cf
        import multiprocessing as mp

        from .tables import write_outputs

        from .executors import worker_gpus

        paths = {g.hash: str(self._draw_bundle(g, by_label).path) for g in pending}
        threads = self.threads or 1
        mp_ctx = mp.get_context("spawn")
        gpus = worker_gpus(self.spec.config.get("device"), self.jobs, share=self.share_gpus)
        devices = None
        if gpus is not None:  # one GPU per worker, taken for the worker's life (issue 27, item 1)
            devices = mp_ctx.Queue()
            for d in gpus:
                devices.put(d)
        with cf.ProcessPoolExecutor(max_workers=self.jobs, mp_context=mp_ctx, initializer=_init_worker,
                                    initargs=(threads, os.getpid(), devices)) as pool:
            futures = {pool.submit(_worker_run_group, self.spec, str(self.out), g, paths[g.hash]): g
                       for g in pending}
            for done, fut in enumerate(cf.as_completed(futures), 1):
                g = futures[fut]
                self.records[g.hash] = fut.result()
                self.n_trained += 1
                bar.set_postfix_str(f"{done}/{len(pending)} groups done, last {g.dataset} {g.method} "
                                    f"bs {g.batch_size}")
                bar.update(g.steps)
                if self.on_group is not None:
                    self.on_group(g, self.records[g.hash])
                write_outputs(self, groups, ctx)

    # ------------------------------------------------------------------------ run
    def run(self) -> dict:
        t_start = time.perf_counter()
        check_output_folder(self.out)
        created = not self.out.exists()
        # a folder of the user's (not empty, not a bench) is refused before anything is written
        claim_output_folder(self.out, kind="bench", what="a bench results folder", is_ours=is_bench_folder)
        try:
            lock = FolderLock(self.out, what="bench folder").acquire()  # one bench writes a folder at a time
        except BaseException:
            if created:
                _remove_failed_bench(self.out)
            raise
        try:
            # a killed bench leaves atomic-write temporaries behind: never read, removed here
            remove_stale_temporaries(self.out / "groups")
            remove_stale_temporaries(self.out)
            try:
                datasets = resolve_datasets(self.spec, self.out, self.log)
                return self._run(datasets, t_start)
            except (SpmlError, KeyboardInterrupt, OSError):
                if created and self.n_trained == 0:  # a bench that failed before finishing anything leaves
                    lock.release()                    # no folder behind
                    _remove_failed_bench(self.out)
                raise
        finally:
            lock.release()

    def _run(self, datasets: list, t_start: float) -> dict:
        from .tables import write_outputs

        self._cache_image_features(datasets)
        by_label = {d.label: d for d in datasets}
        groups = plan_groups(self.spec, datasets)
        pending = []
        for g in groups:
            rec = self.load_finished(g)
            if rec is None:
                pending.append(g)
            else:
                self.records[g.hash] = rec
                shutil.rmtree(self.out / "work" / g.hash, ignore_errors=True)
        self.log(f"bench: {len(groups)} training group(s), {len(groups) - len(pending)} already finished, "
                 f"{len(pending)} to run -> {self.out}")
        total = sum(g.steps for g in pending)
        from ..progress import progress

        # a bar on a terminal, a line every few seconds (elapsed, time left) in a log file
        bar = progress(total, "bench", unit="step", disable=None if self.progress is None else not self.progress)
        subsets: dict = {}
        ctx = {"t_start": t_start, "command": self.command, "datasets": datasets}
        try:
            if self.executor is not None:  # another engine (spmlkit.experiments.executors: Ray, --table-only)
                self.executor.train(self, pending, by_label, groups, ctx, bar)
            elif self.jobs > 1 and len(pending) > 1:
                self._run_parallel(pending, by_label, groups, ctx, bar)
            else:
                for i, g in enumerate(pending):
                    bundle = self._bundle_for(g, by_label, subsets)
                    extra = f" frac {g.fraction:g}" if g.fraction < 1 else (
                        f" hide {g.hide_prob:g}" if g.hide_prob is not None else "")
                    bar.set_postfix_str(f"group {i + 1}/{len(pending)} {g.dataset} {g.method}{extra} "
                                        f"bs {g.batch_size}")
                    self.records[g.hash] = self.run_group(g, bundle, bar)
                    if self.on_group is not None:
                        self.on_group(g, self.records[g.hash])
                    write_outputs(self, groups, ctx)
        finally:
            bar.close()
        try:
            (self.out / "work").rmdir()  # only when empty: unfinished groups keep their checkpoints
        except OSError:
            pass
        summary = write_outputs(self, groups, ctx)
        if self.figures:
            from .figures import make_figures

            summary["written"]["figures"] = make_figures(self.out)
        return summary


#: fields every run of a group record has (RunResult.to_record() plus the bench's own)
_RUN_FIELDS = {"method": str, "lr": (int, float), "batch_size": int, "seed": int, "val_score": (int, float, type(None)),
               "dataset": str}


def group_record_problem(rec, n_members: int) -> str | None:
    """What is wrong with a ``groups/HASH.json`` record read back (None when it is sound):
    a JSON object with ``key`` (an object) and ``runs``, a list of ``n_members`` run
    objects with their fields of the right types."""
    if not isinstance(rec, dict):
        return f"expected a JSON object, found {type(rec).__name__}"
    if not isinstance(rec.get("key"), dict):
        return "'key' is missing or not an object"
    runs = rec.get("runs")
    if not isinstance(runs, list) or len(runs) != n_members:
        return f"'runs' is not a list of {n_members} run(s)"
    for i, r in enumerate(runs):
        if not isinstance(r, dict):
            return f"run {i} is not an object"
        for k, t in _RUN_FIELDS.items():
            if not isinstance(r.get(k), t) or isinstance(r.get(k), bool):
                return f"run {i}: {k!r} is missing or of the wrong type"
    return None


def is_bench_folder(path: Path) -> bool:
    """True when ``path`` holds results of ``spml bench`` written before the output
    marker existed (its ``groups/`` records or a ``runs.json`` with runs)."""
    path = Path(path)
    if (path / "groups").is_dir() and all(p.suffix in (".json", ".tmp") for p in (path / "groups").iterdir()):
        return True
    try:
        runs = read_json(path / "runs.json")
    except (OSError, SpmlError):
        return False
    return isinstance(runs, dict) and isinstance(runs.get("runs"), list)


def _remove_failed_bench(folder: Path) -> None:
    """Undo a bench that created ``folder`` and failed before finishing a group: its work
    folders without a checkpoint (a ``key.json``, histograms), the bundles it prepared,
    its marker and lock, then the folder when nothing else is in it (a file of anyone
    else's is kept, and so is the folder)."""
    from ..io import OUTPUT_MARKER

    work = folder / "work"
    if work.is_dir():
        for w in work.iterdir():
            if w.is_dir() and not w.is_symlink() and not (w / "last.pt").exists():
                for name in ("key.json", "hist.jsonl", "metrics.jsonl", "last.pt.sha256"):
                    (w / name).unlink(missing_ok=True)
    bundles = folder / "bundles"
    if bundles.is_dir():
        from ..data.bundle import is_bundle_folder

        for b in bundles.iterdir():
            if b.is_dir() and not b.is_symlink() and is_bundle_folder(b):
                shutil.rmtree(b, ignore_errors=True)
    (folder / OUTPUT_MARKER).unlink(missing_ok=True)
    _remove_empty_tree(folder)


def _remove_empty_tree(folder: Path) -> None:
    """Remove ``folder`` if it holds nothing but empty folders and spmlkit's lock file."""
    if not folder.is_dir():
        return
    for p in sorted(folder.rglob("*"), key=lambda q: len(q.parts), reverse=True):
        if p.is_dir():
            with contextlib.suppress(OSError):
                p.rmdir()
        elif p.name == FolderLock.NAME:
            p.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


def _die_with_parent(parent: int) -> None:
    """Make a worker process end when the bench that started it dies (even by SIGKILL):
    the kernel signals it (Linux ``PR_SET_PDEATHSIG``), and, on any system, a daemon
    thread notices that the parent is gone and exits.  Without this the workers of a
    killed bench went on training every remaining group unattended, then blocked.
    ``parent`` is the bench's pid, passed in: a worker that starts after the bench died
    has already been re-parented, so its own ``getppid()`` would not tell."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux
        pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    import threading

    threading.Thread(target=watch, name="spml-parent-watch", daemon=True).start()


#: the GPU of this bench worker process (``--jobs N --device cuda``: one per worker)
_WORKER_DEVICE: str | None = None


def _init_worker(threads: int, parent: int, devices=None) -> None:
    global _WORKER_DEVICE
    _die_with_parent(parent)
    os.environ["SPML_NO_PROGRESS"] = "1"
    if devices is not None:
        _WORKER_DEVICE = devices.get()
    import torch

    torch.set_num_threads(max(1, int(threads)))


def _worker_run_group(spec: BenchSpec, out: str, g: Group, bundle_path: str) -> dict:
    """One group in a worker process (see BenchRunner._run_parallel)."""
    from ..data.bundle import Bundle

    if _WORKER_DEVICE is not None:  # this worker's own GPU (the device is not part of a group's hash)
        spec = dataclasses.replace(spec, config={**spec.config, "device": _WORKER_DEVICE})
        g = dataclasses.replace(g, config=g.config.replace(device=_WORKER_DEVICE))
    runner = BenchRunner(spec, out, log=lambda m: None, progress=False, figures=False)
    bundle = Bundle(bundle_path)
    if g.fraction < 1.0:
        bundle = TrainSubset(bundle, subsample_rows(bundle.size("train"), g.fraction, spec.subsample_seed))
    return runner.run_group(g, bundle, None)


def _device_name(device) -> str:
    from ..device import resolve_device

    try:
        return str(resolve_device(device))
    except ConfigError:
        return str(device)


def run_bench(spec: BenchSpec, out: str | Path, **kw) -> dict:
    """Run (or resume) a bench; returns a summary with the output paths."""
    return BenchRunner(spec, out, **kw).run()


def is_finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)
