"""Refit at its edges (spmlkit.practitioner.refit.refit_state): each member trains again
at the learning rate and for the epochs chosen on validation, whatever the run's own
``lr``/``epochs`` say (a recipe searched learning rates; the configuration holds the grid's
default), checked against the same training done by hand, member by member."""
from __future__ import annotations

import numpy as np

from spmlkit.config import TrainConfig
from spmlkit.data.memory import ArrayBundle
from spmlkit.practitioner import refit
from spmlkit.training.run import train


def _data(n=40, L=3, D=4):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, D)).astype(np.float32)
    Z = np.zeros((n, L), dtype=np.int8)
    Z[np.arange(n), rng.integers(0, L, n)] = 1
    return ArrayBundle(X, Z)


def _by_hand(data, m, seed):
    cfg = TrainConfig(method=m["method"], head=m["head"], lr=m["lr"], epochs=m["epochs"], seed=seed,
                      selection="last")
    (r,) = train(data, cfg, keep_state=True)
    return r.state["head"]


def test_each_member_trains_at_its_chosen_lr_and_epochs_not_the_runs():
    data = _data()
    config = TrainConfig(method="auto", lr=0.5, epochs=6, seed=2)
    members = [{"method": "an", "head": "linear", "lr": 0.01, "epochs": 2, "weight": 0.6, "params": ()},
               {"method": "wan", "head": "linear", "lr": 0.003, "epochs": 3, "weight": 0.4, "params": ()}]
    got = refit.refit_state(data, config, members)["head"]
    for i, m in enumerate(members):
        want = _by_hand(data, m, seed=2)
        for k, v in want.items():
            np.testing.assert_allclose(np.asarray(got[k][i]), np.asarray(v), rtol=1e-6, atol=1e-7)
    (one,) = members[:1]
    alone = refit.refit_state(data, config.replace(method="an"), [one])["head"]
    for k, v in _by_hand(data, one, seed=2).items():
        np.testing.assert_allclose(np.asarray(alone[k]), np.asarray(v), rtol=1e-6, atol=1e-7)
