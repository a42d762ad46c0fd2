"""Zhou et al.'s analyses (spmlkit.experiments.analyses.zhou, issue 18): the observed
positives' loss and the loss landscape, on tiny data, checking the numbers."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from spmlkit.experiments.analyses import linear_setup
from spmlkit.experiments.analyses.zhou import (
    filter_normalized_direction,
    landscape_slices,
    observed_positive_loss,
)
from tests.helpers.analyses import read_csv as _csv
from tests.helpers.analyses import run_quiet as _run


# --------------------------------------------------------------------------- Zhou
def test_observed_positive_loss_hand_values():
    logits = np.array([[[0.0, 2.0], [-1.0, 3.0]]])
    Z = np.array([[1, 0], [1, 1]])
    expect = (math.log(2) + math.log1p(math.exp(1)) + math.log1p(math.exp(-3))) / 3
    assert observed_positive_loss(logits, Z)[0] == pytest.approx(expect)


def test_positive_loss_epoch_zero_is_the_initial_head(toy_bundle, tmp_path):
    from spmlkit.models.heads import build_head
    from spmlkit.training.linear import feature_statistics

    s = _run("zhou-positive-loss", source=str(toy_bundle.path), out=str(tmp_path / "out"), methods=["an", "em"],
             seeds=1, epochs=3, batch_size=16, threads=1)
    X = np.asarray(toy_bundle.features("train"), np.float32)
    mean, std = feature_statistics(X)
    head = build_head("linear", X.shape[1], toy_bundle.n_labels, [torch.Generator().manual_seed(0)])
    with torch.no_grad():
        logits = head(torch.from_numpy((X - mean) / std)).numpy()
    Z = np.asarray(toy_bundle.observations("train"))
    expect = float(np.mean(np.log1p(np.exp(-logits[0][Z == 1]))))
    first = {r["method"]: r["positive_loss"] for r in s["rows"] if r["epoch"] == 0}
    assert first["an"] == pytest.approx(expect, rel=1e-5) and first["em"] == pytest.approx(expect, rel=1e-5)
    assert len(s["rows"]) == 2 * 4 and s["alpha"] == 1.0
    assert len(_csv(tmp_path / "out" / "positive-loss.csv")) == 8


def test_filter_normalized_direction_matches_filter_norms():
    w = torch.randn(1, 5, 3)
    params = {"weight": w, "bias": torch.randn(1, 1, 3)}
    d = filter_normalized_direction(params, torch.Generator().manual_seed(0))
    assert torch.allclose(d["weight"].norm(dim=1), w.norm(dim=1))
    assert torch.count_nonzero(d["bias"]) == 0


def test_landscape_slices_of_a_quadratic():
    theta = {"w": torch.tensor([1.0, 2.0])}
    d1, d2 = {"w": torch.tensor([1.0, 0.0])}, {"w": torch.tensor([0.0, 1.0])}
    s = landscape_slices(lambda p: float((p["w"] ** 2).sum()), theta, d1, d2, radius=1.0, steps_1d=5, steps_2d=3)
    assert s["loss_1d"] == pytest.approx([(1 + a) ** 2 + 4 for a in (-1, -.5, 0, .5, 1)])
    assert s["loss_2d"][2, 0] == pytest.approx(0 + 9)  # a = -1, b = +1


def test_landscape_origin_equals_trained_loss(toy_bundle, tmp_path):
    from spmlkit.config import TrainConfig

    s = _run("zhou-landscape", source=str(toy_bundle.path), out=str(tmp_path / "out"), methods=["an", "em-apl"],
             epochs=3, batch_size=16, steps_1d=5, steps_2d=3, radius=0.5, threads=1)
    for m in ("an", "em-apl"):
        r = s["methods"][m]
        assert r["loss_1d"][2] == pytest.approx(r["trained_loss"])
        assert r["loss_2d"][1][1] == pytest.approx(r["trained_loss"])
    # AN's trained loss is the mean BCE against "observed positive = 1, else 0" at the trained weights
    setup = linear_setup(toy_bundle, TrainConfig(method="an", epochs=3, batch_size=16), [0])
    setup.fit()
    with torch.no_grad():
        logits = setup.learner.model(setup.train_inputs())[0]
    target = torch.from_numpy((np.asarray(toy_bundle.observations("train")) == 1).astype(np.float32))
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, target).item()
    assert s["methods"]["an"]["trained_loss"] == pytest.approx(bce, rel=1e-5)
    with np.load(tmp_path / "out" / "landscape.npz") as z:
        assert z["an_loss_2d"].shape == (3, 3)
