"""Refit after selection: the run's choices, trained again on its training **and**
validation rows.

Validation is spent twice in a run: once to choose (each member's learning rate and
epoch, the members' weights), and then — unless the model is refitted — it is never
learned from.  With a hundred presence records a validation fold of a fifth is twenty
records the final model never sees.  The standard practice once the choices are made is
to train them again on every non-test row: scikit-learn's ``GridSearchCV(refit=True)``;
Hastie, Tibshirani & Friedman (2009, *The Elements of Statistical Learning*, §7.10) —
cross-validation chooses the tuning parameter, the final model is fitted to all the
data; and in species distribution modelling ENMeval (Muscarella et al. 2014; Kass et al.
2021), whose tuned MaxEnt model is the one refitted on every locality, as dismo's and
elapid's MaxEnt fit every record given them.  Early stopping's epoch carries over as in
Goodfellow, Bengio & Courville (2016, *Deep Learning*, §7.8, Algorithm 7.2: "train on
all the data for the chosen number of steps"); the book names the alternative of the
same number of passes over the data, which is the one used here: the chosen number of
**epochs** (each now over more rows), because the presence-only losses weigh each record
by the count of records (Zbinden et al. 2024), so an epoch, not a step, is the unit of
the balance the validation chose.

:func:`refit_run` reads the choices from a finished run folder (``result.json``: a
recipe's members with their method, head, learning rate, best epoch and weight; a single
method's learning rate and best epoch), trains each member of positive weight with the
run's seed at its learning rate for its best epoch on training + validation rows
(``--selection last``: nothing left to validate on), stacks them with the same weights,
and:

* keeps the model chosen on validation as ``RUN/selected_model/`` (its validation scores
  are honest: the refitted model has trained on those rows);
* saves the refitted model as ``RUN/model/`` (what ``spml predict``, ``evaluate`` and
  ``explain`` use);
* writes ``RUN/refit.json`` last (the choices and the rows used); a run folder with it is
  refitted, and is not refitted again.

Seeded: the members train with the run's seed, so the refit is reproducible.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .. import ownership
from ..config import TrainConfig
from ..data.memory import ArrayBundle
from ..errors import ConfigError
from ..io import read_json
from ..models.trees import stack_member_states
from ..sparse_labels import SparseLabels, as_sparse
from ..training.run import train
from .saved import SavedModel, load_model, save_model

REFIT_FILE = "refit.json"
SELECTED = "selected_model"


def refit_default(bundle) -> bool:
    """Whether ``spml train`` refits when the user says neither ``--refit`` nor
    ``--no-refit``: on presence-only data (background rows), where records are few and
    the field's practice is the final model on every record (module docstring); not
    elsewhere (the benchmarks' protocol scores the model chosen on validation)."""
    return bool((bundle.meta or {}).get("background_rows")) and bundle.size("val") > 0


def merged_training(bundle, feature_set: str | None = None) -> ArrayBundle:
    """The bundle's training and validation rows as one training split (training
    rows, then validation rows), no validation split, and its
    test split as it is; background rows counted as the bundle counts them."""
    X = np.concatenate([np.asarray(bundle.features(s, feature_set)) for s in ("train", "val")])
    Z = SparseLabels.vstack([as_sparse(bundle.observations(s), dtype=np.int8) for s in ("train", "val")])
    kw = {}
    if bundle.size("test"):
        kw = {"X_test": np.asarray(bundle.features("test", feature_set)), "Z_test": bundle.observations("test")}
    merged = ArrayBundle(X, Z, label_names=bundle.label_names, name=f"{bundle.name}-refit", **kw)
    merged.meta["background_rows"] = int((Z.row_counts(0) == Z.shape[1]).sum())
    return merged


def chosen_members(record: dict, config: TrainConfig) -> list[dict]:
    """The run's choices, in the order its model stacks them: ``[{"method", "head", "lr",
    "epochs", "weight", "params"}]`` — a recipe's members of positive weight (each head kind
    together, in the order the kinds first appear, as :mod:`spmlkit.training.recipe` stacks
    them), or the one method of a single run."""
    members = (record.get("notes") or {}).get("members")
    if not members:
        return [{"method": config.method, "head": config.head, "lr": float(record["lr"]),
                 "epochs": int(record["best_epoch"]), "weight": 1.0, "params": config.params}]
    kinds = list(dict.fromkeys(m["head"] for m in members))
    kept = sorted((m for m in members if float(m["weight"]) > 0), key=lambda m: kinds.index(m["head"]))
    return [{"method": m["method"], "head": m["head"], "lr": float(m["lr"]), "epochs": int(m["best_epoch"]),
             "weight": float(m["weight"]), "params": ()} for m in kept]


def _stack(states: list[dict]) -> dict:
    """Members' head states stacked along a leading member axis (tree states padded)."""
    if "booster" in states[0]:
        return stack_member_states(states)
    return {k: torch.stack([torch.as_tensor(s[k], device="cpu") for s in states]) for k in states[0]}


def _combined_state(states: list[dict], kinds: list[str]) -> dict:
    """The saved model's head state: one member's own (unstacked), one kind's stacked, or
    MixedHeads' per-kind prefixes."""
    if len(states) == 1:
        return {k: torch.as_tensor(v, device="cpu") for k, v in states[0].items()}
    if len(set(kinds)) == 1:
        return _stack(states)
    return {f"{k}.{key}": v for k in dict.fromkeys(kinds)
            for key, v in _stack([s for s, kk in zip(states, kinds) if kk == k]).items()}


def _train_member(data, config: TrainConfig, m: dict, device):
    cfg = config.replace(method=m["method"], head=m["head"], lr=m["lr"], epochs=m["epochs"], params=m["params"],
                         selection="last", patience=None)
    (result,) = train(data, cfg, keep_state=True, device=device)
    return result.state


def refit_state(data, config: TrainConfig, members: list[dict], device=None) -> dict:
    """``{"head", "mean", "std"}``: the ``members`` (:func:`chosen_members`) trained on
    ``data`` (e.g. :func:`merged_training`) and stacked as the run's model stacks them."""
    states = [_train_member(data, config, m, device) for m in members]
    return {"head": _combined_state([s["head"] for s in states], [m["head"] for m in members]),
            "mean": states[0]["mean"], "std": states[0]["std"]}


def refit_run(run_dir, bundle, config: TrainConfig, *, device=None, log=None) -> dict | None:
    """Refit the finished run ``run_dir`` (module docstring); returns what ``refit.json``
    records, or None when the run folder is refitted already (nothing trains)."""
    run_dir = Path(run_dir)
    if (run_dir / REFIT_FILE).exists():
        return None
    if bundle.size("val") == 0:
        raise ConfigError("--refit: the bundle has no validation split, so there is nothing to add to training")
    ownership.folder(run_dir, "run")  # (a finished run of spmlkit's: its folder, claimed for the files below)
    record = read_json(run_dir / "result.json")
    members = chosen_members(record, config)
    if not (run_dir / SELECTED).exists():  # first: the validated model kept before model/ is replaced
        save_model(load_model(run_dir / "model"), run_dir / SELECTED)
    selected = load_model(run_dir / SELECTED)
    data = merged_training(bundle, config.feature_set)
    if log is not None:
        log(f"refit: {len(members)} member(s) trained again on the {data.size('train'):,} training + validation rows "
            f"({bundle.size('train'):,} + {bundle.size('val'):,}) at the chosen learning rate and epoch")
    state = refit_state(data, config, members, device)
    weights = [m["weight"] for m in members]
    if selected.member_weights is not None and not np.allclose(selected.member_weights, weights):
        raise ConfigError(f"{run_dir}: result.json's member weights do not match the saved model's; retrain the run "
                          "with --no-resume")
    info = {"refit": {"rows": {"train": bundle.size("train"), "val": bundle.size("val")},
                      "members": [{k: v for k, v in m.items() if k != "params"} for m in members],
                      "selected_model": SELECTED}}
    model = SavedModel(label_names=selected.label_names, head=selected.head, hidden=selected.hidden,
                       n_features=selected.n_features, state=state["head"], mean=state["mean"], std=state["std"],
                       method=selected.method, params=selected.params,
                       config=selected.config, info={**selected.info, **info}, label_sets=selected.label_sets,
                       input=selected.input, members=selected.members, member_weights=selected.member_weights,
                       member_heads=selected.member_heads)
    save_model(model, run_dir / "model")
    ownership.write_json(run_dir / REFIT_FILE, info["refit"])  # last: the run folder is refitted
    return info["refit"]
