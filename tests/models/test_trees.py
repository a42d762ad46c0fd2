"""The tree head's module (spmlkit.models.trees): boosters kept as float tensors of their
UBJSON bytes, stacked, loaded by XGBoost's own loader and predicting their margins plus
the intercept; damaged states refused."""
from __future__ import annotations

import numpy as np
import pytest
import torch

xgb = pytest.importorskip("xgboost")

from spmlkit.models.heads import build_head  # noqa: E402
from spmlkit.models.trees import booster_from_tensor, booster_to_tensor, stack_member_states  # noqa: E402


def _booster(seed: int, X, Y):
    params = {"tree_method": "hist", "multi_strategy": "multi_output_tree", "max_depth": 2 + seed, "seed": seed,
              "nthread": 1, "base_score": 0.0}
    return xgb.train(params, xgb.DMatrix(X, label=Y), num_boost_round=3 + seed)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4)).astype(np.float32)
    return X, np.stack([X[:, 0] > 0, X[:, 1] + X[:, 2] > 0], 1).astype(np.float32)


def test_bytes_round_trip_and_stacked_prediction():
    X, Y = _data()
    boosters = [_booster(s, X, Y) for s in (0, 1)]
    raw = [booster_to_tensor(b) for b in boosters]
    assert all(r.dtype == torch.float32 for r in raw) and raw[0].shape != raw[1].shape  # (lengths differ)
    back = booster_from_tensor(raw[0], len(raw[0]))
    np.testing.assert_array_equal(back.inplace_predict(X, predict_type="margin"),
                                  boosters[0].inplace_predict(X, predict_type="margin"))
    icept = [np.array([0.5, -1.0], dtype=np.float32), np.array([0.0, 2.0], dtype=np.float32)]
    stacked = stack_member_states([{"booster": r, "length": torch.tensor(float(len(r))), "n_features": torch.tensor(4.0),
                                    "intercept": torch.from_numpy(i)} for r, i in zip(raw, icept)])
    head = build_head("tree", 4, 2, [torch.Generator()] * 2)
    head.load_state_dict(stacked)
    out = head(torch.from_numpy(X))
    for g in range(2):
        expected = boosters[g].inplace_predict(X, predict_type="margin").reshape(-1, 2) + icept[g]
        np.testing.assert_allclose(out[g].numpy(), expected, rtol=1e-6, atol=1e-6)
    per_member = head(torch.from_numpy(np.stack([X, X[::-1].copy()])))  # (G, B, D) inputs: each member its own
    np.testing.assert_allclose(per_member[1].numpy(), out[1].numpy()[::-1], rtol=1e-6, atol=1e-6)
    assert set(head.state_dict()) == {"booster", "length", "intercept", "n_features"}


def test_damaged_states_are_refused():
    X, Y = _data()
    raw = booster_to_tensor(_booster(0, X, Y))
    good = {"booster": raw[None], "length": torch.tensor([float(len(raw))]), "n_features": torch.tensor([4.0]),
            "intercept": torch.zeros(1, 2)}
    for bad in ({**good, "booster": good["booster"] * 0 + 7},       # not a model
                {**good, "booster": good["booster"] + 0.5},         # not bytes
                {**good, "intercept": torch.zeros(1, 3)}):          # the wrong label count
        with pytest.raises(RuntimeError):
            build_head("tree", 4, 2, [torch.Generator()]).load_state_dict(bad)
    with pytest.raises(RuntimeError, match="no booster"):
        build_head("tree", 4, 2, [torch.Generator()])(torch.zeros(3, 4))
