"""Typed, frozen configuration.

A run is fully described by a :class:`TrainConfig`; it is written next to every run's
results (``config.json``) and can be loaded from YAML/JSON.  Configs are never mutated
in place (the authors' grid loop mutates a shared dict between grid points and runs
later points in the wrong mode, the authors' code, elijahcole/single-positive-multi-label); use
:meth:`TrainConfig.replace`.
"""
from __future__ import annotations

import dataclasses
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError, did_you_mean
from .labels import get_regime

SELECTION_CRITERIA = ("auto", "map", "observed_map", "observed_recall@1", "observed_recall@3", "observed_recall@5",
                      "background_auc", "target_group_auc", "last")
"""Model-selection criteria (the validation score that picks the best epoch).

``map``
    mAP against full validation labels — the papers' criterion (Cole et al. §6.1).
``observed_map`` — the default (``auto``) when validation has observations only
    mAP with the observed positives as positives and every other entry as negative
    (the authors' ``val_set_variant='observed'``, the authors' code, elijahcole/single-positive-multi-label).
    Biased but rank-preserving: if each true positive of label ``c`` is the observed
    one with a probability ``π_c`` that does not depend on the score, then among the
    examples above any threshold the observed positives are, in expectation, a
    fraction ``π_c`` of the true positives, so observed precision ≈ ``π_c`` × true
    precision and observed recall ≈ true recall: observed AP_c ≈ ``π_c`` · AP_c.  The
    values are lower than the true mAP and not comparable to it, but for each label
    two models are ordered the same way; the mean becomes a ``π_c``-weighted mAP.
    Under single-positive sampling ``π`` is really ``1/|y_n|`` per example, so the
    argument is approximate when cardinality correlates with the scores.  It keeps
    the papers' *kind* of criterion (per-label ranking across examples) — which is
    what a threshold or a per-label decision later relies on.
``background_auc``
    per label, the AUC of its held-out presence records against the held-out background
    rows (no observed label), averaged over labels (:func:`spmlkit.metrics.presence_background_auc`):
    how MaxEnt-style models are checked when no absence exists.  It rewards a model of
    where observers record as much as a model of where the species lives.
``target_group_auc`` — the default (``auto``) on presence-only data with background rows
    per label, the AUC of its held-out presence records against the held-out records of
    the *other* labels (Phillips et al. 2009's target-group background), background rows
    left out (:func:`spmlkit.metrics.presence_target_group_auc`): the observers' sampling
    bias is shared by both sides, so it cancels.  ``benchmarks/disdat.py --selection``
    compares it with ``background_auc`` on the disdat regions: validation against test AUC,
    Spearman's ρ within a region 0.70 on average against 0.10, and the label-free choice
    0.744 mean test AUC against 0.702 (``benchmarks/results/disdat/target-group``).  With
    presences of a single label there is no target group and ``auto`` falls back to
    ``background_auc``.
``observed_recall@k``
    % of observed positives ranked in the top ``k`` labels of their example.  Under
    uniform single-positive sampling it is an *unbiased* estimate of the example-
    averaged true recall@k (each true positive is the observed one with probability
    ``1/|y_n|``), but it only measures the ranking of labels within an example, is
    coarse (few distinct values on a small validation set) and needs a choice of k.
    ``benchmarks/selection_without_full_labels.py`` compares the criteria.
``last``
    no validation: keep the final epoch (used when there is no validation data).

When a fully labelled validation file is given (``spml prepare --observed --val-file``),
``auto`` uses ``map`` on it.
"""


#: The papers' grid (Cole et al. §6.1): learning rates x batch sizes, chosen on validation.
DEFAULT_LRS = (1e-2, 1e-3, 1e-4, 1e-5)
DEFAULT_BATCH_SIZES = (8, 16)

MAX_SEED = 2**32 - 1  # every generator seeded from it (torch, numpy, Python) accepts it


def _check_types(cfg) -> None:
    """Numbers must be numbers (a YAML config may hold strings): one clear error instead of
    a TypeError deep inside training.  The fields' types are their constraints, checked by
    the one checker of hyper-parameters (:func:`spmlkit.params.check_params`)."""
    from .params import check_params, constraints_from_signature  # lazy: torch-free CLI start-up

    values = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name != "params"}
    check_params(values, constraints_from_signature(type(cfg), list(values), text=str))


def parse_param_value(text: str):
    """Parse a ``--param key=value`` value: int, float, bool, None or string.

    >>> [parse_param_value(t) for t in ("3", "0.5", "true", "none", "float16")]
    [3, 0.5, True, None, 'float16']
    """
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_params(pairs, *, option: str = "--param") -> dict:
    """``["name=value", ...]`` (the ``--param`` options of ``spml train`` and the analyses)
    -> ``{name: parsed value}`` (:func:`parse_param_value`); a later name wins.  The
    values are checked where they are used (:func:`spmlkit.params.check_params`).

    >>> parse_params(["k=2.5", "storage=float16", "adam=none"])
    {'k': 2.5, 'storage': 'float16', 'adam': None}
    """
    out = {}
    for p in pairs or []:
        if "=" not in p:
            raise ConfigError(f"{option} {p!r}: expected name=value")
        name, value = p.split("=", 1)
        out[name.strip()] = parse_param_value(value)
    return out


def _freeze_params(params) -> tuple:
    """Method hyper-parameters: a mapping of names to values, or (name, value) pairs;
    anything else (``params: gamma`` in a YAML file) is a one-line :class:`ConfigError`."""
    if params is None:
        return ()
    if isinstance(params, dict):
        items = list(params.items())
    elif isinstance(params, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in params):
        items = [tuple(p) for p in params]
    else:
        raise ConfigError(f"params must map hyper-parameter names to values (e.g. params: {{gamma: 2}}), got "
                          f"{params!r}")
    bad = next((k for k, _ in items if not isinstance(k, str) or not k), None)
    if bad is not None or any(not isinstance(k, str) for k, _ in items):
        raise ConfigError(f"params: hyper-parameter names must be text, got {bad!r}")
    return tuple(sorted(items))


#: --precision's choices (spmlkit.device applies them)
PRECISIONS = ("32", "bf16", "16-mixed")
_CUDA_RE = re.compile(r"^cuda(?::(\d+))?$")


def check_device_syntax(spec, option: str = "--device") -> str:
    """The normalised text of a device choice (syntax only, no torch; availability is
    checked by :func:`spmlkit.device.resolve_device`)."""
    text = str("auto" if spec is None else spec).strip().lower()
    if text in ("auto", "cpu", "mps") or _CUDA_RE.match(text):
        return text
    raise ConfigError(f"{option} {spec!r}: expected one of auto, cpu, cuda, cuda:N, mps")


#: the heads spmlkit registers (spmlkit.models.heads.HEADS; tests/integration/test_before_torch.py
#: keeps them equal): checked without importing torch while the registry is not loaded
BUILTIN_HEADS = ("linear", "mlp", "tree", "maxent-features", "maxent", "maxent-x2", "maxent-x4")


def _head_names() -> set[str]:
    """The registered head kinds: the live registry once loaded (with any plug-in's heads),
    else :data:`BUILTIN_HEADS` — so that checking a config imports no torch."""
    heads = sys.modules.get("spmlkit.models.heads")
    return set(heads.HEADS) if heads is not None and hasattr(heads, "HEADS") else set(BUILTIN_HEADS)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines one training run.

    Defaults follow Cole et al. §6.1's linear setting: Adam, 25 epochs, the test score
    taken at the epoch with the best validation mAP.  ``patience=None`` runs every epoch
    (the papers' protocol); an integer stops a run after that many epochs without
    improvement.  ``standardize`` z-scores features with training-set statistics (stored
    with the model).  ``None`` (default) decides by the data: tabular feature bundles are
    standardised (their columns have unrelated units: Mulan's *emotions* mixes scales
    of 1 and 1,000), cached backbone features of image bundles are fed raw, as in the
    papers' linear setting (Cole et al. §6: a linear layer on ResNet-50 features; on the
    digits default raw EfficientNet features gave 47.9 test mAP with AN vs 41.4
    standardised, docs/images.md).  ``True``/``False`` force it.  ``selection`` is one of :data:`SELECTION_CRITERIA` (``auto``:
    ``map`` with full validation labels, ``observed_map`` with observations only).

    ``regime`` (default ``None``: the method's registered regime) is an explicit
    override of the observation regime the method trains on, e.g. ``"full"`` to train
    Focal/ASL/ZLPR/OPML on full labels (OPML paper, Table V); ``hide_prob`` is the
    hiding probability of the ``partial`` regime (``None``: the bundle's own), used by
    the partial-label sweep (Zhou et al. Fig. 5c).
    """

    method: str = "an"
    params: tuple = ()  # method hyper-parameters as sorted (name, value) pairs; a dict is accepted
    lr: float = 1e-3
    batch_size: int = 8
    epochs: int = 25
    patience: int | None = None
    seed: int = 0
    head: str = "linear"
    hidden: int = 512
    standardize: bool | None = None  # None: tabular features yes, backbone features no
    selection: str = "auto"
    expected_positives: float | None = None
    empty_classes: str = "exclude"
    feature_set: str | None = None
    max_memory_mb: float | None = None  # features larger than this stay memory-mapped
    device: str = "auto"  # auto (CUDA when available, else CPU) | cpu | cuda | cuda:N | mps (spmlkit.device)
    regime: str | None = None  # explicit override of the method's observation regime
    hide_prob: float | None = None  # 'partial' regime: probability of hiding each label
    threads: int | None = None  # torch intra-op threads during training (None: 1 in the linear setting, torch's default when fine-tuning)
    val_rows: int | str = "auto"  # validation rows scored each epoch: auto (a subsample above a size), all, or N
    # --- images (spmlkit.training.finetune; docs/images.md) ---------------------------
    setting: str = "linear"  # "linear": a head on cached features; "finetune": backbone + head end to end
    backbone: str = "efficientnet-lite0"
    weights: str | None = None  # local ImageNet weights file of the backbone (required for resnet50)
    image_size: int = 448  # Cole et al. and Xie et al. resize to 448 x 448
    finetune_epochs: int | None = None  # None: 10 (Cole §6.1), or 5 after LinearInit (Cole §6.1)
    linear_init: bool = False  # LinearInit (Cole §6.2): `epochs` of the linear setting first, then fine-tune
    linear_init_lr: float = 1e-3  # learning rate of the LinearInit linear phase
    optimizer: str = "auto"  # auto (the method's recipe, else adam) | adam (Cole) | adamw-onecycle (Xie)
    ema_decay: float | None = None  # EMA of the weights per step; None: the method's recipe (LAC 0.9997), 0: off
    num_workers: int = 0  # image-loading worker processes
    freeze_bn: bool = False  # fine-tuning: BatchNorm layers keep their (ImageNet) statistics; affine params train
    # --- devices (spmlkit.device; docs/gpu.md) -----------------------------------------
    precision: str = "32"  # fine-tuning: 32 | bf16 (autocast) | 16-mixed (float16 autocast + GradScaler, CUDA)
    channels_last: bool | None = None  # fine-tuning memory format; None: on CUDA only (CPU runs unchanged)
    compile: bool = False  # fine-tuning: torch.compile the model
    sync_bn: bool = False  # fine-tuning under torchrun on CUDA: BatchNorm -> SyncBatchNorm

    def __post_init__(self):
        object.__setattr__(self, "params", _freeze_params(self.params))
        _check_types(self)
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ConfigError(f"lr (--lr) must be a finite number > 0, got {self.lr}")
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"seed (--seed) must be a whole number in [0, {MAX_SEED}], got {self.seed}")
        if self.hidden < 1:
            raise ConfigError(f"hidden (--hidden) must be >= 1 hidden unit, got {self.hidden}")
        if self.expected_positives is not None and not (math.isfinite(self.expected_positives)
                                                        and self.expected_positives > 0):
            raise ConfigError(f"expected_positives (--k) must be a finite number > 0, got {self.expected_positives}")
        if self.max_memory_mb is not None and not (self.max_memory_mb >= 0):
            raise ConfigError(f"max_memory_mb (--max-memory-mb) must be >= 0, got {self.max_memory_mb}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.epochs < 1:
            raise ConfigError(f"epochs must be >= 1, got {self.epochs}")
        if self.patience is not None and self.patience < 0:
            raise ConfigError(f"patience must be >= 0 or None, got {self.patience}")
        if self.selection not in SELECTION_CRITERIA:
            raise ConfigError(f"selection must be one of {', '.join(SELECTION_CRITERIA)}, got {self.selection!r}"
                              f"{did_you_mean(self.selection, SELECTION_CRITERIA)}")
        if self.empty_classes not in ("exclude", "zero"):
            raise ConfigError(f"empty_classes must be 'exclude' or 'zero', got {self.empty_classes!r}")
        if self.regime is not None:
            if self.regime != "observed":
                object.__setattr__(self, "regime", get_regime(self.regime).name)
        if self.hide_prob is not None and not 0.0 <= self.hide_prob <= 1.0:
            raise ConfigError(f"hide_prob must be in [0, 1], got {self.hide_prob}")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads must be >= 1 or None, got {self.threads}")
        if not (self.val_rows in ("auto", "all") or (isinstance(self.val_rows, int) and
                                                     not isinstance(self.val_rows, bool) and self.val_rows >= 1)):
            raise ConfigError(f"val_rows (--val-rows) must be auto, all or a whole number >= 1, got {self.val_rows!r}")
        heads = _head_names()  # "decoder" needs fine-tuning's feature map
        if self.head != "decoder" and self.head not in heads:
            raise ConfigError(f"head must be one of {', '.join(sorted(heads))} (or decoder when fine-tuning), "
                              f"got {self.head!r}")
        if self.setting not in ("linear", "finetune"):
            raise ConfigError(f"setting must be 'linear' or 'finetune', got {self.setting!r}")
        if self.head == "tree" and self.setting == "finetune":
            raise ConfigError("the tree head trains on cached tabular features, not end to end: for fine-tuning "
                              "use --head linear, mlp or decoder")
        if self.head == "decoder" and self.setting != "finetune":
            raise ConfigError("the 'decoder' head (label-wise attention) needs the spatial feature map: "
                              "use it with setting 'finetune'")
        if self.image_size < 32:
            raise ConfigError(f"image_size must be >= 32 pixels, got {self.image_size}")
        if self.finetune_epochs is not None and self.finetune_epochs < 1:
            raise ConfigError(f"finetune_epochs must be >= 1 or None, got {self.finetune_epochs}")
        if self.linear_init_lr <= 0:
            raise ConfigError(f"linear_init_lr must be > 0, got {self.linear_init_lr}")
        if self.optimizer not in ("auto", "adam", "adamw-onecycle"):
            raise ConfigError(f"optimizer must be 'auto', 'adam' or 'adamw-onecycle', got {self.optimizer!r}")
        if self.ema_decay is not None and not 0.0 <= self.ema_decay < 1.0:
            raise ConfigError(f"ema_decay must be in [0, 1) or None, got {self.ema_decay}")
        if self.num_workers < 0:
            raise ConfigError(f"num_workers must be >= 0, got {self.num_workers}")
        object.__setattr__(self, "device", check_device_syntax(self.device, "device"))
        if str(self.precision) not in PRECISIONS:
            raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        object.__setattr__(self, "precision", str(self.precision))

    @property
    def param_dict(self) -> dict:
        return dict(self.params)

    def replace(self, **changes) -> "TrainConfig":
        return dataclasses.replace(self, **changes)

    def members(self, lrs=None, seeds=None) -> tuple[list[float], list[int]]:
        """The ``(lrs, seeds)`` of the members a trainer runs: the given lists (one seed per
        learning rate), else the single member ``(lr, seed)``; ``seeds`` alone defaults to
        ``seed`` for every learning rate.

        >>> TrainConfig(lr=0.01, seed=3).members()
        ([0.01], [3])
        >>> TrainConfig(seed=3).members(lrs=[0.1, 0.01])
        ([0.1, 0.01], [3, 3])
        """
        lrs = [self.lr] if lrs is None else list(lrs)
        seeds = [self.seed] * len(lrs) if seeds is None else list(seeds)
        if len(lrs) != len(seeds):
            raise ConfigError("give one seed per learning rate")
        return lrs, seeds

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["params"] = self.param_dict
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ConfigError(f"unknown config key(s) {sorted(unknown)}; expected some of {sorted(names)}")
        return cls(**d)

    @classmethod
    def from_file(cls, path: str | Path) -> "TrainConfig":
        import yaml  # lazy: torch-free CLI start-up

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise ConfigError(f"config file {path} not found") from None
        except yaml.YAMLError as exc:  # one line: where, and the parser's problem (its message spans lines)
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}, line {mark.line + 1}" if mark is not None else str(path)
            what = " ".join(str(getattr(exc, "problem", None) or exc).split())
            raise ConfigError(f"{where}: invalid YAML/JSON: {what}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of options")
        try:
            return cls.from_dict(data)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
