"""Training a recipe (:class:`spmlkit.methods.recipe.Recipe`, e.g. ``auto``).

1. Every member ``(method, head)`` trains at every learning rate of the recipe with the
   caller's seeds, batch size and epochs (one stacked model per member); each run keeps
   its best epoch by the recipe's criterion on the validation observations —
   ``observed_map``, or ``target_group_auc`` on presence-only data (background rows),
   where the recipe's presence members and head are used (:func:`recipe_selection`).
2. Per seed and member, the learning rate with the best criterion is kept (a run whose
   score is NaN never wins).  When that run's best epoch is its last one, the member
   trains again at that rate for ``recipe.longer`` × the epochs; the longer run replaces
   it when its criterion is higher.
3. Per seed, the members are weighed by ``recipe.combine`` on the validation
   observations (:func:`spmlkit.training.ensemble.weigh`, seeded by the seed), and the
   prediction is the weighted mean of the members' probabilities.

Nothing here reads a full label except the final test and training-set scores, which are
reported, never used (a test hides every full label and gets identical choices).

The combined model is a stacked head (:mod:`spmlkit.models.heads`) with one member per
chosen run of positive weight — members of several head kinds (linear and MLP) side by
side as :class:`~spmlkit.models.heads.MixedHeads`, whose kinds ``member_heads`` lists —
its result state has ``members`` (that count) and ``member_weights``, and a saved model
predicts the weighted mean of the members' probabilities
(:class:`spmlkit.practitioner.saved.SavedModel`).
"""
from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from .. import metrics, ownership
from ..config import TrainConfig
from ..errors import ConfigError
from ..methods.base import TrainContext, build_method, state_budget_bytes
from ..models.heads import MixedHeads, build_head
from ..models.trees import stack_member_states
from ..sparse_labels import as_sparse
from . import budget as budgeting, distributed
from .callbacks import EpochFunction, tagged
from .ensemble import SELECTION_ENTRIES, observed_map, selection_subsample, weigh
from .linear import FeatureStore, split_scores, streamed_split_scores, train_linear
from .trees import train_trees, working_bytes
from .validation import validation_rows
from .prepare import make_evaluator, n_background, prepare_run, training_regime
from .result import RunResult
from .scores import ScoreView


def backbone_features(bundle, config: TrainConfig) -> bool:
    """True when the run trains on a backbone's cached image features (an images bundle, a
    named feature set, or a feature table the dataset declares a backbone's:
    ``meta.json["feature_source"]``), False on tabular data (the data's own feature columns)."""
    return (getattr(bundle, "kind", "features") == "images" or config.feature_set is not None
            or bool((getattr(bundle, "meta", None) or {}).get("feature_source")))


def recipe_members(bundle, recipe, config: TrainConfig | None = None) -> tuple:
    """The recipe's members ``((method, head), ...)`` on ``bundle``: its presence-only
    members on data with background rows, else its members (without the ``:mlp`` ones on a
    backbone's image features, unless the recipe says otherwise)."""
    backbone = config is not None and backbone_features(bundle, config)
    return recipe.members_for(n_background(bundle) > 0, backbone, n_labels=getattr(bundle, "n_labels", None))


def recipe_selection(bundle, recipe, Z_val: np.ndarray, config: TrainConfig | None = None):
    """The recipe's criterion name, its evaluator on ``Z_val``, its scoring function
    ``criterion(Z_rows, P_rows)`` and its members ``((method, head), ...)`` for ``bundle``:
    ``observed_map`` and ``recipe.members`` (observed labels only: no full label is ever
    read); on presence-only data (background rows) ``target_group_auc`` (``background_auc``
    when validation holds one species only) and the recipe's presence members."""
    background = n_background(bundle) > 0
    selection, evaluate = make_evaluator("auto", Y_val=None, Z_val=Z_val, background=background)
    criterion = {"observed_map": metrics.observed_positive_map, "target_group_auc": metrics.presence_target_group_auc,
                 "background_auc": metrics.presence_background_auc}[selection]
    return selection, evaluate, criterion, recipe_members(bundle, recipe, config)


def mean_probability_logits(logits: torch.Tensor, weights=None) -> torch.Tensor:
    """``(G, N, L)`` member logits -> ``(N, L)`` logit of the members' (weighted) mean
    probability; ``weights`` ``(G,)`` (None: equal).

    >>> import torch
    >>> x = torch.tensor([[[0.0, 2.0]], [[0.0, -2.0]]])  # two members, one example, two labels
    >>> [abs(round(v, 6)) for v in mean_probability_logits(x)[0].tolist()]
    [0.0, 0.0]
    >>> round(mean_probability_logits(torch.tensor([[[1.5]]])).item(), 6)  # one member: its own logit
    1.5
    >>> round(mean_probability_logits(x, [1.0, 0.0])[0, 1].item(), 6)  # all the weight on member 0
    2.0
    """
    p = torch.sigmoid(logits.double())
    if weights is None:
        p = p.mean(0)
    else:
        w = torch.as_tensor(weights, dtype=torch.float64, device=p.device)
        p = torch.tensordot(w / w.sum(), p, dims=1)
    p = p.clamp(1e-12, 1 - 1e-12)
    return torch.log(p) - torch.log1p(-p)


def _stack(states: list[dict]) -> dict:
    if "booster" in states[0]:  # tree members: byte strings of their own lengths (spmlkit.training.trees)
        return stack_member_states(states)
    return {k: torch.stack([torch.as_tensor(s[k], device="cpu") for s in states]) for k in states[0]}


def _combine(logits: list[np.ndarray], weights=None) -> np.ndarray:
    """The members' ``(N, L)`` logits -> the logit of their weighted mean probability (float32)."""
    return mean_probability_logits(torch.as_tensor(np.stack(logits), device="cpu"), weights).float().numpy()


def _score(run) -> float:
    """A run's validation score for ``max`` (a run without a valid score never wins)."""
    return -math.inf if run.val_score is None or math.isnan(run.val_score) else run.val_score


def combined_head(kinds: list[str], in_features: int, out_features: int, hidden: int):
    """The module of a recipe's combined members: one stacked head, or :class:`MixedHeads`
    when ``kinds`` (one head kind per member) holds several kinds."""
    if len(set(kinds)) == 1:
        return build_head(kinds[0], in_features, out_features,
                          [torch.Generator(device="cpu").manual_seed(0)] * len(kinds), hidden=hidden)
    return MixedHeads(kinds, in_features, out_features, hidden=hidden)


def _training_logits(bundle, config: TrainConfig, head: dict, kinds: list[str], mean, std, device) -> np.ndarray:
    """``(G, N, L)`` logits of the combined ``head`` on the training features (the members'
    runs keep their validation and test logits, not the training set's)."""
    return _split_logits(bundle, "train", config, head, kinds, mean, std, device)


def _combined_view(bundle, split: str, config: TrainConfig, head: dict, kinds: list[str], weights, mean, std,
                   device):
    """The combined model's ``(1, N, L)`` logits on ``split`` (the logit of the members'
    weighted mean probability), streamed in row chunks
    (:class:`~spmlkit.training.scores.ScoreView`): used when the members' logits were too
    large to keep."""
    L = bundle.n_labels
    G = len(kinds)
    rows = max(1, (64 * 2 ** 20) // (8 * G * max(L, 1)))
    store = FeatureStore(bundle.features(split, config.feature_set), mean=mean, std=std, device=device,
                         max_bytes=0)  # read from the memory map a chunk at a time
    mod = _head_module(config, store.dim, L, head, kinds, device)

    @torch.no_grad()
    def produce():
        pos = 0
        for x in store.chunks(rows=rows):
            yield pos, mean_probability_logits(mod(x), weights).float()[None]
            pos += len(x)

    return ScoreView(produce, (1, bundle.size(split), L))


def _head_module(config: TrainConfig, dim: int, n_labels: int, head: dict, kinds: list[str], device):
    """The combined members' module (one head kind per member in ``kinds``) holding ``head``."""
    with torch.device(device):  # every tensor on the run's device, none on a default device
        mod = combined_head(kinds, dim, n_labels, config.hidden)
    mod.load_state_dict(head)
    return mod


def _split_logits(bundle, split: str, config: TrainConfig, head: dict, kinds: list[str], mean, std,
                  device) -> np.ndarray:
    store = FeatureStore(bundle.features(split, config.feature_set), mean=mean, std=std, device=device,
                         max_bytes=None if config.max_memory_mb is None else config.max_memory_mb * 2 ** 20)
    mod = _head_module(config, store.dim, bundle.n_labels, head, kinds, device)
    with torch.no_grad():
        return torch.cat([mod(x).cpu() for x in store.chunks()], 1).numpy()


def _stacked_heads(runs, kinds: list[str]) -> dict:
    """The state of the combined head of ``runs`` (one head kind per run in ``kinds``, each
    kind's runs together): one stacked head, or :class:`MixedHeads`' per-kind prefixes."""
    if len(set(kinds)) == 1:
        return _stack([r.state["head"] for r in runs])
    return {f"{k}.{key}": v for k in dict.fromkeys(kinds)
            for key, v in _stack([r.state["head"] for r, kk in zip(runs, kinds) if kk == k]).items()}


def _probabilities(runs, logits) -> np.ndarray:
    """``(M, n, L)`` float64 probabilities of each run's logits (NaN for a run without a
    valid score: it never gets weight)."""
    return np.stack([1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64))) if math.isfinite(_score(r))
                     else np.full(np.shape(x), np.nan) for r, x in zip(runs, logits)])


def _rows_logits(bundle, config: TrainConfig, runs, kinds: list[str], rows: np.ndarray, mean, std, device) -> list:
    """Each run's ``(n, L)`` validation logits on ``rows`` (sorted), from its head."""
    order = sorted(range(len(runs)), key=lambda j: list(dict.fromkeys(kinds)).index(kinds[j]))
    X = np.asarray(bundle.features("val", config.feature_set)[rows])
    store = FeatureStore(X, mean=mean, std=std, device=device, max_bytes=None)
    mod = _head_module(config, store.dim, bundle.n_labels, _stacked_heads([runs[j] for j in order],
                                                                        [kinds[j] for j in order]),
                       [kinds[j] for j in order], device)
    with torch.no_grad():
        out = torch.cat([mod(x).cpu() for x in store.chunks()], 1).numpy()
    back = [0] * len(runs)
    for pos, j in enumerate(order):
        back[j] = out[pos]
    return back


def _weigh(bundle, config: TrainConfig, recipe, runs, kinds: list[str], Z_val, criterion, seed: int, held: bool,
           mean, std, device) -> tuple[np.ndarray, dict | None]:
    """The members' weights by ``recipe.combine`` on the validation observations, and where
    they were weighed (None: every row, from the runs' kept logits).  When the whole split
    is too large for the selection (:func:`~spmlkit.training.ensemble.selection_subsample`:
    its time bound or the memory budget) or the runs did not keep their logits, the members
    are scored on a seeded subsample of the validation rows (the labels without an observed
    positive there left out: they count in no criterion of observed labels), said in one
    line and recorded: the combination rule itself never changes."""
    if len(runs) == 1 and math.isfinite(_score(runs[0])):  # (one member: nothing to weigh)
        return np.ones(1), None
    observed = criterion is metrics.observed_positive_map
    n, L = Z_val.shape
    # within the rows the members' validation scored (the validation policy, training/validation.py)
    policy = validation_rows(n, L, config)
    rows = selection_subsample(policy.take(Z_val), seed=seed, n_members=len(runs),
                               budget_bytes=state_budget_bytes(device), observed=observed)
    if policy.subsampled:
        rows = policy.rows if rows is None else policy.rows[rows]
    if held and rows is None and n * L <= SELECTION_ENTRIES:  # (as every committed table was weighed)
        P = _probabilities(runs, [r.state["val_logits"] for r in runs])
        return weigh(recipe.combine, P, np.asarray(Z_val), criterion, rounds=recipe.rounds, steps=recipe.steps,
                     seed=seed), None
    rows = np.arange(n) if rows is None else rows
    if observed:  # the observed mAP counted from the positives (ensemble.observed_map: the same quantity, fast)
        criterion = observed_map
    Z = Z_val.dense(rows)
    labels = np.flatnonzero((Z == 1).any(0)) if observed else np.arange(Z.shape[1])
    P = _probabilities(runs, [x[:, labels] for x in _rows_logits(bundle, config, runs, kinds, rows, mean, std,
                                                                  device)])
    where = {"rows": int(len(rows)), "of": n, "seed": int(seed), "labels": int(len(labels)),
             "within_validation_subsample": policy.subsampled}
    msg = (f"auto: members weighed by {recipe.combine} on {len(rows):,} of the {n:,} validation rows "
           f"(a subsample seeded by {seed}; {len(labels):,} labels{' with an observed positive' if observed else ''})"
           + (": the rows validation scores (its fixed subsample), within the selection's size and memory budget"
              if policy.subsampled else ": the whole split is over the selection's size or memory budget"))
    if len(rows) == n:
        msg = f"auto: members weighed by {recipe.combine} on the {n:,} validation rows scored again from their heads"
    log = getattr(recipe, "log", None)
    log(msg) if log is not None else warnings.warn(msg, stacklevel=3)
    return weigh(recipe.combine, P, Z[:, labels], criterion, rounds=recipe.rounds, steps=recipe.steps,
                 seed=seed), where


def _within_state_budget(candidates, parts, n_members: int, log=None) -> tuple[tuple, list]:
    """The members whose declared per-entry state (:meth:`~spmlkit.methods.base.Method.state_bytes`)
    fits the budget for ``n_members`` stacked runs on this data, and the dropped ones with
    the reason (written to the result's notes and, with ``log``, said): ``auto`` runs at any
    number of labels, with the members whose state fits."""
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


def _trees_within_budget(members, parts, n_runs: int, log=None) -> tuple[tuple, list]:
    """``members`` without the tree-head ones whose dense working arrays
    (:func:`~spmlkit.training.trees.working_bytes`, one per seed) do not fit the state
    budget, and those dropped with the reason (said, and written to the notes as the
    per-entry state's drops are): at 100,000 x 10,000 a tree member would need 37 GiB."""
    budget = state_budget_bytes(parts.device)
    n, L = len(parts.observed), parts.observed.shape[1]
    need = working_bytes(n, L, n_runs)
    if need <= budget or not any(h == "tree" for _, h in members):
        return tuple(members), []
    reason = (f"a tree head holds dense gradients of {need / 2 ** 30:.1f} GiB for {n_runs} run(s) x {n:,} examples x "
              f"{L:,} labels, over the {budget / 2 ** 30:.1f} GiB budget (SPML_STATE_BUDGET_MB)")
    dropped = [{"method": f"{name}:tree", "reason": reason} for name, h in members if h == "tree"]
    for d in dropped:
        msg = f"auto: member {d['method']!r} dropped: {reason}"
        log(msg) if log is not None else warnings.warn(msg, stacklevel=3)
    return tuple((name, h) for name, h in members if h != "tree"), dropped


def _after_longer_try(recipe, plan, best, cfg: TrainConfig, train_one):
    """``best``, or its longer try when that scores higher: a chosen run that peaked at its
    last epoch trains again at its learning rate for ``recipe.longer`` × the epochs
    (``train_one(config, lr)``); never at scale (the cost budget, :mod:`.budget`)."""
    if not (recipe.longer > 1 and not plan.active and math.isfinite(_score(best))
            and best.best_epoch == best.epochs_run == cfg.epochs):
        return best
    longer = train_one(cfg.replace(epochs=cfg.epochs * recipe.longer), best.lr)
    longer.notes = {"longer_from": best.epochs_run}
    return longer if _score(longer) > _score(best) else best


def _members_within_budgets(bundle, config: TrainConfig, recipe, members, parts, n_runs: int,
                            n_seeds: int) -> tuple[tuple, list, budgeting.BudgetPlan]:
    """The members that train — within the memory budget (per-entry state of ``n_runs``
    stacked runs, a tree head's dense arrays per seed) and, at scale, the cost budget — the
    dropped ones with their reasons, and the cost plan."""
    log = getattr(recipe, "log", None)
    fits, dropped = _within_state_budget(list(dict.fromkeys(name for name, _ in members)), parts, n_runs, log=log)
    members = tuple((name, h) for name, h in members if name in fits)
    members, tree_dropped = _trees_within_budget(members, parts, n_seeds, log=log)
    plan = _cost_plan(bundle, config, recipe, members, parts)
    return plan.members, [*dropped, *tree_dropped, *plan.dropped], plan


def _cost_plan(bundle, config: TrainConfig, recipe, members, parts) -> budgeting.BudgetPlan:
    """The members within the recipe's cost budget at this size (:func:`spmlkit.training.budget.plan`;
    below ``recipe.budget_from`` training entries: every member, nothing changed), said in
    one line each when the budget applies."""
    dim = int(bundle.features("train", config.feature_set).shape[-1])
    plan = budgeting.plan(members, n_train=len(parts.observed), n_labels=parts.observed.shape[1],
                          epochs=config.epochs, n_lrs=len(recipe.lrs), in_features=dim, hidden=config.hidden,
                          budget=recipe.budget, budget_from=recipe.budget_from)
    if plan.active:
        log = getattr(recipe, "log", None)
        lines = [f"auto: at {len(parts.observed):,} x {parts.observed.shape[1]:,} training entries the members train "
                 f"within {plan.budget_epochs:g} epochs of one run (method param budget={recipe.budget:g} runs): "
                 f"each member's learning rates {', '.join(f'{lr:g}' for lr in recipe.lrs)} train one epoch and "
                 "the best goes on (successive halving); no longer try",
                 *(f"auto: member {d['method']!r} dropped: {d['reason']}" for d in plan.dropped)]
        for line in lines:
            log(line) if log is not None else warnings.warn(line, stacklevel=3)
    return plan


def _validation_observations(bundle, config: TrainConfig, recipe):
    """The validation observations the recipe chooses on (sparse int8), after refusing what
    it cannot run: fine-tuning, data without a validation split, a split without an
    observed positive."""
    if config.setting == "finetune":
        raise ConfigError(f"method {recipe.name!r} is a recipe of the linear setting (it trains several heads on "
                          "cached features); for fine-tuning name one method")
    if bundle.size("val") == 0:
        raise ConfigError(f"method {recipe.name!r} chooses each member's learning rate on held-out observations; "
                          "this data has no validation split (prepare it with --val-fraction > 0, or give "
                          "SPMLClassifier validation_data)")
    Z_val = as_sparse(bundle.selection_observations("val", training_regime(recipe, config)), dtype=np.int8)
    if not Z_val.count(1):  # (the members' evaluator would suggest --selection last, which auto refuses)
        raise ConfigError("the validation split has no observed positive, so the recipe cannot compare "
                          "learning rates; prepare the bundle again with a larger --val-fraction")
    return Z_val


def _combined_scores(bundle, base: TrainConfig, parts, kept, kinds, head_state, w, mean, std, evaluate,
                     held: bool) -> tuple:
    """``(val_logits, test_logits, val_score, scored)`` of the combined model (the kept
    members weighed by ``w``): from the members' kept logits when they were held, else
    streamed from the combined heads (logits None)."""
    Y_test, Z_test, Y_train = parts.Y_test, parts.Z_test, parts.Y_train
    if held:
        val_logits = _combine([r.state["val_logits"] for r in kept], w)
        test_logits = _combine([r.state["test_logits"] for r in kept], w)
        train_logits = None
        if Y_train is not None:
            member_train = _training_logits(bundle, base, head_state, kinds, mean, std, parts.device)
            train_logits = _combine(list(member_train), w)
        scored = split_scores(test_logits, train_logits, Y_test=Y_test, Z_test=Z_test, Y_train=Y_train,
                              empty=base.empty_classes, test_mask=parts.test_mask)
        val_score = evaluate(torch.as_tensor(val_logits, device="cpu")[None])[0]
        return val_logits, test_logits, val_score, scored
    # too large to hold: the combined model streams its scores
    view = {sp: _combined_view(bundle, sp, base, head_state, kinds, w, mean, std, parts.device)
            for sp in ("val", "test", "train") if bundle.size(sp)}
    val_score = evaluate(view["val"])[0]
    scored = streamed_split_scores(view.get("test"), view["train"] if Y_train is not None else None,
                                   Y_test=Y_test, Z_test=Z_test, Y_train=Y_train,
                                   empty=base.empty_classes, test_mask=parts.test_mask)[0]
    return None, None, val_score, scored


def train_recipe(bundle, config: TrainConfig, recipe, *, lrs: list[float], seeds: list[int],
                 run_dir: str | Path | None = None, resume: bool = True, on_epoch=None,
                 keep_state: bool = False, device=None, callbacks=()) -> list:
    """Train the recipe once per member ``(lr, seed)`` of the caller (the recipe searches
    its own learning rates, so the caller's ``lr`` is recorded and not used); results in
    member order, like :func:`spmlkit.training.linear.train_linear`.  ``callbacks`` /
    ``on_epoch`` hear each member method's epochs, tagged with ``member`` and
    ``member_index``."""
    t_start = time.perf_counter()
    Z_val = _validation_observations(bundle, config, recipe)
    selection, evaluate, criterion, members = recipe_selection(bundle, recipe, Z_val, config)
    if config.selection not in ("auto", selection):
        raise ConfigError(f"method {recipe.name!r} selects with {selection} only (observed labels) on this data; "
                          f"--selection {config.selection} is not used by it — leave --selection at auto")
    members = tuple((name, h or config.head) for name, h in members)
    base = config.replace(selection=selection)
    # the splits the combined runs are scored on, as every run assembles them (training/prepare.py)
    parts = prepare_run(bundle, base, method=recipe, device=device)
    unique_seeds = list(dict.fromkeys(int(s) for s in seeds))
    m_lrs = [lr for lr in recipe.lrs for _ in unique_seeds]
    m_seeds = [s for _ in recipe.lrs for s in unique_seeds]
    members, dropped, plan = _members_within_budgets(bundle, base, recipe, members, parts, len(m_lrs),
                                                     len(unique_seeds))
    callbacks = [*callbacks, *([EpochFunction(on_epoch)] if on_epoch is not None else [])]
    if run_dir is not None and distributed.context().is_main:  # the members' folders: inside one spmlkit made
        ownership.folder(run_dir, "run")

    def run_member(i, name, cfg, lrs_, seeds_, tag=""):
        sub_dir = None if run_dir is None else Path(run_dir) / "members" / (name + tag)

        member = tagged(callbacks, info={"member": f"{name}{tag} ({i + 1}/{len(members)})", "member_index": i,
                                         "member_count": len(members), "member_epochs": cfg.epochs})
        train = train_trees if cfg.head == "tree" else train_linear  # (a tree member: boosting rounds)
        if plan.active and cfg.head != "tree" and len(lrs_) > 1:  # (at scale: lrs by successive halving)
            member = [*member, budgeting.LearningRateHalving(at=1)]
        return train(bundle, cfg, lrs=lrs_, seeds=seeds_, run_dir=sub_dir, resume=resume,
                     callbacks=member, keep_state=True, device=parts.device)

    patience = config.patience if config.patience is not None else recipe.patience  # (the run's own first)
    chosen: dict = {s: [] for s in unique_seeds}  # seed -> the chosen run of every member, in member order
    labels = []  # each member's name in notes, logs and RUN/members/ (method, or method-head off the run's head)
    for i, (name, head) in enumerate(members):
        cfg = base.replace(method=name, params=(), head=head, patience=patience)
        label = name if head == config.head else f"{name}-{head}"  # (a name loggers accept: no ':')
        labels.append(label)
        runs = run_member(i, label, cfg, m_lrs, m_seeds)
        for s in unique_seeds:
            best = max((r for r in runs if r.seed == s), key=_score)
            chosen[s].append(_after_longer_try(recipe, plan, best, cfg, lambda c, lr: run_member(
                i, label, c, [lr], [s], tag=f"-x{recipe.longer}-lr{lr:g}-s{s}")[0]))
    first = chosen[unique_seeds[0]][0].state
    mean, std = first["mean"], first["std"]
    kinds_order = list(dict.fromkeys(h for _, h in members))
    by_seed = {}  # seed -> the combined run's fields (computed once, whatever the caller's lrs)
    for s in unique_seeds:
        runs = chosen[s]
        # the members' validation and test logits, unless they were too large to keep
        held = all(r.state["val_logits"] is not None and r.state["test_logits"] is not None for r in runs)
        weights, weighed_on = _weigh(bundle, base, recipe, runs, [h for _, h in members], Z_val, criterion, s,
                                     held, mean, std, parts.device)
        # the members of positive weight, each head kind's members together (they stack)
        keep = sorted((j for j in range(len(runs)) if weights[j] > 0), key=lambda j: kinds_order.index(members[j][1]))
        kept, w = [runs[j] for j in keep], [float(weights[j]) for j in keep]
        kinds = [members[j][1] for j in keep]
        head_state = _stacked_heads(kept, kinds)
        notes = {"members": [{"method": r.method, "label": labels[j], "head": members[j][1], "lr": r.lr,
                              "best_epoch": r.best_epoch, "epochs_run": r.epochs_run, f"val_{selection}": r.val_score,
                              "weight": float(weights[j]), **(getattr(r, "notes", None) or {})}
                             for j, r in enumerate(runs)],  # (a longer try: "longer_from", the first run's epochs)
                 "patience": patience, "combine": recipe.combine}
        if weighed_on is not None:
            notes["weighed_on"] = weighed_on
        if plan.active:
            notes["budget"] = plan.notes()
        if dropped:
            notes["dropped"] = dropped
        val_logits, test_logits, val_score, scored = _combined_scores(bundle, base, parts, kept, kinds, head_state, w,
                                                                      mean, std, evaluate, held)
        by_seed[s] = dict(
            best_epoch=max(r.best_epoch for r in kept), epochs_run=max(r.epochs_run for r in kept),
            val_score=val_score, notes=notes, **scored,
            # (one member kept: its own head, unstacked, as a single run's — a saved model reads its width there)
            state={"head": {k: v[0] for k, v in head_state.items()} if len(kept) == 1 else head_state,
                   "members": len(kept), "member_weights": w, "method": {}, "mean": mean,
                   "std": std, "val_logits": val_logits, "test_logits": test_logits,
                   **({"member_heads": kinds, "head_kind": "mixed"} if len(set(kinds)) > 1 else {"head_kind": kinds[0]})})
    results = []
    for lr, s in zip(lrs, seeds):
        fields = dict(by_seed[int(s)])
        state = fields.pop("state")
        results.append(RunResult(
            method=config.method, params=dict(recipe.params), lr=lr, batch_size=config.batch_size, seed=int(s),
            selection=selection, val_history=[], seconds=time.perf_counter() - t_start,
            expected_positives=config.expected_positives, state=state if keep_state else None, **fields))
    return results
