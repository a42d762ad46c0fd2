"""Training a recipe (:attr:`spmlkit.methods.base.Method.candidates`), e.g. ``auto``.

Each member method trains at every learning rate of the recipe with the caller's
seeds, batch size and epochs (one stacked model per member method); each run keeps its
best epoch by ``observed_map`` — on presence-only data (background rows) the recipe's
``presence_candidates`` are the members and every choice is made by ``target_group_auc``
(:func:`recipe_selection`).  For every seed, each member method keeps its learning
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
from ..models.heads import build_head
from . import distributed
from ..sparse_labels import as_sparse
from .callbacks import EpochFunction, tagged
from .linear import FeatureStore, split_scores, train_linear
from .prepare import make_evaluator, n_background, prepare_run, training_regime
from .result import RunResult

def recipe_selection(bundle, method, Z_val: np.ndarray):
    """The recipe's criterion, its evaluator on ``Z_val`` and its members for ``bundle``:
    ``observed_map`` and ``method.candidates`` (observed labels only: no full label is ever
    read); on presence-only data (background rows) ``target_group_auc`` (``background_auc``
    when validation holds one species only) and ``method.presence_candidates`` when the
    recipe declares them."""
    background = n_background(bundle) > 0
    selection, evaluate = make_evaluator("auto", Y_val=None, Z_val=Z_val, background=background)
    members = getattr(method, "presence_candidates", ()) if background else ()
    return selection, evaluate, tuple(members) or tuple(method.candidates)


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


def _combine(logits: list[np.ndarray]) -> np.ndarray:
    """The members' ``(N, L)`` logits -> the logit of their mean probability (float32)."""
    return mean_probability_logits(torch.as_tensor(np.stack(logits), device="cpu")).float().numpy()


def _score(run) -> float:
    """A run's validation score for ``max`` (a run without a valid score never wins)."""
    return -math.inf if math.isnan(run.val_score) else run.val_score


def _training_logits(bundle, config: TrainConfig, head: dict, mean, std, device) -> np.ndarray:
    """``(G, N, L)`` logits of the stacked ``head`` on the training features (the members'
    runs keep their validation and test logits, not the training set's)."""
    return _split_logits(bundle, "train", config, head, mean, std, device)


def _combined_view(bundle, split: str, config: TrainConfig, head: dict, mean, std, device):
    """The combined model's ``(1, N, L)`` logits on ``split`` (the logit of the members' mean
    probability), streamed in row chunks (:class:`~spmlkit.training.scores.ScoreView`):
    used when the members' logits were too large to keep (issue 32)."""
    from .scores import ScoreView

    L = bundle.n_labels
    G = next(iter(head.values())).shape[0]
    rows = max(1, (64 * 2 ** 20) // (8 * G * max(L, 1)))
    store = FeatureStore(bundle.features(split, config.feature_set), mean=mean, std=std, device=device,
                         max_bytes=0)  # read from the memory map a chunk at a time
    mod = _head_module(config, store.dim, L, head, device)

    @torch.no_grad()
    def produce():
        pos = 0
        for x in store.chunks(rows=rows):
            yield pos, mean_probability_logits(mod(x)).float()[None]
            pos += len(x)

    return ScoreView(produce, (1, bundle.size(split), L))


def _head_module(config: TrainConfig, dim: int, n_labels: int, head: dict, device):
    G = next(iter(head.values())).shape[0]
    with torch.device(device):  # every tensor on the run's device, none on a default device
        mod = build_head(config.head, dim, n_labels, [torch.Generator(device="cpu").manual_seed(0)] * G,
                         hidden=config.hidden)
    mod.load_state_dict(head)
    return mod


def _split_logits(bundle, split: str, config: TrainConfig, head: dict, mean, std, device) -> np.ndarray:
    store = FeatureStore(bundle.features(split, config.feature_set), mean=mean, std=std, device=device,
                         max_bytes=None if config.max_memory_mb is None else config.max_memory_mb * 2 ** 20)
    mod = _head_module(config, store.dim, bundle.n_labels, head, device)
    with torch.no_grad():
        return torch.cat([mod(x).cpu() for x in store.chunks()], 1).numpy()


def _within_state_budget(candidates, parts, n_members: int, log=None) -> tuple[tuple, list]:
    """The members whose declared per-entry state (:meth:`~spmlkit.methods.base.Method.state_bytes`)
    fits the budget for ``n_members`` stacked runs on this data, and the dropped ones with
    the reason (written to the result's notes and, with ``log``, said): ``auto`` runs at any
    number of labels, with the members that can (issue 32)."""
    import warnings

    from ..methods.base import TrainContext, build_method, state_budget_bytes

    budget = state_budget_bytes(parts.device)
    ctx = TrainContext(n_train=len(parts.observed), n_labels=parts.observed.shape[1], observed=parts.observed,
                       n_members=n_members, device=parts.device)
    kept, dropped = [], []
    for name in candidates:
        need = build_method(name).state_bytes(ctx)
        if need > budget:
            reason = (f"its per-entry state needs {need / 2 ** 30:.1f} GiB for {n_members} runs x "
                      f"{ctx.n_train:,} examples x {ctx.n_labels:,} labels, over the {budget / 2 ** 30:.1f} GiB "
                      "budget (SPML_STATE_BUDGET_MB)")
            dropped.append({"method": name, "reason": reason})
            msg = f"auto: member {name!r} dropped: {reason}"
            log(msg) if log is not None else warnings.warn(msg, stacklevel=3)
        else:
            kept.append(name)
    if not kept:
        raise ConfigError("no member of the recipe fits the per-entry state budget on this data: "
                          + "; ".join(f"{d['method']}: {d['reason']}" for d in dropped))
    return tuple(kept), dropped


def train_recipe(bundle, config: TrainConfig, method, *, lrs: list[float], seeds: list[int],
                 run_dir: str | Path | None = None, resume: bool = True, on_epoch=None,
                 keep_state: bool = False, device=None, callbacks=()) -> list:
    """Train the recipe ``method`` once per member ``(lr, seed)`` of the caller (the
    recipe searches its own learning rates, so the caller's ``lr`` is recorded and not
    used); results in member order, like :func:`spmlkit.training.linear.train_linear`.
    ``callbacks`` / ``on_epoch`` hear each member method's epochs, tagged with ``member``
    and ``member_index``."""
    t_start = time.perf_counter()
    if config.setting == "finetune":
        raise ConfigError(f"method {method.name!r} is a recipe of the linear setting (it trains several heads on "
                          "cached features); for fine-tuning name one method")
    if bundle.size("val") == 0:
        raise ConfigError(f"method {method.name!r} chooses each member's learning rate on held-out observations; "
                          "this data has no validation split (prepare it with --val-fraction > 0, or give "
                          "SPMLClassifier validation_data)")
    Z_val = as_sparse(bundle.selection_observations("val", training_regime(method, config)), dtype=np.int8)
    if not Z_val.count(1):  # (the members' evaluator would suggest --selection last, which auto refuses)
        raise ConfigError("the validation split has no observed positive, so the recipe cannot compare "
                          "learning rates; prepare the bundle again with a larger --val-fraction")
    selection, evaluate, candidates = recipe_selection(bundle, method, Z_val)
    if config.selection not in ("auto", selection):
        raise ConfigError(f"method {method.name!r} selects with {selection} only (observed labels) on this data; "
                          f"--selection {config.selection} is not used by it — leave --selection at auto")
    # the splits the combined runs are scored on, as every run assembles them (training/prepare.py)
    parts = prepare_run(bundle, config.replace(selection=selection), method=method, device=device)
    unique_seeds = list(dict.fromkeys(int(s) for s in seeds))
    m_lrs = [lr for lr in method.candidate_lrs for _ in unique_seeds]
    m_seeds = [s for _ in method.candidate_lrs for s in unique_seeds]
    candidates, dropped = _within_state_budget(candidates, parts, len(m_lrs), log=getattr(method, "log", None))
    runs: dict[str, list] = {}
    callbacks = [*callbacks, *([EpochFunction(on_epoch)] if on_epoch is not None else [])]
    if run_dir is not None and distributed.context().is_main:  # the members' folders: inside one spmlkit made
        from .. import ownership

        ownership.folder(run_dir, "run")
    for i, name in enumerate(candidates):
        cfg = config.replace(method=name, params=(), selection=selection)
        sub_dir = None if run_dir is None else Path(run_dir) / "members" / name
        member = tagged(callbacks, info={"member": f"{name} ({i + 1}/{len(candidates)})", "member_index": i})
        runs[name] = train_linear(bundle, cfg, lrs=m_lrs, seeds=m_seeds, run_dir=sub_dir, resume=resume,
                                  callbacks=member, keep_state=True, device=parts.device)
    first = runs[candidates[0]][0].state
    mean, std = first["mean"], first["std"]
    Y_test, Z_test, Y_train = parts.Y_test, parts.Z_test, parts.Y_train
    by_seed = {}  # seed -> the combined run's fields (computed once, whatever the caller's lrs)
    for s in unique_seeds:
        chosen = [max((r for r in runs[name] if r.seed == s), key=_score) for name in candidates]
        if method.combine == "select":
            chosen = [max(chosen, key=_score)]
        head = _stack([r.state["head"] for r in chosen])
        notes = {"members": [{"method": r.method, "lr": r.lr, "best_epoch": r.best_epoch,
                              f"val_{selection}": r.val_score} for r in chosen], "combine": method.combine}
        if dropped:
            notes["dropped"] = dropped
        if all(r.state["val_logits"] is not None and r.state["test_logits"] is not None for r in chosen):
            val_logits = _combine([r.state["val_logits"] for r in chosen])
            test_logits = _combine([r.state["test_logits"] for r in chosen])
            train_logits = None if Y_train is None else \
                _combine(list(_training_logits(bundle, config, head, mean, std, parts.device)))
            scored = split_scores(test_logits, train_logits, Y_test=Y_test, Z_test=Z_test, Y_train=Y_train,
                                  empty=config.empty_classes, test_mask=parts.test_mask)
            val_score = evaluate(torch.as_tensor(val_logits, device="cpu")[None])[0]
        else:  # too large to hold: the combined model streams its scores (issue 32)
            from .linear import streamed_split_scores

            view = {sp: _combined_view(bundle, sp, config, head, mean, std, parts.device)
                    for sp in ("val", "test", "train") if bundle.size(sp)}
            val_logits = test_logits = None
            val_score = evaluate(view["val"])[0]
            scored = streamed_split_scores(view.get("test"), view["train"] if Y_train is not None else None,
                                           Y_test=Y_test, Z_test=Z_test, Y_train=Y_train,
                                           empty=config.empty_classes, test_mask=parts.test_mask)[0]
        by_seed[s] = dict(
            best_epoch=max(r.best_epoch for r in chosen), epochs_run=max(r.epochs_run for r in chosen),
            val_score=val_score, notes=notes, **scored,
            state={"head": head, "members": len(chosen), "method": {}, "mean": mean, "std": std,
                   "val_logits": val_logits, "test_logits": test_logits})
    results = []
    for lr, s in zip(lrs, seeds):
        fields = dict(by_seed[int(s)])
        state = fields.pop("state")
        results.append(RunResult(
            method=config.method, params=dict(method.params), lr=lr, batch_size=config.batch_size, seed=int(s),
            selection=selection, val_history=[], seconds=time.perf_counter() - t_start,
            expected_positives=config.expected_positives, state=state if keep_state else None, **fields))
    return results
