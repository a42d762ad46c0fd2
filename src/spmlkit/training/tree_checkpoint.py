"""Checkpoints of a tree run (``--head tree``): ``run_dir/last.pt`` holds every seed
whose booster is finished, so a killed run resumes after its last finished seed and gives
the same model as an uninterrupted one.

**Why per seed, not per round.**  XGBoost continues training from a saved booster, but its
row and column sampling (``subsample`` and ``colsample_bytree``, 0.8 each here) draw from
generators that the saved model does not hold: a booster saved after round 8, loaded and
trained to round 20 gave margins up to 0.56 away from the uninterrupted 20 rounds on a
200 x 10 problem (also with ``seed_per_iteration``), and identical ones only without
sampling (XGBoost 3.2, checked 2026-12-06).  A seed's rounds are therefore trained in one
go, and the checkpoint is written after each seed: a seed killed mid-way is trained again
from its first round, which its seed makes exact.

The file is the training loop's checkpoint (:mod:`spmlkit.training.checkpoint`: atomic,
checksummed, read without unpickling) with the schema every ``last.pt`` has, so the run
folder recognises, checks and cleans it like a linear run's: ``epoch`` is the number of
finished seeds, ``learner`` = ``{"kind": "tree", "seeds": {seed: state}}``, a seed's state
being its booster (:func:`spmlkit.models.trees.booster_to_tensor`), intercept, validation
history and best round.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .. import ownership
from ..errors import CorruptFileError
from ..models.trees import booster_from_tensor, booster_to_tensor
from .checkpoint import RESTART_ADVICE, load_run_checkpoint, save_checkpoint

NAME = "last.pt"


def seed_state(booster, icept: np.ndarray, history: list, best: int) -> dict:
    """A finished seed as checkpoint state (tensors and plain values only)."""
    return {"booster": booster_to_tensor(booster), "intercept": torch.from_numpy(np.asarray(icept, np.float32)),
            "history": [float(v) for v in history], "best": int(best)}


def restore_seed(state: dict):
    """``(booster, intercept, history, best)`` of :func:`seed_state`'s ``state``."""
    raw = state["booster"]
    return (booster_from_tensor(raw, raw.numel()), state["intercept"].numpy().astype(np.float32),
            list(state["history"]), int(state["best"]))


def save_tree_checkpoint(run_dir: str | Path, done: dict) -> None:
    """``run_dir/last.pt`` with the finished seeds ``{seed: seed_state}``."""
    ownership.folder(run_dir, "run")  # a folder spmlkit made (a run's, a bench group's, a member's)
    save_checkpoint({"epoch": len(done), "learner": {"kind": "tree", "seeds": {str(s): v for s, v in done.items()}},
                     "method": {}, "tracker": {}, "active": [], "rng": None}, Path(run_dir) / NAME)


def load_tree_checkpoint(run_dir: str | Path, seeds: list[int], n_labels: int) -> dict:
    """The finished seeds ``{seed: (booster, intercept, history, best)}`` of
    ``run_dir/last.pt`` (empty when there is none); a checkpoint that is not a tree run's
    or does not fit this run (another seed, another label count) is a one-line
    :class:`~spmlkit.errors.CorruptFileError`."""
    path = Path(run_dir) / NAME
    if not path.exists():
        return {}
    state = load_run_checkpoint(path)
    learner = state["learner"]
    if learner.get("kind") != "tree" or not isinstance(learner.get("seeds"), dict):
        raise CorruptFileError(f"{path}: not a tree run's checkpoint; {RESTART_ADVICE}")
    out = {}
    for key, st in learner["seeds"].items():
        problem = _seed_problem(key, st, seeds, n_labels)
        if problem:
            raise CorruptFileError(f"{path}: does not fit this run ({problem}); {RESTART_ADVICE}")
        try:
            out[int(key)] = restore_seed(st)
        except Exception as exc:  # noqa: BLE001 - not a byte string, or XGBoost's parser refused it
            raise CorruptFileError(f"{path}: seed {key}'s booster cannot be read "
                                   f"({str(exc).splitlines()[0][:120]}); {RESTART_ADVICE}") from None
    return out


def _seed_problem(key, st, seeds: list[int], n_labels: int) -> str | None:
    if not (isinstance(key, str) and key.lstrip("-").isdigit() and int(key) in seeds):
        return f"seed {key!r} is not one of this run's seeds {sorted(set(seeds))}"
    if not isinstance(st, dict) or any(k not in st for k in ("booster", "intercept", "history", "best")):
        return f"seed {key}'s state is incomplete"
    if not (isinstance(st["booster"], torch.Tensor) and st["booster"].dim() == 1 and st["booster"].numel() > 0):
        return f"seed {key}'s booster is not a byte tensor"
    if not (isinstance(st["intercept"], torch.Tensor) and tuple(st["intercept"].shape) == (n_labels,)):
        return f"seed {key}'s intercept does not have {n_labels} labels"
    hist, best = st["history"], st["best"]
    if not (isinstance(hist, list) and all(isinstance(v, float) for v in hist)):
        return f"seed {key}'s validation history is not a list of numbers"
    if not (isinstance(best, int) and not isinstance(best, bool) and best >= 1 and (not hist or best <= len(hist))):
        return f"seed {key}'s best round {best!r} is not a round of its run"
    return None
