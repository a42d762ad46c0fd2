"""Training a recipe (:attr:`spmlkit.methods.base.Method.candidates`), e.g. ``auto``.

Each member method trains at every learning rate of the recipe with the caller's
seeds, batch size and epochs (one stacked model per member method); each run keeps its
best epoch by ``observed_map``.  For every seed, each member method keeps its learning
rate with the best observed-label validation mAP, and the recipe's prediction is the
mean of those runs' probabilities (``combine="mean_probability"``) or the single best
run (``combine="select"``).  Nothing reads full labels except the final test and
training-set scores, which are reported, never used.

The combined model is an ordinary stacked head (:mod:`spmlkit.models.heads`) with one
member per chosen run; its result state has ``members`` = that count, and a saved model
averages the members' probabilities (:class:`spmlkit.practitioner.saved.SavedModel` does
not import this module: the file format says it).
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from ..config import TrainConfig
from ..errors import ConfigError
from ..metrics import mean_average_precision, observed_positive_map
from ..models.heads import build_head

#: the recipe's selection criterion: observed labels only (no full label is ever read)
RECIPE_SELECTION = "observed_map"


def mean_probability_logits(logits: torch.Tensor) -> torch.Tensor:
    """``(G, N, L)`` member logits -> ``(N, L)`` logit of the members' mean probability.

    >>> import torch
    >>> x = torch.tensor([[[0.0, 2.0]], [[0.0, -2.0]]])  # two members, one example, two labels
    >>> [abs(round(v, 6)) for v in mean_probability_logits(x)[0].tolist()]
    [0.0, 0.0]
    >>> round(mean_probability_logits(torch.tensor([[[1.5]]])).item(), 6)  # one member: its own logit
    1.5
    """
    p = torch.sigmoid(logits.double()).mean(0).clamp(1e-12, 1 - 1e-12)
    return torch.log(p) - torch.log1p(-p)


def _stack(states: list[dict]) -> dict:
    return {k: torch.stack([torch.as_tensor(s[k], device="cpu") for s in states]) for k in states[0]}


def _split_logits(bundle, config: TrainConfig, head: dict, mean, std, split: str) -> torch.Tensor:
    """``(G, N, L)`` logits of the stacked ``head`` on a split's features."""
    from ..device import resolve_device
    from .linear import FeatureStore

    device = resolve_device(config.device, option="device")
    G = next(iter(head.values())).shape[0]
    store = FeatureStore(bundle.features(split, config.feature_set), mean=mean, std=std, device=device,
                         max_bytes=None if config.max_memory_mb is None else config.max_memory_mb * 2 ** 20)
    with torch.device(device):  # every tensor on the run's device, none on a default device
        mod = build_head(config.head, store.dim, bundle.n_labels,
                         [torch.Generator(device="cpu").manual_seed(0)] * G, hidden=config.hidden)
    mod.load_state_dict(head)
    out = []
    with torch.no_grad():
        for x in store.chunks():
            out.append(mod(x).cpu())
    return torch.cat(out, 1) if out else torch.zeros(G, 0, bundle.n_labels, device="cpu")


def train_recipe(bundle, config: TrainConfig, method, *, lrs: list[float], seeds: list[int],
                 run_dir: str | Path | None = None, resume: bool = True, on_epoch=None,
                 keep_state: bool = False) -> list:
    """Train the recipe ``method`` once per member ``(lr, seed)`` of the caller (the
    recipe searches its own learning rates, so the caller's ``lr`` is recorded and not
    used); results in member order, like :func:`spmlkit.training.linear.train_linear`."""
    from .linear import RunResult, train_linear

    t_start = time.perf_counter()
    if config.setting == "finetune":
        raise ConfigError(f"method {method.name!r} is a recipe of the linear setting (it trains several heads on "
                          "cached features); for fine-tuning name one method")
    if bundle.size("val") == 0:
        raise ConfigError(f"method {method.name!r} chooses each member's learning rate on held-out observations; "
                          "this data has no validation split (prepare it with --val-fraction > 0, or give "
                          "SPMLClassifier validation_data)")
    if config.selection not in ("auto", RECIPE_SELECTION):
        raise ConfigError(f"method {method.name!r} selects with {RECIPE_SELECTION} only (observed labels); "
                          f"--selection {config.selection} is not used by it — leave --selection at auto")
    from .linear import training_regime

    Z_val = np.asarray(bundle.selection_observations("val", training_regime(method, config)))
    if not (Z_val == 1).any():
        raise ConfigError("the validation split has no observed positive, so the recipe cannot compare "
                          "learning rates; prepare the bundle again with a larger --val-fraction")
    unique_seeds = list(dict.fromkeys(int(s) for s in seeds))
    m_lrs = [lr for lr in method.candidate_lrs for _ in unique_seeds]
    m_seeds = [s for _ in method.candidate_lrs for s in unique_seeds]
    runs: dict[str, list] = {}
    for i, name in enumerate(method.candidates):
        cfg = config.replace(method=name, params=(), selection=RECIPE_SELECTION)
        sub_dir = None if run_dir is None else Path(run_dir) / "members" / name

        def member_epoch(info, name=name, i=i):
            if on_epoch is not None:
                on_epoch({**info, "member": f"{name} ({i + 1}/{len(method.candidates)})"})

        runs[name] = train_linear(bundle, cfg, lrs=m_lrs, seeds=m_seeds, run_dir=sub_dir, resume=resume,
                                  on_epoch=member_epoch, keep_state=True)
    first = runs[method.candidates[0]][0].state
    mean, std = first["mean"], first["std"]
    Y_test = bundle.labels("test") if bundle.size("test") > 0 else None
    Z_test = bundle.observations("test") if Y_test is None and bundle.size("test") > 0 else None
    Y_train = bundle.labels("train")
    by_seed = {}
    for s in unique_seeds:
        chosen = []
        for name in method.candidates:
            cands = [r for r in runs[name] if r.seed == s]
            best = max(cands, key=lambda r: -math.inf if math.isnan(r.val_score) else r.val_score)
            chosen.append((name, best))
        if method.combine == "select":
            chosen = [max(chosen, key=lambda c: -math.inf if math.isnan(c[1].val_score) else c[1].val_score)]
        head = _stack([r.state["head"] for _, r in chosen])
        logits = {split: mean_probability_logits(_split_logits(bundle, config, head, mean, std, split)).float()
                  for split in ("val", "test", "train") if bundle.size(split) > 0}
        by_seed[s] = (chosen, head, logits)
    results = []
    for lr, s in zip(lrs, seeds):
        chosen, head, logits = by_seed[int(s)]
        val_score = observed_positive_map(Z_val, logits["val"].numpy())
        test = mean_average_precision(Y_test, logits["test"].numpy(), empty=config.empty_classes) \
            if Y_test is not None else None
        test_observed = None
        if Z_test is not None:
            from ..metrics import evaluate_scores

            test_observed = evaluate_scores(logits["test"].numpy(), Z=Z_test)
        train_map = mean_average_precision(Y_train, logits["train"].numpy(), empty=config.empty_classes).map \
            if Y_train is not None else None
        notes = {"members": [{"method": n, "lr": r.lr, "best_epoch": r.best_epoch,
                              "val_observed_map": r.val_score} for n, r in chosen],
                 "combine": method.combine}
        results.append(RunResult(
            method=config.method, params=dict(method.params), lr=lr, batch_size=config.batch_size, seed=int(s),
            best_epoch=max(r.best_epoch for _, r in chosen), val_score=val_score, selection=RECIPE_SELECTION,
            test_map=None if test is None else test.map,
            test_ap=None if test is None else [None if math.isnan(a) else float(a) for a in test.ap],
            train_map=train_map, epochs_run=max(r.epochs_run for _, r in chosen), val_history=[],
            seconds=time.perf_counter() - t_start, n_empty_test_classes=0 if test is None else test.n_empty,
            test_observed=test_observed, expected_positives=config.expected_positives, notes=notes,
            state=({"head": head, "members": len(chosen), "method": {}, "mean": mean, "std": std,
                    "val_logits": logits["val"].numpy(),
                    "test_logits": logits["test"].numpy() if "test" in logits else
                    np.zeros((0, bundle.n_labels), np.float32)} if keep_state else None)))
    return results
