"""Training the tree head (``--head tree``): gradient-boosted trees trained with a
registered single-positive loss through XGBoost's custom objective
(:mod:`spmlkit.training.tree_objective` gives the gradient and curvature).

**Why XGBoost** (and its ``xgboost-cpu`` wheel): one multi-output tree per round for all
labels (``multi_strategy="multi_output_tree"`` with ``tree_method="hist"``; Chen & Guestrin
2016), so an ``L``-label loss whose entries interact (ZLPR, OPML) trains as one model, and
the cost does not grow as ``L`` separate models.  LightGBM (3.5 MB wheel) takes custom
objectives but trains one model per label for multi-label data.  ``xgboost-cpu`` 3.2.0 is
a 5.6 MB wheel (19 MB installed), against 132 MB for the ``xgboost`` wheel, which bundles
CUDA code (``pip download --no-deps``, measured 2026-12-06).  Both read categorical
features; spmlkit's tabular formats give numeric columns, so that is not used here.

**A run.**  Per seed: the method is set up on the training observations as for a neural
head (its components' static inputs, e.g. the label frequencies of the full-weighted loss);
a per-label constant (the intercept, a few Newton steps on the loss from 0) starts the
margins; then up to ``ROUNDS`` rounds of one multi-output tree each, scored after every
round by the run's label-free criterion on the validation split (observed-label mAP, or
the target-group AUC on presence-only data: :func:`spmlkit.training.prepare.make_evaluator`),
stopping ``PATIENCE`` rounds after the best, which is kept (early stopping by boosting
round).  Deterministic under a seed: the hist method on the CPU is deterministic
(XGBoost's documentation), row and column subsampling draw from the seed.

**Progress and checkpoints.**  ``log`` hears a line every :data:`PROGRESS_EVERY` rounds
(and the last), and a :class:`~spmlkit.training.callbacks.ProgressBar` counting rounds
(``spml train``) moves with every round.  With ``run_dir``, ``last.pt`` is written after
each finished seed and a killed run resumes after the last one, to the same model
(:mod:`spmlkit.training.tree_checkpoint` says why not mid-seed).

The features are standardised as for the other heads (trees are invariant to it up to
the histogram's bin edges), so a saved tree model predicts through the same path
(:class:`spmlkit.models.trees.TreeHead`).

**Defaults** (``ETA``, ``MAX_DEPTH``, ``ROUNDS``, ``PATIENCE``, ``SUBSAMPLE``, ``MAX_BIN``): chosen
on the shared data's validation scores only (benchmarks/trees.py ``choose`` and
``choose-bins``; docs/recipe.md).
The run's learning rates are the SGD heads' and are not used: a tree run records ``ETA``
as its ``lr``, and trains once per seed.
"""
from __future__ import annotations

import math
import time

import numpy as np
import torch

from ..config import TrainConfig
from ..errors import ConfigError
from ..models.trees import booster_to_tensor, xgboost_module
from ..progress import advance_to, format_seconds
from .callbacks import ProgressBar
from .linear import feature_statistics, resolve_standardize, split_scores
from .prepare import build_run_method, prepare_run
from .result import RunResult
from .tree_checkpoint import load_tree_checkpoint, save_tree_checkpoint, seed_state
from .tree_objective import TreeObjective, check_tree_method

#: shrinkage per round (Friedman 2001's ν; XGBoost's ``eta``)
ETA = 0.1
#: depth of each multi-output tree
MAX_DEPTH = 4
#: most boosting rounds, and rounds without a better validation score before stopping
ROUNDS = 400
PATIENCE = 30
#: histogram bins per feature (XGBoost's ``max_bin``; its default is 256): 32, the smallest
#: candidate of 256/64/32 whose mean validation regret over disdat NZ and SWI and the Mulan
#: sets yeast, emotions and scene is within 0.25 points of the lowest (a rule fixed before
#: the run; ``benchmarks/trees.py choose-bins``, benchmarks/results/trees/choose-bins.md:
#: regrets 0.20, 0.20, 0.44; no test label read).  Fewer bins make a round cheaper where
#: the histogram dominates (4x from 256 to 64 at emotions' shape, bins.md)
MAX_BIN = 32
#: rows and columns drawn per tree (Friedman 2002's stochastic gradient boosting)
SUBSAMPLE = 0.8
COLSAMPLE = 0.8
#: boosting rounds between two progress lines (and the last round trained)
PROGRESS_EVERY = 25
#: Newton steps of the per-label intercept
INTERCEPT_STEPS = 8
#: bytes a tree member holds per (training example, label) entry while it trains: the (N, L)
#: margins XGBoost hands the objective and the base margin (float32 each), the objective's
#: float32 logits, gradient, curvature and about three autograd intermediates, the dense
#: observations (int8) and XGBoost's own gradient pairs (8 bytes): ~41, rounded down to 40.
#: A multi-output tree needs them whole (one tree for all labels per round), unlike the
#: linear and MLP heads, which see one batch at a time.
WORKING_BYTES_PER_ENTRY = 40


def working_bytes(n_train: int, n_labels: int, n_runs: int = 1) -> int:
    """The memory ``n_runs`` tree members hold while they train on ``n_train`` examples and
    ``n_labels`` labels (:data:`WORKING_BYTES_PER_ENTRY` per entry).

    >>> working_bytes(100_000, 10_000) / 2 ** 30 > 30
    True
    """
    return int(n_train) * int(n_labels) * WORKING_BYTES_PER_ENTRY * int(n_runs)


def image_features(bundle, config: TrainConfig) -> bool:
    """True on a backbone's cached image features (the same rule as the recipe's
    ``backbone_features``), where the tree head is refused."""
    return (getattr(bundle, "kind", "features") == "images" or config.feature_set is not None
            or bool((getattr(bundle, "meta", None) or {}).get("feature_source")))


def booster_params(seed: int, n_labels: int, threads: int) -> dict:
    """XGBoost's parameters of a tree run (custom objective: no built-in metric)."""
    return {"tree_method": "hist", "multi_strategy": "multi_output_tree", "max_depth": MAX_DEPTH, "eta": ETA,
            "max_bin": MAX_BIN,            "subsample": SUBSAMPLE, "colsample_bytree": COLSAMPLE, "min_child_weight": 1e-3, "lambda": 1.0,
            "seed": int(seed), "nthread": int(threads), "num_target": int(n_labels), "base_score": 0.0,
            "disable_default_eval_metric": 1, "verbosity": 0}


def _intercept(objective: TreeObjective, n: int, n_labels: int) -> np.ndarray:
    """Per-label constant margins: Newton steps on the summed loss from 0 (a column's
    gradient and curvature summed over rows; exact for separable losses)."""
    b = np.zeros(n_labels)
    for _ in range(INTERCEPT_STEPS):
        g, h = objective.grad_hess(np.broadcast_to(b, (n, n_labels)))
        b = np.clip(b - g.sum(0) / np.maximum(h.sum(0), 1e-12), -15, 15)
    return b.astype(np.float32)


def _standardised(bundle, config: TrainConfig, split: str, mean, std) -> np.ndarray:
    x = np.asarray(bundle.features(split, config.feature_set), dtype=np.float32)
    return x if mean is None else (x - mean) / std


def train_booster(X: np.ndarray, objective: TreeObjective, *, X_val: np.ndarray | None, evaluate, seed: int,
                  rounds: int = ROUNDS, patience: int | None = PATIENCE, threads: int = 1, report=None):
    """One booster: ``(booster of the best round, intercept (L,), history, best round)``;
    ``evaluate(val_margins (1, N, L) tensor) -> [score]`` chooses the round (every round
    when ``X_val`` is None: the last).  ``report(round, score, best, best_score)`` hears
    every :data:`PROGRESS_EVERY`-th round and the last one trained."""
    xgb = xgboost_module()
    n, L = len(X), objective.Z.shape[1]
    icept = _intercept(objective, n, L)
    # the intercept is XGBoost's base margin: the predictions it hands the objective include it
    dtrain = xgb.DMatrix(X, base_margin=np.broadcast_to(icept, (n, L)).copy(), nthread=threads)
    booster = xgb.Booster(booster_params(seed, L, threads), [dtrain])
    val_margin = None if X_val is None else np.broadcast_to(icept, (len(X_val), L)).astype(np.float32)
    dval = None if X_val is None else xgb.DMatrix(X_val, nthread=threads)

    def obj(predt, _):
        return objective.grad_hess(np.asarray(predt).reshape(n, L))

    history, best, best_score, score = [], 0, -math.inf, math.nan
    for r in range(rounds):
        booster.update(dtrain, r, fobj=obj)
        stop = False
        if dval is None:
            best = r + 1
        else:
            # the new tree's contribution only (each round scores in O(one tree), not O(rounds))
            val_margin = val_margin + booster.predict(dval, iteration_range=(r, r + 1),
                                                      output_margin=True).reshape(-1, L)
            score = float(evaluate(torch.from_numpy(val_margin)[None])[0])
            history.append(score)
            if math.isfinite(score) and score > best_score:
                best, best_score = r + 1, score
            else:
                stop = patience is not None and r + 1 - best >= patience
        if report is not None and ((r + 1) % PROGRESS_EVERY == 0 or stop or r + 1 == rounds):
            report(r + 1, score, best, best_score)
        if stop:
            break
    best = max(best, 1)
    return booster[:best], icept, history, best


def train_trees(bundle, config: TrainConfig, *, lrs: list[float] | None = None, seeds: list[int] | None = None,
                run_dir=None, resume: bool = True, on_epoch=None, keep_state: bool = False, method=None,
                device=None, callbacks=(), log=None) -> list[RunResult]:
    """Train the tree head of ``config`` once per seed of ``zip(lrs, seeds)`` (the ``lrs``
    are the SGD heads' and are not used; see the module docstring); results in member order,
    like :func:`spmlkit.training.linear.train_linear`.

    ``run_dir``: ``last.pt`` there after each finished seed, and with ``resume`` a killed
    run goes on after its last finished seed (:mod:`spmlkit.training.tree_checkpoint`).
    ``log(line)`` hears a progress line every :data:`PROGRESS_EVERY` rounds; a
    :class:`~spmlkit.training.callbacks.ProgressBar` counting rounds (``spml train``) moves
    with every round."""
    t_start = time.perf_counter()
    lrs, seeds = config.members(lrs, seeds)
    method = build_run_method(config) if method is None else method
    _check_tree_run(bundle, config, method)
    parts = prepare_run(bundle, config, method=method, device=torch.device("cpu"))
    mean = std = None
    if resolve_standardize(bundle, config):
        mean, std = feature_statistics(bundle.features("train", config.feature_set))
    X = {s: _standardised(bundle, config, s, mean, std) for s in ("train", "val", "test") if bundle.size(s)}
    Z = parts.observed.dense()
    unique = list(dict.fromkeys(int(x) for x in seeds))
    done = load_tree_checkpoint(run_dir, unique, Z.shape[1]) if run_dir is not None and resume else {}
    if done and log is not None:
        log(f"resuming {run_dir} after seed(s) {', '.join(map(str, done))} of {len(unique)} "
            "(from last.pt; --no-resume starts over)")
    saved = {s: seed_state(*done[s]) for s in done}
    bars = _round_bars(callbacks)
    by_seed = {}
    for k, s in enumerate(unique):
        if s not in done:
            m = build_run_method(config)
            ctx = parts.context(torch.from_numpy(Z), lrs=[ETA], seeds=[s], epochs=ROUNDS)
            m.setup(ctx)
            torch.manual_seed(s)  # components that draw from the global generator stay reproducible
            objective = TreeObjective(m, ctx, Z, seed=s, dtype=torch.float32)
            done[s] = train_booster(X["train"], objective, X_val=X.get("val"), evaluate=parts.evaluate, seed=s,
                                    patience=None if parts.selection == "last" else PATIENCE,
                                    threads=int(config.threads or 1),
                                    report=_reporter(config, parts.selection, s, k * ROUNDS, log, bars))
            if run_dir is not None:
                saved[s] = seed_state(*done[s])
                save_tree_checkpoint(run_dir, saved)
        for bar in bars:
            advance_to(bar, (k + 1) * ROUNDS)
        by_seed[s] = _result_fields(*done[s], X, parts, config)
    out = []
    for lr, s in zip(lrs, seeds):
        fields = dict(by_seed[int(s)])
        state = fields.pop("state")
        out.append(RunResult(method=config.method, params=dict(method.params), lr=ETA, batch_size=config.batch_size,
                             seed=int(s), selection=parts.selection, seconds=time.perf_counter() - t_start,
                             expected_positives=parts.expected_positives,
                             state=({**state, "mean": mean, "std": std} if keep_state else None), **fields))
    return out


def _check_tree_run(bundle, config: TrainConfig, method) -> None:
    """Refuse what the tree head cannot train, with one line naming the alternative."""
    check_tree_method(method)
    if config.setting == "finetune":
        raise ConfigError("the tree head trains on cached tabular features, not end to end: for fine-tuning use "
                          "--head linear, mlp or decoder")
    if image_features(bundle, config):
        raise ConfigError("the tree head is for tabular and presence-only features; on a backbone's image features "
                          "use --head linear or mlp")


def _round_bars(callbacks) -> list:
    """The bars of the :class:`ProgressBar` callbacks that count boosting rounds."""
    inner = [getattr(cb, "inner", cb) for cb in callbacks]
    return [cb.bar for cb in inner if isinstance(cb, ProgressBar) and cb.bar is not None and cb.plan.unit == "round"]


def _reporter(config: TrainConfig, selection: str, seed: int, offset: int, log, bars):
    """``train_booster``'s ``report``: a progress line to ``log``, the bars moved to
    ``offset`` + the round (None when nobody listens)."""
    if log is None and not bars:
        return None
    t0 = time.perf_counter()

    def report(r: int, score: float, best: int, best_score: float) -> None:
        for bar in bars:
            bar.set_postfix(seed=seed, val=f"{score:.2f}")
            advance_to(bar, offset + r)
        if log is not None:
            val = "—" if math.isnan(score) else f"{score:.2f} (best {best_score:.2f} at round {best})"
            log(f"{config.method} (tree), seed {seed}: round {r}/{ROUNDS}, validation {selection} {val}; "
                f"{format_seconds(time.perf_counter() - t0)}")
    return report


def predict_margins(booster, icept: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``(N, L)`` margins of a booster and its intercept."""
    L = len(icept)
    return np.asarray(booster.inplace_predict(X, predict_type="margin"), dtype=np.float32).reshape(len(X), L) + icept


def _result_fields(booster, icept, history, best, X, parts, config) -> dict:
    L = len(icept)
    logits = {s: predict_margins(booster, icept, x) for s, x in X.items()}
    test = logits.get("test", np.zeros((0, L), dtype=np.float32))
    train = logits["train"] if parts.Y_train is not None else None
    scored = split_scores(test, train, Y_test=parts.Y_test, Z_test=parts.Z_test, Y_train=parts.Y_train,
                          empty=config.empty_classes, test_mask=parts.test_mask)
    raw = booster_to_tensor(booster)
    head = {"booster": raw, "length": torch.tensor(float(len(raw)), device="cpu"), "intercept": torch.from_numpy(icept),
            "n_features": torch.tensor(float(X["train"].shape[1]), device="cpu")}
    return dict(best_epoch=best, val_score=history[best - 1] if history else math.nan, epochs_run=len(history) or best,
                val_history=list(history), **scored,
                state={"head": head, "method": {}, "head_spec": {"head": "tree", "hidden": config.hidden},
                       "head_kind": "tree", "val_logits": logits.get("val"), "test_logits": test})


