"""Cole et al.'s analyses (spmlkit.experiments.analyses.cole, issue 18): the ROLE
estimator and the k sensitivity, on tiny data, checking the numbers."""
from __future__ import annotations

import json

import numpy as np
import pytest

from spmlkit.experiments.analyses import linear_setup
from spmlkit.experiments.analyses.cole import estimator_precision_recall, k_budget
from tests.helpers.analyses import read_csv as _csv
from tests.helpers.analyses import run_quiet as _run


# --------------------------------------------------------------------------- Cole
def test_estimator_precision_recall_hand_case():
    P = np.array([[.9, .8, .1, .3], [.2, .7, .6, .65], [.55, .4, .1, .05]])
    Z = np.array([[1, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]])
    Y = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 0, 0]], bool)
    # unobserved entries ranked: .8(T) .7(F) .65(T) .6(T) .55(T) .3 .2 .1 .1 .05 -> 4 true positives
    r = estimator_precision_recall(P, Z, Y, budget=3)
    assert r["unobserved"] == 10 and r["unobserved_positives"] == 4
    assert r["top_precision"] == pytest.approx(2 / 3) and r["top_recall"] == pytest.approx(2 / 4)
    assert r["threshold_predicted"] == 5 and r["threshold_precision"] == pytest.approx(4 / 5)
    assert r["threshold_recall"] == 1.0
    assert r["r_precision"] == pytest.approx(3 / 4)  # top 4: .8 .7 .65 .6 -> 3 true
    assert estimator_precision_recall(P, Z, Y, budget=3, threshold=0.99)["threshold_precision"] != \
        estimator_precision_recall(P, Z, Y, budget=3, threshold=0.99)["threshold_precision"]  # nan: none predicted
    assert k_budget(2.0, Z) == 3 * 2 - 2


def test_role_estimator_epoch_zero_is_the_initialisation(toy_bundle, tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.methods.role import LabelEstimator

    s = _run("cole-role-estimator", source=str(toy_bundle.path), out=str(tmp_path / "out"), epochs=2, seeds=2, batch_size=16,
             threads=1)
    Y = np.asarray(toy_bundle.labels("train"), bool)
    Z = np.asarray(toy_bundle.observations("train"))
    k = Y.sum(1).mean()
    assert s["k"] == pytest.approx(k)
    assert s["budget"] == round(len(Y) * k) - int((Z == 1).sum())
    assert [(r["epoch"], r["seed"]) for r in s["rows"]] == [(e, g) for e in range(3) for g in (0, 1)]
    # epoch 0 = Cole §6.1's initialisation, rebuilt independently
    setup = linear_setup(toy_bundle, TrainConfig(method="role", epochs=2, batch_size=16), [0, 1])
    est = setup.method.component(LabelEstimator)
    for g in (0, 1):
        ref = estimator_precision_recall(est.probabilities(g), Z, Y, budget=s["budget"])
        assert s["rows"][g]["top_precision"] == pytest.approx(ref["top_precision"])
        assert s["rows"][g]["threshold_recall"] == pytest.approx(ref["threshold_recall"], nan_ok=True)
    rows = _csv(tmp_path / "out" / "role-estimator.csv")
    assert len(rows) == 6 and float(rows[-1]["top_recall"]) == pytest.approx(s["rows"][-1]["top_recall"])
    assert (tmp_path / "out" / "role-estimator.png").stat().st_size > 1000


def test_k_sensitivity_uses_factor_times_k_and_matches_train_linear(toy_bundle, tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.training import train_linear

    s = _run("cole-k-sensitivity", source=str(toy_bundle.path), out=str(tmp_path / "out"), methods=["epr"],
             factors=[0.5, 2.0], epochs=2, seeds=1, batch_size=16, threads=1)
    k = np.asarray(toy_bundle.labels("train"), bool).sum(1).mean()
    assert s["k_hat"] == pytest.approx(k)
    rows = _csv(tmp_path / "out" / "k-sensitivity.csv")
    assert [float(r["k"]) for r in rows] == pytest.approx([0.5 * k, 2 * k])
    (direct,) = train_linear(toy_bundle, TrainConfig(method="epr", epochs=2, batch_size=16, expected_positives=2 * k))
    assert float(rows[1]["test_map"]) == pytest.approx(direct.test_map)
    assert s["methods"]["epr"][1]["mean"] == pytest.approx(direct.test_map)
    assert json.loads((tmp_path / "out" / "k-sensitivity.json").read_text())["k_hat"] == pytest.approx(k)
