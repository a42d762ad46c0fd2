"""Tiny saved models for the twin tests: a linear head with integer weights (so logits tie
within and across labels) and a chosen label-set rule."""
from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st

from spmlkit.practitioner.saved import SavedModel


def linear(weight, bias, label_sets: dict) -> SavedModel:
    """``logit = X @ weight + bias`` (no standardisation), labels ``l0 .. l{L-1}``."""
    weight = np.asarray(weight, dtype=np.float32)
    bias = np.asarray(bias, dtype=np.float32)
    L = weight.shape[1]
    return SavedModel(label_names=[f"l{j}" for j in range(L)], head="linear", hidden=8, n_features=weight.shape[0],
                      state={"weight": torch.from_numpy(weight), "bias": torch.from_numpy(bias[None])},
                      label_sets=dict(label_sets))


#: every label-set rule a model can store, with its options (``per="batch"`` included)
RULES = st.one_of(
    st.builds(lambda t: {"rule": "threshold", "threshold": t}, st.sampled_from([0.0, 0.25, 0.5, 0.73, 1.0])),
    st.builds(lambda k: {"rule": "top_k", "k": k}, st.integers(0, 4)),
    st.builds(lambda k, per: {"rule": "expected_k", "k": k, "per": per}, st.sampled_from([0.0, 0.4, 1.0, 1.5, 2.6]),
              st.sampled_from(["example", "batch"])),
    st.builds(lambda t: {"rule": "per_label", "thresholds": t}, st.sampled_from([[0.5], [0.2, 0.8], [0.5, 0.1, 0.9]])),
).flatmap(lambda spec: st.builds(lambda m: {**spec, "min_labels": m} if m else spec, st.sampled_from([0, 0, 1])))


@st.composite
def model_and_inputs(draw, *, max_rows: int = 12, max_labels: int = 4):
    """``(model, X)``: a linear model with a drawn rule and features whose logits tie."""
    n = draw(st.integers(1, max_rows))
    rule = draw(RULES)
    L = len(rule["thresholds"]) if rule["rule"] == "per_label" else draw(st.integers(1, max_labels))
    D = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    W = rng.integers(-1, 2, size=(D, L))
    b = rng.integers(-1, 2, size=L)
    X = rng.integers(-1, 2, size=(n, D)).astype(np.float32)
    return linear(W, b, rule), X
