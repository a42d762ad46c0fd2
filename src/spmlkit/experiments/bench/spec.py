"""What ``spml bench`` is asked to do: :class:`BenchSpec`, its method rows and their
hyper-parameters, checked before anything is prepared (:func:`validate_spec`).

A row is a method name, optionally with a suffix (``role+li``: the method trained with
LinearInit, Cole et al. Table 1's "+LinearInit." rows, fine-tuning only) and inline
hyper-parameters (``role[storage=factorised,rank=8]``: an ablation row of its own).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ...config import TrainConfig, parse_param_value
from ...device import validate_config
from ...errors import ConfigError, UnknownNameError
from ...labels import get_regime, regime_sort_key
from ...methods import METHODS, get_method_spec
from ..protocol import DEFAULT_BATCH_SIZES, DEFAULT_LRS

DEFAULT_EPOCHS = {"linear": 25, "finetune": 10}
#: Default methods of the partial-label sweep (Zhou et al. Fig. 5c), those registered.
PARTIAL_DEFAULT_METHODS = ("iu", "an", "em")
SUBSAMPLE_SEED = 999  # the authors' ss_seed (the authors' data preparation, elijahcole/single-positive-multi-label `preproc/`)


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
    by regime group, AN first among the single-positive rows, then the registry's order
    (pinned by :data:`spmlkit.methods.order.ORDER`, so moving a module changes nothing)."""
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
    validate_config(TrainConfig(**{k: v for k, v in config.items() if k in ("device", "precision", "sync_bn")}))


