"""Run assembly: the one place where a bundle and a :class:`~spmlkit.config.TrainConfig`
become the parts of a training run.

Every trainer starts the same way — build the method, draw the training observations
``Z`` in the regime it trains on, choose the validation observations and the selection
criterion, find ``k`` (the expected number of positives per example), and hand the
method a :class:`~spmlkit.methods.base.TrainContext`.  :func:`prepare_run` does these
steps once and returns them as :class:`RunParts`; the linear trainer
(:mod:`spmlkit.training.linear`), the fine-tuning trainer
(:mod:`spmlkit.training.finetune`), the ``auto`` recipe (:mod:`spmlkit.training.recipe`)
and the analyses' linear set-up all take their parts from it, so they cannot drift
apart (a second copy in the fine-tuning trainer once lost ``--regime`` and ``--hide-prob``).

What stays with each trainer is what differs between settings: the learner (cached
features or images), the model and the optimizer.

Adding a kind of training data (e.g. background examples with no observed label) means
one more field of :class:`RunParts`, filled in :func:`prepare_run` and read by the
learners that use it; nothing else in the assembly changes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..config import TrainConfig
from ..data.bundle import OBSERVED_ONLY, Bundle
from ..device import resolve_device
from ..errors import ConfigError
from ..labels import expected_positives
from ..methods.base import SCRATCH_DIR, Method, TrainContext, build_method
from ..metrics import (average_precision_from_counts, mean_average_precision, mean_average_precision_members,
                       observed_positive_map, observed_positive_recall_at_k, presence_background_auc,
                       presence_target_group_auc, stream_rank_counts)
from ..sparse_labels import SparseLabels, as_sparse
from .validation import ValidationRows, validation_rows


# ---------------------------------------------------------------------- evaluation
def _has_target_group(Z) -> bool:
    """Presences of at least two labels: each label's records have the others' as contrast."""
    return int((as_sparse(Z).col_counts(1) > 0).sum()) >= 2


def is_streamed(logits) -> bool:
    """True for a chunked score view (:class:`spmlkit.training.scores.ScoreView` streams
    splits too large to hold as ``(G, N, L)`` logits); False for a logits tensor."""
    return hasattr(logits, "chunks") and not torch.is_tensor(logits)


def streamed_map(Y, view, *, empty: str = "exclude") -> list[float]:
    """mAP ×100 of every member of a chunked score view against sparse labels ``Y``
    (:func:`spmlkit.metrics.stream_rank_counts`: memory O(chunk × L))."""
    ap = average_precision_from_counts(stream_rank_counts(Y, view.chunks)) * 100.0
    out = []
    for row in ap:
        ok = ~np.isnan(row)
        vals = row[ok] if empty == "exclude" else np.where(ok, row, 0.0)
        out.append(float(vals.mean()) if vals.size else float("nan"))
    return out


def make_evaluator(selection: str, *, Y_val: np.ndarray | None, Z_val: np.ndarray | None,
                   empty: str = "exclude", background: bool = False) -> tuple[str, Callable[[torch.Tensor], list[float]]]:
    """Validation criterion: ``map`` needs full validation labels; ``observed_map`` and
    ``observed_recall@k`` use observations only.  ``auto`` = ``map`` when full
    labels exist, else ``observed_map`` (the reasons are in :mod:`spmlkit.config`) —
    ``target_group_auc`` on presence-only data with background rows — and
    ``last`` when there is no validation data at all.  ``last`` scores every epoch NaN,
    so no epoch is "best" and the final weights are kept."""
    if selection == "auto":
        selection = "map" if Y_val is not None else ("observed_map" if Z_val is not None else "last")
        if background and selection == "observed_map":  # presence-only data
            # the other species' records as the contrast cancels the observers' sampling bias
            # (Phillips et al. 2009); with presences of one label only there is no target group
            selection = "target_group_auc" if _has_target_group(Z_val) else "background_auc"
    if selection == "last":
        return selection, lambda logits: [math.nan] * logits.shape[0]
    no_positive = ("the validation split has no positive label, so selection {!r} cannot score any epoch (it "
                   "would silently keep the untrained model); prepare the bundle again with a larger "
                   "--val-fraction, or train with --selection last")
    if selection == "map":
        if Y_val is None:
            raise ConfigError("selection 'map' needs full validation labels; this bundle has observations only "
                              "(use observed_map / observed_recall@k, or give a fully labelled validation file)")
        if not as_sparse(Y_val).count(1):
            raise ConfigError(no_positive.format(selection))

        def by_map(logits):
            if is_streamed(logits):  # too large for (G, N, L) logits: streamed in row chunks
                return streamed_map(Y_val, logits, empty=empty)
            if logits.device.type != "cpu":  # on the device, read back once (the CPU path is unchanged)
                return mean_average_precision_members(np.asarray(Y_val), logits, empty=empty)
            return [mean_average_precision(Y_val, s.numpy(), empty=empty).map for s in logits]

        return selection, by_map
    if Z_val is None:
        raise ConfigError(f"selection {selection!r} needs validation observations")
    if not as_sparse(Z_val).count(1):
        raise ConfigError(no_positive.format(selection))
    if selection == "background_auc":
        Zs = as_sparse(Z_val)
        if bool((Zs.row_counts(0) < Zs.n_labels).all()):
            raise ConfigError("selection 'background_auc' needs background rows (examples with no observed label) "
                              "in the validation split; this data has none")
        return selection, lambda logits: [presence_background_auc(Z_val, s.numpy()) for s in logits.cpu()]
    if selection == "target_group_auc":
        if not _has_target_group(Z_val):
            raise ConfigError("selection 'target_group_auc' needs validation presences of at least two labels")
        return selection, lambda logits: [presence_target_group_auc(Z_val, s.numpy()) for s in logits.cpu()]
    if selection == "observed_map":
        def by_observed_map(logits):
            if is_streamed(logits):
                return streamed_map(as_sparse(Z_val).positives(), logits)
            if logits.device.type != "cpu":
                return mean_average_precision_members(np.asarray(Z_val) == 1, logits)
            return [observed_positive_map(Z_val, s.numpy()) for s in logits]

        return selection, by_observed_map
    k = int(selection.split("@")[1])
    return selection, lambda logits: [observed_positive_recall_at_k(Z_val, s.numpy(), k) for s in logits.cpu()]


# ---------------------------------------------------------------------- observations
def validation_observations(bundle, selection: str, regime: str) -> np.ndarray | None:
    """The validation observations a selection criterion scores with: the data's own
    observations when it has no full validation labels, and, for the observed-label
    criteria, single positives drawn in the training ``regime``
    (:meth:`spmlkit.data.Bundle.selection_observations`); None when full labels are used."""
    if bundle.labels("val") is None or selection.startswith("observed"):
        return bundle.selection_observations("val", regime)
    return None


def training_regime(method: Method, config: TrainConfig | None = None) -> str:
    """The regime ``method`` trains on: ``config.regime`` when set, else its registered one."""
    return config.regime if config is not None and config.regime is not None else method.regime


def observations_for(bundle: Bundle, method: Method, config: TrainConfig | None = None) -> np.ndarray:
    """Training observations in the regime the method trains on: ``config.regime`` when
    set (an explicit override, e.g. ``full``), else the method's registered regime;
    ``config.hide_prob`` is passed on for the ``partial`` regime.

    Observed-only data (the user's own labels) cannot be re-observed: single-positive
    methods take it as it is; a method meant for another regime is accepted only when
    the user's observations already have what that regime provides (``full``: no
    unobserved entry; ``…negative(s)`` regimes: an observed negative in every row;
    ``partial``: anything)."""
    regime = training_regime(method, config)
    hide_prob = config.hide_prob if config is not None else None
    if not bundle.has_full_labels:
        Z = as_sparse(bundle.observations("train"))
        if regime in ("single_positive", OBSERVED_ONLY, "partial"):
            return Z
        if regime == "full" and Z.count(0) == 0:
            return Z
        if regime in ("single_positive_all_negatives", "single_positive_one_negative") and \
                bool((Z.row_counts(-1) > 0).all()):
            return Z
        raise ConfigError(f"method {method.name!r} needs the {regime!r} regime, which cannot be "
                          "simulated from observed-only data (and these observations do not already provide it)")
    if hide_prob is not None:
        return bundle.observations("train", regime=regime, hide_prob=hide_prob)
    return bundle.observations("train", regime=regime)


# ---------------------------------------------------------------------- the seam
@dataclass
class RunParts:
    """What a run is made of before its learner exists (see the module docstring).

    Split arrays are None when the split is absent (``bundle.size(split) == 0``) or, for
    labels, when the data has no full labels for it."""

    config: TrainConfig
    method: Method  # built for this run, not yet set up (:meth:`setup_method` does it)
    device: torch.device
    regime: str  # the regime the training observations were drawn in
    observed: SparseLabels  # (N, L) training observations Z, sparse
    Y_train: np.ndarray | None  # full training labels: label recovery only, never training
    Y_val: np.ndarray | None
    Z_val: np.ndarray | None  # the observations an observed-label criterion scores with
    Y_test: np.ndarray | None
    Z_test: np.ndarray | None  # observed-only test split: the observed-label metrics
    test_mask: np.ndarray | None  # where Y_test is known (labels surveyed on part of the examples); None: everywhere
    selection: str  # the resolved criterion (``auto`` replaced)
    evaluate: Callable[[torch.Tensor], list]  # (G, N_scored, L) logits of validation.rows -> one score per member
    expected_positives: float | None  # k (Cole §5.3)
    validation: ValidationRows | None = None  # the validation rows every epoch scores (None: no validation split)

    @property
    def patience(self) -> int | None:
        """Early-stopping patience: none when every epoch scores NaN (``last``)."""
        return None if self.selection == "last" else self.config.patience

    def context(self, observed: torch.Tensor, *, lrs, seeds, epochs: int, run_dir=None,
                dist_ctx=None) -> TrainContext:
        """The :class:`TrainContext` of members ``zip(lrs, seeds)``; ``observed`` is the
        learner's tensor of :attr:`observed` (components index it, so it is the same one)."""
        return TrainContext(n_train=len(self.observed), n_labels=self.observed.shape[1], observed=observed,
                            n_members=len(lrs), expected_positives=self.expected_positives,
                            base_lrs=tuple(lrs), seeds=tuple(int(s) for s in seeds), epochs=epochs,
                            world_size=1 if dist_ctx is None else dist_ctx.world_size,
                            rank=0 if dist_ctx is None else dist_ctx.rank, device=self.device,
                            scratch_dir=str(Path(run_dir) / SCRATCH_DIR) if run_dir is not None else None)

    def setup_method(self, observed: torch.Tensor, **kw) -> TrainContext:
        """Set the method up on :meth:`context` ``(observed, **kw)``; returns the context."""
        ctx = self.context(observed, **kw)
        self.method.setup(ctx)
        return ctx


def label_mask(bundle, split: str) -> np.ndarray | None:
    """The bundle's label mask of ``split`` (presence-only data; None when every label is known everywhere)."""
    get = getattr(bundle, "label_mask", None)
    return get(split) if get is not None else None


def n_background(bundle) -> int:
    """Background rows the bundle declares (presence-only data): training rows kept with no observed label."""
    meta = getattr(bundle, "meta", None) or {}
    return int(meta.get("background_rows") or 0)


def build_run_method(config: TrainConfig) -> Method:
    """The method of ``config`` (``build_method(config.method, **params)``), fresh."""
    return build_method(config.method, **config.param_dict)


def run_expected_positives(config: TrainConfig, Y_train, Y_val) -> float | None:
    """k: ``config.expected_positives`` when given, else Eq. A1 of Cole et al. (average
    positives per example) on the full training labels, else on full validation labels,
    else None (methods that need k then ask for it)."""
    if config.expected_positives is not None:
        return config.expected_positives
    return expected_positives(Y_train if Y_train is not None else Y_val)


def prepare_run(bundle: Bundle, config: TrainConfig, *, method: Method | None = None,
                device: torch.device | None = None) -> RunParts:
    """What training ``config`` on ``bundle`` needs, worked out in one place for every trainer.

    Args:
        bundle: a prepared :class:`~spmlkit.data.Bundle` or another
            :class:`~spmlkit.data.bundle_like.BundleLike`.
        config: the run's :class:`~spmlkit.config.TrainConfig`.
        method: an already built method of ``config`` (built here when None).
        device: an already resolved device (resolved from ``config.device`` when None).

    Returns:
        :class:`RunParts`: the method, the device, the training observations drawn in the
        run's regime, the validation labels or observations and the evaluator that selects
        with them, k (Cole et al. Eq. A1), and the test split's labels, observations and
        label mask.

    Example:
        >>> import numpy as np
        >>> from spmlkit.config import TrainConfig
        >>> from spmlkit.data.memory import ArrayBundle
        >>> rng = np.random.default_rng(0)
        >>> Z = np.zeros((60, 3), dtype="int8")
        >>> Z[np.arange(60), rng.integers(0, 3, 60)] = 1
        >>> bundle = ArrayBundle(rng.normal(size=(40, 5)), Z[:40], X_val=rng.normal(size=(20, 5)), Z_val=Z[40:])
        >>> parts = prepare_run(bundle, TrainConfig(method="wan"))
        >>> parts.method.name, parts.regime, parts.observed.shape, parts.selection
        ('wan', 'single_positive', (40, 3), 'observed_map')
    """
    if method is None:
        method = build_run_method(config)
    if device is None:
        device = resolve_device(config.device, option="device")
    regime = training_regime(method, config)
    Z = observations_for(bundle, method, config)
    has_val, has_test = bundle.size("val") > 0, bundle.size("test") > 0
    Y_train = bundle.labels("train")
    Y_val = bundle.labels("val") if has_val else None
    Z_val = validation_observations(bundle, config.selection, regime) if has_val else None
    Y_test = bundle.labels("test") if has_test else None
    Z_test = bundle.observations("test") if Y_test is None and has_test else None
    test_mask = label_mask(bundle, "test") if Y_test is not None else None
    val = validation_rows(bundle.size("val"), bundle.n_labels, config) if has_val else None
    scored = (lambda labels: labels) if val is None else val.take  # the evaluator sees the scored rows only
    selection, evaluate = make_evaluator(config.selection, Y_val=scored(Y_val), Z_val=scored(Z_val),
                                         empty=config.empty_classes, background=n_background(bundle) > 0)
    return RunParts(config=config, method=method, device=torch.device(device), regime=regime, observed=Z,
                    Y_train=Y_train, Y_val=Y_val, Z_val=Z_val, Y_test=Y_test, Z_test=Z_test, test_mask=test_mask,
                    selection=selection, evaluate=evaluate,
                    expected_positives=run_expected_positives(config, Y_train, Y_val), validation=val)
